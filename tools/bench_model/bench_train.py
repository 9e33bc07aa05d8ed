#!/usr/bin/python3
"""Training tokens/s of fuyu-tiny: msomni (msomni-bench-train) vs PyTorch 1.13 CPU
(torch_fuyu_tiny.py) on the same architecture, initial weights, batches, optimizer and
thread count, for each size and thread count; prints a markdown table with the ratio.

usage: tools/bench_model/bench_train.py BUILD_DIR [--threads 1 2] [--steps N] [--warmup N]

The two programs run one after the other, each with OMP_NUM_THREADS and
OPENBLAS_NUM_THREADS set to the thread count and OMP_WAIT_POLICY=PASSIVE (what msomni's
agents give ranks) unless the environment sets it. The loss columns check that both trained
the same model: their per-step losses must agree (max |difference| is printed).
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# name, msomni-bench-train flags (beyond the quickstart config's own values)
SIZES = [
    ("quickstart (d64 L2 h4 ff256, img32/p8 x2 frames, S=80, mb2 x2)", []),
    ("d256 L4 h4 ff1024, img64/p8 x2 frames, S=176, mb4 x2",
     ["--d-model", "256", "--layers", "4", "--heads", "4", "--ff", "1024", "--image", "64",
      "--patch", "8", "--seq", "192", "--micro-batch", "4"]),
]


def parse(out):
    res = {}
    for line in out.splitlines():
        words = line.split()
        if words and words[0] == "losses":
            res["losses"] = [float(w) for w in words[1:]]
        if "tokens_per_s" in words:
            res["tps"] = float(words[words.index("tokens_per_s") + 1])
            res["step_ms"] = float(words[words.index("step_ms") + 1])
    return res


def run(cmd, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    # Both programs run OpenMP's idle threads passive, as msomni's agents start ranks (its
    # threads spinning between parallel loops starve the GEMM threads on few cores); a value
    # set by whoever runs the bench wins.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    sys.stderr.write(out)
    return parse(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", help="build directory holding tools/bench_model/msomni-bench-train")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--sizes", type=int, nargs="+", help="indices into the size list")
    args = ap.parse_args()
    exe = os.path.join(args.build, "tools", "bench_model", "msomni-bench-train")
    rows = []
    sizes = [SIZES[i] for i in args.sizes] if args.sizes else SIZES
    for name, flags in sizes:
        for threads in args.threads:
            with tempfile.TemporaryDirectory() as dump:
                ours = run([exe, *flags, "--threads", str(threads), "--steps", str(args.steps),
                            "--warmup", str(args.warmup), "--dump", dump], threads)
                peer = run([sys.executable, os.path.join(HERE, "torch_fuyu_tiny.py"), dump], threads)
            diff = max(abs(a - b) for a, b in zip(ours["losses"], peer["losses"]))
            rows.append((name, threads, ours, peer, diff))
    print("| model | threads | msomni tokens/s | PyTorch tokens/s | msomni / PyTorch "
          "| msomni step ms | PyTorch step ms | max loss diff |")
    print("|---|---|---|---|---|---|---|---|")
    for name, threads, ours, peer, diff in rows:
        print(f"| {name} | {threads} | {ours['tps']:.0f} | {peer['tps']:.0f} | "
              f"{ours['tps'] / peer['tps']:.2f} | {ours['step_ms']:.1f} | {peer['step_ms']:.1f} "
              f"| {diff:.1e} |")


if __name__ == "__main__":
    main()
