#!/usr/bin/env python3
"""Balanced steps against dealt steps: how evenly the ranks' work falls, and what it buys.

A mixed job (images, 4-frame videos, short and long captions; fuyu-tiny) runs under msomni-run
at 2 and 4 ranks, once with data.balance = "off" (each step's samples dealt to ranks in
order) and once with "steps" (placed by their predicted cost, the same samples per step).
From metrics.jsonl, after the first --skip steps: the mean per-step compute imbalance (the
slowest rank's forward and backward time over the ranks' mean; 1 is even) and the median
tokens/s. Both configurations run in this one invocation, on this machine, alternating.

With --pipeline inline the ranks decode in their training threads (the deterministic
reference): the data stage actors' decoding, which competes with compute for the same cores
unevenly when ranks draw different media, is then out of the measurement.

usage: bench_balance.py --build BUILD_DIR [--steps 60] [--skip 10] [--ranks 2 4] [--pipeline actors|inline] [--out FILE.json]
"""
import argparse
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile

CONFIG = """[job]
name = "bench-balance-{balance}-{ranks}"
[model]
name = "fuyu-tiny"
d_model = 64
n_layers = 2
n_heads = 4
d_ff = 256
image_size = 32
patch_size = 8
video_frames = 4
max_seq_len = 320
[data]
balance = "{balance}"
[[data.sources]]
name = "images"
uri = "{data}/images"
modality = "image"
weight = 0.35
[[data.sources]]
name = "videos"
uri = "{data}/videos"
modality = "video"
weight = 0.15
[[data.sources]]
name = "short-captions"
uri = "{data}/text"
modality = "text"
weight = 0.3
[[data.sources]]
name = "long-captions"
uri = "{data}/long"
modality = "text"
weight = 0.2
[io]
pipeline = "{pipeline}"
[training]
global_batch = 16
micro_batch = 2
steps = {steps}
lr = 1e-3
seed = 7
threads = 1
[elasticity]
replicas = {ranks}
min_replicas = {ranks}
max_replicas = {ranks}
[checkpoint]
interval_steps = 100000
"""


def long_captions(path, n, seed):
    """A text source of long captions (180-250 bytes), as .tar shards of KEY.txt members."""
    os.makedirs(path, exist_ok=True)
    rng = random.Random(seed)
    words = "a red square over a blue circle beside the green triangle under an orange star".split()
    per = 32
    for s in range(0, n, per):
        with tarfile.open(os.path.join(path, "shard-%06d.tar" % (s // per)), "w", format=tarfile.USTAR_FORMAT) as t:
            for i in range(s, min(n, s + per)):
                text = ""
                target = rng.randint(180, 250)
                while len(text) < target:
                    text += rng.choice(words) + " "
                data = text[:target].encode()
                info = tarfile.TarInfo("%06d.txt" % i)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))


def run(build, cfg_text, work, name):
    cfg = os.path.join(work, name + ".toml")
    with open(cfg, "w") as f:
        f.write(cfg_text)
    run_dir = os.path.join(work, "runs", name)
    proc = subprocess.run([os.path.join(build, "apps/msomni-run/msomni-run"), cfg, "--run-dir", run_dir, "--fresh"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800)
    if proc.returncode != 0:
        sys.exit("msomni-run failed for %s:\n%s" % (name, proc.stdout[-3000:]))
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def summarise(records, skip):
    kept = [r for r in records if r["step"] > skip]
    return {
        "steps": len(kept),
        "imbalance_mean": statistics.mean(r["compute_imbalance"] for r in kept),
        "compute_ms_max_mean": statistics.mean(r["compute_ms_max"] for r in kept),
        "tokens_per_s_median": statistics.median(r["tokens_per_s"] for r in kept),
        "step_time_ms_median": statistics.median(r["step_time_ms"] for r in kept),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--skip", type=int, default=10)
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--pipeline", choices=["actors", "inline"], default="actors")
    ap.add_argument("--out")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    with tempfile.TemporaryDirectory(prefix="msomni-bench-balance-") as work:
        data = os.path.join(work, "data")
        subprocess.run([os.path.join(build, "tools/dataset_gen/msomni-gen-dataset"), "--out", data, "--images", "96",
                        "--videos", "32", "--texts", "96", "--image-size", "32", "--video-size", "32",
                        "--video-length", "8", "--gop", "4"], check=True, stdout=subprocess.DEVNULL)
        long_captions(os.path.join(data, "long"), 96, 7)
        results = {}
        for ranks in a.ranks:
            for balance in ("off", "steps"):
                name = "%s-%d" % (balance, ranks)
                text = CONFIG.format(balance=balance, ranks=ranks, steps=a.steps, data=data, pipeline=a.pipeline)
                results[name] = summarise(run(build, text, work, name), a.skip)
                print(name, json.dumps(results[name]), flush=True)
        print("\n| ranks | imbalance off | imbalance steps | tokens/s off | tokens/s steps | tokens/s ratio |")
        print("|---|---|---|---|---|---|")
        for ranks in a.ranks:
            off, on = results["off-%d" % ranks], results["steps-%d" % ranks]
            print("| %d | %.3f | %.3f | %.0f | %.0f | %.2fx |" % (ranks, off["imbalance_mean"], on["imbalance_mean"],
                                                              off["tokens_per_s_median"], on["tokens_per_s_median"],
                                                              on["tokens_per_s_median"] / off["tokens_per_s_median"]))
        if a.out:
            with open(a.out, "w") as f:
                json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
