#!/usr/bin/env python3
"""What the memory watermark predictor costs a real msomni-run job.

The same job (config, seed, steps) with memory.predictor_enabled = true (the default: every
rank's step samples go to the predictor actor in the control process, which trains its
learned model online) and = false (the samples are still journaled, nothing forecasts),
interleaved rep by rep so both see the same machine. From metrics.jsonl (steps after the
warm-up) it reports the median step time and tokens/s, and the on/off ratios; from the
control process's /proc stat, its CPU seconds per step.

Usage:

  tools/bench_memory/bench_predictor.py --build build --config configs/quickstart.toml \\
      --steps 200 --warmup 20 --reps 3
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run_job(build, config, steps, enabled, cache):
    run_dir = tempfile.mkdtemp(prefix="msomni-bench-pred-")
    cmd = [os.path.join(build, "apps/msomni-run/msomni-run"), config, "--run-dir", run_dir,
           "--set", f"training.steps={steps}", "--set", f"memory.predictor_enabled={'true' if enabled else 'false'}"]
    env = dict(os.environ, MSOMNI_CACHE_DIR=cache)
    before = os.times()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
    after = os.times()
    if r.returncode != 0:
        sys.exit(f"msomni-run failed ({r.returncode}): {r.stderr[-2000:]}")
    lines = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl"))]
    # Children's CPU: the control process and the ranks together (os.times counts reaped children).
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    advice = sum(1 for l in open(os.path.join(run_dir, "events.jsonl")) if '"memory_advice"' in l)
    subprocess.run(["rm", "-rf", run_dir])
    return lines, cpu, advice


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--config", default="configs/quickstart.toml")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    cache = tempfile.mkdtemp(prefix="msomni-bench-pred-cache-")
    rows = {True: [], False: []}
    for rep in range(a.reps):
        for enabled in (False, True):
            lines, cpu, advice = run_job(a.build, a.config, a.steps, enabled, cache)
            kept = [l for l in lines if l["step"] > a.warmup]
            step_ms = statistics.median(l["step_time_ms"] for l in kept)
            tok = statistics.median(l["tokens_per_s"] for l in kept)
            rows[enabled].append((step_ms, tok, cpu, advice))
            print(f"rep {rep} predictor {'on ' if enabled else 'off'}: step {step_ms:.2f} ms, {tok:.0f} tokens/s, "
                  f"cpu {cpu:.2f} s, {advice} advice events", flush=True)
    subprocess.run(["rm", "-rf", cache])
    med = lambda xs, i: statistics.median(x[i] for x in xs)
    on, off = rows[True], rows[False]
    print(f"\nmedian over {a.reps} reps ({a.steps} steps, warm-up {a.warmup}):")
    print(f"  step time   off {med(off, 0):.2f} ms   on {med(on, 0):.2f} ms   on/off {med(on, 0) / med(off, 0):.3f}")
    print(f"  tokens/s    off {med(off, 1):.0f}   on {med(on, 1):.0f}   on/off {med(on, 1) / med(off, 1):.3f}")
    print(f"  CPU (all processes) off {med(off, 2):.2f} s   on {med(on, 2):.2f} s   on/off {med(on, 2) / med(off, 2):.3f}")


if __name__ == "__main__":
    main()
