#!/usr/bin/env python3
"""What Python costs: the torch fuyu-tiny (configs/torch-quickstart.toml, an nn.Module in a
Python worker per rank) against the native fuyu-tiny of the same shape
(configs/quickstart.toml), both trained by msomni-run on the same data, global batch, ranks
and steps, one after the other on this machine. Prints each run's median tokens/s over the
steps after the warm-up, its step time, and torch / native.

  /usr/bin/python3 tools/bench_torch/bench_torch_native.py --build build [--steps 200] [--ranks 2] [--d-model 256]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(build, config, steps, ranks, warmup, work, label, shape):
    run_dir = os.path.join(work, label)
    cmd = [os.path.join(build, "apps", "msomni-run", "msomni-run"), os.path.join(ROOT, "configs", config),
           "--run-dir", run_dir, "--fresh",
           "--set", f"training.steps={steps}",
           "--set", f"elasticity.replicas={ranks}",
           "--set", f"elasticity.max_replicas={ranks}",
           "--set", "elasticity.min_replicas=1",
           "--set", "checkpoint.interval_steps=100"] + shape
    started = time.monotonic()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{label}: msomni-run exited {done.returncode}:\n{done.stdout[-3000:]}")
    rates, times = [], []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("step", 0) <= warmup:
                continue
            if r.get("checkpoint_ms", 0) > 1:
                continue  # a step that stood still for a checkpoint (others record microseconds)
            rates.append(r["tokens_per_s"])
            times.append(r["step_time_ms"])
    if not rates:
        sys.exit(f"{label}: no step after the warm-up in metrics.jsonl")
    return {"label": label, "tokens_per_s": statistics.median(rates), "step_ms": statistics.median(times),
            "steps": len(rates), "wall_s": wall}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--warmup", type=int, default=20, help="steps left out at the start")
    p.add_argument("--d-model", type=int, default=0, help="both models this wide (d_ff 4x); 0: the configs' 64")
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="msomni-bench-torch-")
    try:
        native_shape, torch_shape = [], []
        if a.d_model:
            native_shape = ["--set", f"model.d_model={a.d_model}", "--set", f"model.d_ff={4 * a.d_model}"]
            torch_shape = ["--set", f"model.torch_args.d_model={a.d_model}", "--set", f"model.torch_args.d_ff={4 * a.d_model}"]
        native = run(a.build, "quickstart.toml", a.steps, a.ranks, a.warmup, work, "native", native_shape)
        torch = run(a.build, "torch-quickstart.toml", a.steps, a.ranks, a.warmup, work, "torch", torch_shape)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'model':8} {'tokens/s (median)':>18} {'step ms (median)':>17} {'steps':>6} {'wall s':>7}")
    for r in (native, torch):
        print(f"{r['label']:8} {r['tokens_per_s']:18.0f} {r['step_ms']:17.2f} {r['steps']:6d} {r['wall_s']:7.1f}")
    print(f"torch / native tokens/s: {torch['tokens_per_s'] / native['tokens_per_s']:.3f}x at {a.ranks} ranks"
          f", d_model {a.d_model or 64}")


if __name__ == "__main__":
    main()
