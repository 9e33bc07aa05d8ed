#!/usr/bin/env bash
# Records the memory-trace corpus: every config in configs/memtrace/ runs for real through
# `msomni-memtrace record` (2 CPU ranks), and each rank's step trace is copied to
# tests/data/memtrace/NAME/rank-N.jsonl, with tests/data/memtrace/corpus.json naming each
# trace's config, overrides, split (tuning or held_out), steps and ranks.
# docs/memory_predictor.md ("The corpus") describes the corpus and its split.
#
#   tools/memtrace/make_corpus.sh OUT_DIR [BUILD_DIR]
#   tools/memtrace/make_corpus.sh --table [BUILD_DIR]
#
# --table records nothing: it runs `msomni-memtrace eval --json` on each trace of the corpus
# with the margin rule below and prints the Markdown tables of BENCHMARKS.md ("Memory
# predictor accuracy on the trace corpus"): per config and predictor, the MAE of the
# next-10-step peak, the under-prediction rate and the overhead (MiB = 2^20 bytes), rank 0 /
# rank 1 where a config has two traces. The margin of a trace is MARGIN_FRACTION (0.25) x
# the spread of its peaks (largest - smallest peak_bytes of the trace): the traces are CPU
# runs whose peaks are a few MiB, where the [memory] default of 3.5 GB would hide every
# difference. 0.25 was chosen on the tuning traces only: the smallest of 0, 0.05, 0.1 and
# 0.25 at which the predictor with the lowest tuning MAE (lstm_attention) was short on at
# most 1% of the steps of every tuning trace (at 0.1 it was short on 17% of mix rank 0).
#
# OUT_DIR must be new or empty: the recordings (run directories, record.json) stay there.
# BUILD_DIR defaults to build/. The generated dataset is rendered into $MSOMNI_CACHE_DIR;
# without one, a temporary cache is used and removed at the end.
# The "elastic" config is scaled from 2 ranks to 1 while it trains (msomni scale-down once
# rank 0's trace has 100 steps), so its rank-0 trace has a "resize" step.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
if [[ "${1:-}" == --table && $# -le 2 ]]; then
  memtrace="$(cd "${2:-$root/build}" && pwd)/tools/memtrace/msomni-memtrace"
  [[ -x "$memtrace" ]] || { echo "$0: $memtrace is not built" >&2; exit 2; }
  exec python3 - "$memtrace" "$root/tests/data/memtrace" "${MARGIN_FRACTION:-0.25}" <<'PY'
import json, subprocess, sys
memtrace, data, fraction = sys.argv[1], sys.argv[2], float(sys.argv[3])
corpus = json.load(open(f"{data}/corpus.json"))
mib, gib = 2.0**20, 2.0**30
rows, summary, wins, evaluated = [], {}, {}, []
for entry in corpus["traces"]:
    per_rank = []
    for rel in entry["traces"]:
        path = f"{data}/{rel}"
        peaks = [json.loads(line)["peak_bytes"] for line in open(path)]
        margin = fraction * (max(peaks) - min(peaks))
        out = subprocess.run([memtrace, "eval", "--json", "--pairs", "--horizon", "10", "--margin-gb",
                              repr(margin / gib), "--trace", path], check=True, capture_output=True, text=True).stdout
        per_rank.append((min(peaks), max(peaks), json.loads(out)["traces"][0]))
        evaluated.append((entry["split"], per_rank[-1][2], margin))
        best = min(per_rank[-1][2]["predictors"], key=lambda p: p["mae_bytes"])
        wins.setdefault(entry["split"], []).append(f"{rel} {best['name']}")
    ranges = " / ".join(f"{lo / mib:.2f}-{hi / mib:.2f}" for lo, hi, _ in per_rank)
    for i, p0 in enumerate(per_rank[0][2]["predictors"]):
        ps = [r[2]["predictors"][i] for r in per_rank]
        cell = lambda k, scale, fmt: " / ".join(format(p[k] / scale, fmt) for p in ps)
        rows.append(f"| {entry['name']} | {entry['split']} | {ranges if i == 0 else ''} | {p0['name']} | "
                    f"{cell('mae_bytes', mib, '.3f')} | {cell('under_rate', 1, '.3f')} | {cell('overhead_bytes', mib, '.3f')} |")
        s = summary.setdefault((entry["split"], p0["name"]), [0.0, 0.0, 0.0, 0])
        for p in ps:
            s[0] += p["mae_bytes"] / mib; s[1] += p["under_rate"]; s[2] += p["overhead_bytes"] / mib; s[3] += 1
print(f"margin per trace: {fraction} x (largest - smallest peak of the trace); horizon 10, window 200\n")
print("| config | split | peaks MiB (rank 0 / 1) | predictor | MAE MiB | under-prediction rate | overhead MiB |")
print("|---|---|---|---|---|---|---|")
print("\n".join(rows))
print("\nMean over the traces of each split:\n")
print("| split | predictor | traces | MAE MiB | under-prediction rate | overhead MiB |")
print("|---|---|---|---|---|---|")
for (split, name), (mae, under, over, n) in sorted(summary.items(), key=lambda kv: kv[0][0] != "held_out"):
    print(f"| {split} | {name} | {n} | {mae / n:.3f} | {under / n:.3f} | {over / n:.3f} |")
# The default predictor against each other one at an equal reservation: its margin moved
# until its overhead is at most the other's (under_rate_at_overhead_of), trace by trace.
learned = "lstm_attention"
print(f"\n`{learned}` against each other predictor at the other's overhead (its margin moved until it "
      "reserves no more than the other), mean over the traces of each split:\n")
print(f"| split | predictor | traces | its under-prediction rate | `{learned}`'s at that overhead | "
      f"traces where `{learned}` is short no more often | traces where `{learned}` has the lower MAE |")
print("|---|---|---|---|---|---|---|")
duel = {}
for split, trace, _ in evaluated:
    preds = {p["name"]: p for p in trace["predictors"]}
    mine = preds[learned]
    for name, other in preds.items():
        if name == learned:
            continue
        d = duel.setdefault((split, name), [0.0, 0.0, 0, 0, 0])
        at = mine["under_rate_at_overhead_of"][name]
        d[0] += other["under_rate"]; d[1] += at; d[2] += at <= other["under_rate"]
        d[3] += mine["mae_bytes"] < other["mae_bytes"]; d[4] += 1
for (split, name), (theirs, mine, short_wins, mae_wins, n) in sorted(duel.items(), key=lambda kv: kv[0][0] != "held_out"):
    print(f"| {split} | {name} | {n} | {theirs / n:.3f} | {mine / n:.3f} | {short_wins} of {n} | {mae_wins} of {n} |")
# The same at a reservation equal over the split: one margin rule for every trace (the
# learned predictor's margins all scaled by one factor k, found by bisection) until its mean
# overhead over the split is at most the other's; its mean under-prediction rate then.
def scaled(split, k):
    under = over = 0.0
    n = 0
    for sp, trace, margin in evaluated:
        if sp != split:
            continue
        fa = next(p for p in trace["predictors"] if p["name"] == learned)["forecast_actual_bytes"]
        m = k * margin
        under += sum(1 for f, a in fa if a > f + m) / len(fa)
        over += sum(max(0.0, f + m - a) for f, a in fa) / len(fa) / mib
        n += 1
    return under / n, over / n
print(f"\n`{learned}` against each other predictor at an equal reservation over the split (one margin rule "
      f"for every trace: its margins scaled by one factor k until its mean overhead is at most the other's):\n")
print(f"| split | predictor | its under-prediction rate | its overhead MiB | k | `{learned}`'s under-prediction rate | "
      f"`{learned}`'s overhead MiB |")
print("|---|---|---|---|---|---|---|")
for (split, name), (mae, under, over, n) in sorted(summary.items(), key=lambda kv: kv[0][0] != "held_out"):
    if name == learned:
        continue
    target = over / n
    lo, hi = -64.0, 64.0  # the overhead grows with k; at -64 margins it is (nearly) nothing
    for _ in range(60):
        mid = (lo + hi) / 2
        (lo, hi) = (mid, hi) if scaled(split, mid)[1] <= target else (lo, mid)
    u, o = scaled(split, lo)
    print(f"| {split} | {name} | {under / n:.3f} | {target:.3f} | {lo:.3f} | {u:.3f} | {o:.3f} |")
print("\nLowest MAE of each trace:\n")
for split in ("held_out", "tuning"):
    print(f"- {split}: " + ", ".join(wins.get(split, [])))
PY
fi
if [[ $# -lt 1 || $# -gt 2 || "$1" == -* ]]; then
  echo "usage: $0 OUT_DIR [BUILD_DIR] | $0 --table [BUILD_DIR]" >&2
  exit 2
fi
out="$1"
build="$(cd "${2:-$root/build}" && pwd)"
memtrace="$build/tools/memtrace/msomni-memtrace"
cli="$build/apps/msomni/msomni"
for b in "$memtrace" "$cli"; do
  [[ -x "$b" ]] || { echo "$0: $b is not built" >&2; exit 2; }
done
if [[ -e "$out" && ( ! -d "$out" || -n "$(ls -A "$out")" ) ]]; then
  echo "$0: $out exists and is not an empty directory" >&2
  exit 2
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"

own_cache=""
if [[ -z "${MSOMNI_CACHE_DIR:-}" ]]; then
  own_cache="$(mktemp -d "${TMPDIR:-/tmp}/msomni-corpus-cache.XXXXXX")"
  export MSOMNI_CACHE_DIR="$own_cache"
fi
record_pid=""
cleanup() {
  if [[ -n "$record_pid" ]]; then kill -INT "$record_pid" 2>/dev/null || true; wait "$record_pid" 2>/dev/null || true; fi
  if [[ -n "$own_cache" ]]; then rm -rf "$own_cache"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# NAME SPLIT [--set KEY=VALUE]...: the split is fixed here, before any result is looked at:
# 2 configs of 7 tune (the margin rule), 5 are held out.
corpus=(
  "mix tuning"
  "long-seq tuning"
  "image-heavy held_out"
  "video-heavy held_out"
  "text-heavy held_out"
  "wide-mb4 held_out"
  "elastic held_out"
)

data="$root/tests/data/memtrace"
mkdir -p "$data"
entries="$out/entries.jsonl"
: >"$entries"
for entry in "${corpus[@]}"; do
  read -r name split overrides <<<"$entry"
  config="configs/memtrace/$name.toml"
  sets=()
  for o in ${overrides:-}; do sets+=(--set "$o"); done
  dir="$out/$name"
  start=$SECONDS
  if [[ "$name" == elastic ]]; then
    "$memtrace" record "$root/$config" --out "$dir" "${sets[@]}" >"$out/$name.log" 2>&1 &
    record_pid=$!
    trace0="$dir/run/memory/rank-0.jsonl"
    until [[ -f "$trace0" && $(wc -l <"$trace0") -ge 100 ]]; do
      kill -0 "$record_pid" 2>/dev/null || { echo "$0: $name ended before it could be scaled down" >&2; exit 1; }
      sleep 0.2
    done
    "$cli" scale-down --run-dir "$dir/run" --replicas 1 >>"$out/$name.log" 2>&1
    rc=0
    wait "$record_pid" || rc=$?
    record_pid=""
    [[ $rc -eq 0 ]] || { echo "$0: recording $name failed (see $out/$name.log)" >&2; exit 1; }
  else
    "$memtrace" record "$root/$config" --out "$dir" "${sets[@]}" >"$out/$name.log" 2>&1 ||
      { echo "$0: recording $name failed (see $out/$name.log)" >&2; exit 1; }
  fi
  rm -rf "${data:?}/$name"
  mkdir -p "$data/$name"
  cp "$dir"/traces/rank-*.jsonl "$data/$name/"
  ranks=0
  steps=()
  for t in "$data/$name"/rank-*.jsonl; do
    ranks=$((ranks + 1))
    steps+=("$(wc -l <"$t")")
  done
  echo "$name: $split, $ranks trace(s), steps ${steps[*]}, $((SECONDS - start)) s"
  python3 - "$entries" "$name" "$config" "$split" "$ranks" "${steps[*]}" ${overrides:-} <<'EOF'
import json, sys
path, name, config, split, ranks, steps, *overrides = sys.argv[1:]
with open(path, "a") as f:
    f.write(json.dumps({"name": name, "config": config, "overrides": overrides, "split": split,
                        "steps": [int(s) for s in steps.split()], "ranks": int(ranks),
                        "traces": [f"{name}/rank-{i}.jsonl" for i in range(int(ranks))]}) + "\n")
EOF
done

python3 - "$entries" "$data/corpus.json" <<'EOF'
import json, os, sys
entries = [json.loads(l) for l in open(sys.argv[1])]
doc = {"about": "memory-trace corpus recorded by tools/memtrace/make_corpus.sh; traces are NAME/rank-N.jsonl "
                "(docs/memory_traces.md); split: tuning traces choose the evaluation's settings, held_out "
                "traces only report; steps: the lines of each rank's trace",
       "traces": entries}
tmp = sys.argv[2] + ".tmp"
with open(tmp, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
os.replace(tmp, sys.argv[2])
EOF
echo "corpus: $data ($(du -sk "$data" | cut -f1) KiB)"
