#!/usr/bin/env python3
"""Training tokens/s of a real msomni-run job at 1 CPU thread per rank against N threads.

Runs the same job (same config, seed, steps and replicas) once per thread count in a fresh
run directory, reads metrics.jsonl, and reports the median tokens/s and step time over the
steps after the warm-up, with the ratio to the 1-thread run. Usage:

  tools/bench_train_job/bench_threads.py --build build --config configs/quickstart.toml \
      --threads 1,2 --steps 60 --warmup 10 [--set KEY=VALUE ...] [--reps 2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run_once(build, config, threads, steps, sets):
    run_dir = tempfile.mkdtemp(prefix="msomni-bench-threads-")
    os.rmdir(run_dir)  # msomni-run creates (and claims) it
    cmd = [os.path.join(build, "apps/msomni-run/msomni-run"), config, "--run-dir", run_dir,
           "--set", f"training.threads={threads}", "--set", f"training.steps={steps}"]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        records = [json.loads(line) for line in f]
    subprocess.run(["rm", "-rf", run_dir], check=True)
    return records


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--config", default="configs/quickstart.toml")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--set", action="append", default=[], help="extra --set for msomni-run")
    a = ap.parse_args()
    counts = [int(t) for t in a.threads.split(",")]
    rows = []
    for t in counts:
        tps, ms = [], []
        for _ in range(a.reps):
            recs = [r for r in run_once(a.build, a.config, t, a.steps, a.set) if r["step"] > a.warmup]
            tps += [r["tokens_per_s"] for r in recs]
            ms += [r["step_time_ms"] for r in recs]
        rows.append((t, statistics.median(tps), statistics.median(ms)))
    base = rows[0][1]
    print(f"{'threads/rank':>12} {'tokens/s (median)':>18} {'step ms (median)':>17} {'vs first':>9}")
    for t, tp, ms in rows:
        print(f"{t:>12} {tp:>18.0f} {ms:>17.2f} {tp / base:>8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
