#!/usr/bin/env bash
# gpu_check.sh: what a GPU machine runs to check the CUDA path end to end, in one go and in
# under 8 minutes on a machine with one GPU and 16 cores:
#   1. configure and build (Release, only the targets below) into build-gpu-check/
#   2. the CUDA parity tests (kernels, fuyu-tiny, NCCL): every one must pass, none skip
#   3. the quickstart job on CUDA and on the CPU: loss curves within LOSS_TOL_REL
#   4. a bit-exact stop/resume on CUDA: STEPS straight == STEPS/2, then a resume to STEPS,
#      loss for loss, and the same final parameter checksum
#   5. training tokens/s, CUDA against the CPU
# and prints one summary block. Exit 0 only when every check passed; 1 when one failed or
# no GPU is usable (it says which, and never reports a check it did not run as passed).
#
#   tools/gpu_check.sh [--steps N] [--build-dir DIR] [--keep]
# LOSS_TOL_REL (default 0.02): the largest allowed |loss_cuda - loss_cpu| / |loss_cpu| at any
# step. The two backends sum in different orders (cuBLAS vs OpenBLAS, NCCL vs the UCX ring),
# so the curves drift apart by float rounding; 2% over the quickstart's first 200 steps is
# the bound asked of them here, not a measured one (record what a machine measures in
# BENCHMARKS.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
steps=200
build="$here/build-gpu-check"
keep=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --build-dir) build="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument $1" >&2; exit 2 ;;
  esac
done
if ! [[ "$steps" =~ ^[0-9]+$ ]] || (( steps < 20 || steps % 2 != 0 )); then
  echo "gpu_check: --steps must be an even number >= 20 (got $steps)" >&2
  exit 2
fi
tol="${LOSS_TOL_REL:-0.02}"
half=$((steps / 2))
work="$(mktemp -d "${TMPDIR:-/tmp}/msomni-gpu-check.XXXXXX")"
[[ $keep == 1 ]] || trap 'rm -rf "$work"' EXIT
declare -a summary=()
failed=0
record() {  # record NAME ok|FAIL|not-run DETAIL
  summary+=("$(printf '  %-24s %-8s %s' "$1" "$2" "$3")")
  [[ "$2" == ok ]] || failed=1
}
print_summary() {
  echo
  echo "== msomni GPU check ($(hostname), $(date -u +%FT%TZ)) =="
  printf '%s\n' "${summary[@]}"
  if [[ $failed == 0 ]]; then echo "== result: PASS"; else echo "== result: FAIL"; fi
  [[ $keep == 1 ]] && echo "   work directory: $work"
  return 0
}
die_no_gpu() {
  record "usable GPU" FAIL "$1"
  for c in "CUDA parity tests" "quickstart cuda vs cpu" "bit-exact resume (cuda)" "tokens/s cuda vs cpu"; do
    record "$c" not-run "needs a GPU"
  done
  print_summary
  echo "gpu_check: no usable GPU: $1; nothing was checked" >&2
  exit 1
}

# 0. A GPU at all, before spending minutes on a build.
command -v nvidia-smi >/dev/null 2>&1 || die_no_gpu "nvidia-smi not found (no NVIDIA driver on this machine)"
gpu_list="$(nvidia-smi -L 2>&1)" || die_no_gpu "nvidia-smi -L failed: $(echo "$gpu_list" | head -1)"
ngpu="$(grep -c '^GPU ' <<<"$gpu_list" || true)"
(( ngpu > 0 )) || die_no_gpu "nvidia-smi lists no GPU"
command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]] || die_no_gpu "no nvcc: cannot build the CUDA kernels"
command -v python3 >/dev/null 2>&1 || { echo "gpu_check: needs python3 to read metrics.jsonl" >&2; exit 1; }

# 1. Build only what the checks run.
t0=$SECONDS
jobs="$(nproc)"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if ! cmake -S "$here" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DENABLE_CUDA=ON >"$work/configure.log" 2>&1 ||
   ! cmake --build "$build" -j "$jobs" --target msomni-run msomni-rank msomni-gen-dataset \
       kernel_cuda_parity_tests model_cuda_parity_tests transport_unit_tests >"$work/build.log" 2>&1; then
  tail -30 "$work/configure.log" "$work/build.log" 2>/dev/null >&2 || true
  record "build (Release)" FAIL "see the log above"
  print_summary
  exit 1
fi
record "build (Release)" ok "$((SECONDS - t0)) s, $build"
run="$build/apps/msomni-run/msomni-run"

# The build itself must see the GPU (a CUDA build with a driver it cannot use would not).
env_line="$("$run" "$here/configs/quickstart.toml" --dry-run | grep 'environment:' || true)"
grep -q 'GPUs: none' <<<"$env_line" && die_no_gpu "msomni-run sees none: ${env_line#*GPUs: }"

# 2. Parity tests: with a GPU present a skip is a failure. The two-rank NCCL case needs two
# GPUs (NCCL refuses two ranks on one), so on a one-GPU machine it is left out, and said.
parity='cuda_parity|NCCL'
exclude=()
if (( ngpu < 2 )); then
  exclude=(-E 'NCCL two-rank')
  echo "gpu_check: one GPU: the two-rank NCCL case is not run" >&2
fi
ctest_out="$(cd "$build" && ctest -R "$parity" "${exclude[@]}" --output-on-failure 2>&1)" || true
echo "$ctest_out" >"$work/parity.log"
total="$(grep -oE 'out of [0-9]+' <<<"$ctest_out" | grep -oE '[0-9]+' | tail -1 || echo 0)"
bad="$(grep -cE '\*\*\*(Failed|Skipped|Timeout|Exception)|Not Run' <<<"$ctest_out" || true)"
if [[ "${total:-0}" -gt 0 && "$bad" == 0 ]] && grep -q '100% tests passed' <<<"$ctest_out"; then
  record "CUDA parity tests" ok "$total passed, none skipped"
else
  grep -E 'Failed|Skipped|Timeout|tests passed' <<<"$ctest_out" | head -20 >&2 || true
  record "CUDA parity tests" FAIL "$bad of ${total:-0} failed or skipped (log: $work/parity.log)"
fi

# 3.-5. Real jobs. One replica per GPU, at most two; the CPU run uses the same replica count
# so the global batch and the sample order are the same.
replicas=$(( ngpu >= 2 ? 2 : 1 ))
job() {  # job NAME DEVICE STEPS [--fresh]: one msomni-run, its exit status returned
  local name="$1" device="$2" n="$3"; shift 3
  "$run" "$here/configs/quickstart.toml" --run-dir "$work/$name" "$@" \
    --set "training.device=\"$device\"" --set "training.steps=$n" \
    --set "elasticity.replicas=$replicas" --set "elasticity.min_replicas=1" \
    --set "elasticity.max_replicas=$replicas" --set "checkpoint.interval_steps=$half" \
    >>"$work/$name.out" 2>&1
}
losses() {  # losses RUN_DIR: "step loss" per step, the newest attempt's record winning
  python3 - "$1/metrics.jsonl" <<'EOF'
import json, sys
by_step = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "step" in r and "loss" in r:
        by_step[r["step"]] = (r.get("attempt", 0), r["loss"], r.get("tokens_per_s", 0.0))
for s in sorted(by_step):
    print(s, repr(by_step[s][1]), by_step[s][2])
EOF
}
checksum() { grep -ho 'RESULT ok .*checksum=[0-9a-f]*' "$1"/logs/rank-0*.log 2>/dev/null | tail -1 | sed 's/.*checksum=//'; }

cuda_ok=1 cpu_ok=1
job cuda cuda "$steps" --fresh || cuda_ok=0
grep -q 'COMPUTE cuda, GPU' "$work/cuda/logs/rank-0.log" 2>/dev/null || cuda_ok=0
grep -q 'GRADIENTS gradients all-reduced with NCCL' "$work/cuda/logs/rank-0.log" 2>/dev/null || cuda_ok=0
job cpu cpu "$steps" --fresh || cpu_ok=0
if [[ $cuda_ok == 1 && $cpu_ok == 1 ]]; then
  losses "$work/cuda" >"$work/cuda.losses"
  losses "$work/cpu" >"$work/cpu.losses"
  if verdict="$(python3 - "$work/cuda.losses" "$work/cpu.losses" "$tol" "$steps" <<'EOF'
import sys
def read(p):
    return {int(a): (float(b), float(c)) for a, b, c in (l.split() for l in open(p))}
g, c, tol, n = read(sys.argv[1]), read(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
if len(g) != n or len(c) != n:
    print(f"curves have {len(g)} and {len(c)} steps, expected {n}"); sys.exit(1)
worst = max((abs(g[s][0] - c[s][0]) / max(abs(c[s][0]), 1e-12), s) for s in c)
msg = f"max rel diff {worst[0]:.2e} at step {worst[1]} (tol {tol}); final loss cuda {g[n][0]:.5f} cpu {c[n][0]:.5f}"
print(msg); sys.exit(0 if worst[0] <= tol else 1)
EOF
)"; then record "quickstart cuda vs cpu" ok "$verdict"; else record "quickstart cuda vs cpu" FAIL "$verdict"; fi
  # Tokens/s: the median after a 10-step warm-up, both runs the same job.
  speed="$(python3 - "$work/cuda.losses" "$work/cpu.losses" <<'EOF'
import statistics, sys
def tps(p):
    rows = [l.split() for l in open(p)]
    return statistics.median(float(r[2]) for r in rows[10:])
g, c = tps(sys.argv[1]), tps(sys.argv[2])
print(f"cuda {g:.0f} tokens/s, cpu {c:.0f} tokens/s: {g / c:.2f}x" if c > 0 else f"cuda {g:.0f}, cpu 0")
EOF
)"
  record "tokens/s cuda vs cpu" ok "$speed (median after 10 steps, $replicas replica(s))"
else
  record "quickstart cuda vs cpu" FAIL "cuda run ok=$cuda_ok, cpu run ok=$cpu_ok (logs: $work/cuda.out, $work/cpu.out, */logs/)"
  record "tokens/s cuda vs cpu" not-run "the runs failed"
fi

# 4. Stop at STEPS/2 (the job ends there with its final checkpoint), resume to STEPS.
resume_ok=1
job resumed cuda "$half" --fresh || resume_ok=0
job resumed cuda "$steps" || resume_ok=0
grep -q "JOINED epoch .* at step $half from checkpoint step $half" "$work"/resumed/logs/rank-0*.log 2>/dev/null || resume_ok=0
if [[ $resume_ok == 1 && $cuda_ok == 1 ]]; then
  losses "$work/resumed" | cut -d' ' -f1,2 >"$work/resumed.steps"
  cut -d' ' -f1,2 "$work/cuda.losses" >"$work/straight.steps"
  a="$(checksum "$work/cuda")" b="$(checksum "$work/resumed")"
  if cmp -s "$work/straight.steps" "$work/resumed.steps" && [[ -n "$a" && "$a" == "$b" ]]; then
    record "bit-exact resume (cuda)" ok "$steps steps straight == $half + resume to $steps, loss for loss; checksum $a"
  else
    first="$(diff "$work/straight.steps" "$work/resumed.steps" | grep -m1 '^[<>]' || true)"
    record "bit-exact resume (cuda)" FAIL "Nondeterminism! first difference: ${first:-none}; checksums $a vs $b"
  fi
else
  record "bit-exact resume (cuda)" FAIL "the runs failed or did not resume from step $half (log: $work/resumed.out)"
fi

record "elapsed" "$([[ $SECONDS -lt 480 ]] && echo ok || echo FAIL)" "$SECONDS s (budget 480 s)"
print_summary
exit "$failed"
