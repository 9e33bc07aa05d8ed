#!/usr/bin/env python3
"""How many videos a decode-bound job downgrades, and what its rank waits for data.

Runs tools/bench_train_job/video-heavy.toml (8 of 10 samples are 48-frame H.264 videos, one
keyframe each) on the data stage actors at one decode worker, with video downgrade on and
off, `--reps` times each, and reports from metrics.jsonl and RUN_DIR/memory (steps after the
warm-up): the data-wait share (data wait / step time, summed), the videos downgraded over the
videos trained on, and the median step. Extra `--set KEY=VALUE` arguments go to every run
(e.g. the model's width, which sets how far decoding falls behind the step). Usage:

  tools/bench_train_job/bench_downgrade.py --build build [--steps 200] [--reps 2] \\
      [--set model.d_model=48 --set model.d_ff=96 --set model.n_layers=1]
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(build, run_dir, cache, steps, sets):
    cmd = [os.path.join(build, "apps/msomni-run/msomni-run"), os.path.join(HERE, "video-heavy.toml"),
           "--set", "io.decode_workers=1", "--set", "io.pipeline=actors", "--set", f"training.steps={steps}",
           "--run-dir", run_dir]
    for s in sets:
        cmd += ["--set", s]
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, MSOMNI_CACHE_DIR=cache))
    if r.returncode != 0:
        sys.exit(f"msomni-run failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")


def summarise(run_dir, warmup):
    recs = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))][warmup:]
    wait = sum(x["data_wait_ms"] for x in recs)
    step = sum(x["step_time_ms"] for x in recs)
    downgraded = sum(x["downgraded_samples"] for x in recs)
    videos = 0
    for path in glob.glob(os.path.join(run_dir, "memory", "rank-*.jsonl")):
        for line in open(path):
            j = json.loads(line)
            if j["step"] > warmup and "batch" in j:
                videos += j["batch"]["samples"]["video"]
    return {"wait_share": wait / step, "downgraded": downgraded, "videos": videos,
            "step_ms": statistics.median(x["step_time_ms"] for x in recs)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--set", dest="sets", action="append", default=[])
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="msomni-bench-downgrade-")
    try:
        cache = os.path.join(work, "cache")
        print("| downgrade | rep | data-wait share | videos downgraded | share | median step ms |")
        print("|---|---|---|---|---|---|")
        for rep in range(a.reps):
            for label, extra in (("on", []), ("off", ["io.downgrade_video=false"])):
                run_dir = os.path.join(work, f"{label}{rep}")
                run(a.build, run_dir, cache, a.steps, a.sets + extra)
                s = summarise(run_dir, a.warmup)
                print(f"| {label} | {rep + 1} | {s['wait_share']:.3f} | {s['downgraded']}/{s['videos']} | "
                      f"{s['downgraded'] / max(1, s['videos']):.2f} | {s['step_ms']:.1f} |", flush=True)
                shutil.rmtree(run_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
