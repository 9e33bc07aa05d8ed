#!/usr/bin/env bash
# Remote sources against local shards: the same generated image shards read (1) from disk,
# (2) over HTTP from another network namespace with a 20 ms round trip and 1 Gbit/s, and
# (3) the same with faults (every 10th request: 503, reset, cut body, 500, 429 in turn).
# Prints msomni-bench-remote's JSON line for each and the remote/local ratios.
#
# Needs root (ip netns). The namespaces, the veth pair, the servers and the temporary
# directory are removed on exit. Shaping is applied only inside the two namespaces this
# script creates: tc netem delay 10 ms on each end when the kernel has netem, else the
# server waits 20 ms before every answer (fault_proxy.py --delay-ms); the rate is tc tbf
# 1 Gbit/s on each end.
#
#   tools/bench_remote/bench_remote.sh [--images N] [--image-size PX] [--per-shard N]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${MSOMNI_BUILD_DIR:-$root/build}"
bench="$build/tools/bench_remote/msomni-bench-remote"
gen="$build/tools/dataset_gen/msomni-gen-dataset"
images=2000 image_size=128 per_shard=200 samples=400 batches=500
while [ $# -gt 0 ]; do
  case "$1" in
    --images) images="$2"; shift 2 ;;
    --image-size) image_size="$2"; shift 2 ;;
    --per-shard) per_shard="$2"; shift 2 ;;
    --samples) samples="$2"; shift 2 ;;
    --batches) batches="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "bench_remote: needs root for ip netns" >&2; exit 2; }
for b in "$bench" "$gen"; do [ -x "$b" ] || { echo "bench_remote: build $b first" >&2; exit 2; }; done

tag="$$"
ns_c="msomni-bc-$tag" ns_s="msomni-bs-$tag" veth_c="mbc$tag" veth_s="mbs$tag"
work="$(mktemp -d /tmp/msomni-bench-remote-XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  ip netns del "$ns_c" 2>/dev/null || true
  ip netns del "$ns_s" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$gen" --out "$work/data" --images "$images" --videos 0 --texts 0 --per-shard "$per_shard" \
  --image-size "$image_size" --seed 3 >/dev/null
(cd "$work/data/images" && ls *.tar > shards.txt)

ip netns add "$ns_c"
ip netns add "$ns_s"
ip link add "$veth_c" type veth peer name "$veth_s"
ip link set "$veth_c" netns "$ns_c"
ip link set "$veth_s" netns "$ns_s"
ip -n "$ns_c" addr add 10.251.0.1/30 dev "$veth_c"
ip -n "$ns_s" addr add 10.251.0.2/30 dev "$veth_s"
for ns in "$ns_c" "$ns_s"; do ip -n "$ns" link set lo up; done
ip -n "$ns_c" link set "$veth_c" up
ip -n "$ns_s" link set "$veth_s" up

delay_ms=0
shaping=""
if ip netns exec "$ns_c" tc qdisc add dev "$veth_c" root netem delay 10ms rate 1gbit 2>/dev/null &&
   ip netns exec "$ns_s" tc qdisc add dev "$veth_s" root netem delay 10ms rate 1gbit 2>/dev/null; then
  shaping="netem delay 10 ms each way, rate 1 Gbit/s"
else
  ip netns exec "$ns_c" tc qdisc del dev "$veth_c" root 2>/dev/null || true
  ip netns exec "$ns_c" tc qdisc add dev "$veth_c" root tbf rate 1gbit burst 256kb latency 50ms
  ip netns exec "$ns_s" tc qdisc add dev "$veth_s" root tbf rate 1gbit burst 256kb latency 50ms
  delay_ms=20
  shaping="netem unavailable in this kernel: server waits 20 ms before every answer; tbf 1 Gbit/s each way"
fi
echo "bench_remote: $images images of ${image_size}px, $per_shard per shard; $shaping"

proxy="$root/tools/fault_proxy/fault_proxy.py"
ip netns exec "$ns_s" python3 "$proxy" --host 10.251.0.2 --port 8080 --serve "$work/data" --delay-ms "$delay_ms" &
pids+=($!)
ip netns exec "$ns_s" python3 "$proxy" --host 10.251.0.2 --port 8081 --serve "$work/data" --delay-ms "$delay_ms" \
  --every 10 --faults 503,reset,short,500,429 --stats "$work/faults.json" &
pids+=($!)
for port in 8080 8081; do
  for _ in $(seq 100); do
    ip netns exec "$ns_c" python3 -c "import socket; socket.create_connection(('10.251.0.2', $port), 1)" 2>/dev/null && break
    sleep 0.1
  done
done

common=(--samples "$samples" --batches "$batches" --backoff-max-ms 200)
local_line="$("$bench" --label local --uri "$work/data/images" "${common[@]}")"
echo "$local_line"
remote_line="$(ip netns exec "$ns_c" "$bench" --label remote --uri http://10.251.0.2:8080/images/ "${common[@]}")"
echo "$remote_line"
cached_line="$(ip netns exec "$ns_c" "$bench" --label remote_cache_warm --uri http://10.251.0.2:8080/images/ \
  --cache-dir "$work/cache" --cache-bytes 4000000000 "${common[@]}" >/dev/null;
  ip netns exec "$ns_c" "$bench" --label remote_cache_warm --uri http://10.251.0.2:8080/images/ \
  --cache-dir "$work/cache" --cache-bytes 4000000000 "${common[@]}")"
echo "$cached_line"
faulty_line="$(ip netns exec "$ns_c" "$bench" --label remote_faults --uri http://10.251.0.2:8081/images/ "${common[@]}")"
echo "$faulty_line"
echo "faults injected: $(cat "$work/faults.json")"

python3 - "$local_line" "$remote_line" "$cached_line" "$faulty_line" <<'EOF'
import json, sys
rows = [json.loads(a) for a in sys.argv[1:]]
base = rows[0]
for r in rows[1:]:
    print(f"{r['label']}: reader {r['fetch_samples_per_s'] / base['fetch_samples_per_s']:.3f}x local "
          f"({r['fetch_samples_per_s']:.0f} vs {base['fetch_samples_per_s']:.0f} samples/s), "
          f"pipeline {r['pipeline_samples_per_s'] / base['pipeline_samples_per_s']:.3f}x local "
          f"({r['pipeline_samples_per_s']:.0f} vs {base['pipeline_samples_per_s']:.0f} samples/s), "
          f"after its first batch {r['pipeline_steady_samples_per_s'] / base['pipeline_steady_samples_per_s']:.3f}x "
          f"({r['pipeline_steady_samples_per_s']:.0f} vs {base['pipeline_steady_samples_per_s']:.0f}; first batch "
          f"{r['pipeline_first_batch_s'] * 1000:.0f} vs {base['pipeline_first_batch_s'] * 1000:.0f} ms), "
          f"index {r['index_s']:.2f} s vs {base['index_s']:.2f} s, "
          f"bytes/payload {r['fetch_bytes'] / max(1, r['payload_bytes']):.3f}, bad {r['bad']}; "
          f"read ahead {r['ahead_samples_per_s'] / base['ahead_samples_per_s']:.3f}x local "
          f"({r['ahead_samples_per_s']:.0f} samples/s): {r['ahead_requests']} requests, {r['ahead_runs']} runs "
          f"({r['ahead_run_reads'] / max(1, r['ahead_runs']):.1f} samples per run), "
          f"bytes/shard bytes {r['ahead_bytes'] / max(1, r['shard_bytes']):.3f}, "
          f"bytes/payload {r['ahead_bytes'] / max(1, r['ahead_payload_bytes']):.3f}; "
          f"pipeline {r['pipeline_requests']} requests, "
          f"{r['pipeline_run_reads'] / max(1, r['pipeline_runs']):.1f} samples per run")
EOF
