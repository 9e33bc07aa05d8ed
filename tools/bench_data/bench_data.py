#!/usr/bin/env python3
# Driver of the data-pipeline benchmark (issue 5): generates one shard set, then, side by side
# at 1 and 2 workers, measures (a) the raw FFmpeg decode limit (msomni-bench-data --mode limit),
# the msomni pipeline (actor pipeline, and the in-thread reference at 1), and (b) a PyTorch
# DataLoader reading the same tar members with PIL decoding, and prints a markdown table.
# torchvision and PyAV are not installed here, so the PyTorch side cannot decode MP4: both
# sides run on the images + text sources only (videos are generated but not read). Every column
# of a row runs pinned to the same N cpus (--pin 1, taskset / sched_setaffinity).
import argparse
import io
import os
import statistics
import subprocess
import sys
import tarfile
import time

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset, RandomSampler

TOKEN_BOS, TOKEN_EOS, TOKEN_PAD = 256, 257, 258


def index_source(directory):
    """(tar path, media member or None, caption member) per complete sample, like msomni's reader."""
    out = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".tar"):
            continue
        path = os.path.join(directory, name)
        by_key = {}
        with tarfile.open(path) as tf:
            for m in tf.getmembers():
                key, _, ext = m.name.rpartition(".")
                by_key.setdefault(key, {})[ext] = (m.offset_data, m.size)
        for key in sorted(by_key):
            parts = by_key[key]
            media = parts.get("jpg") or parts.get("jpeg") or parts.get("png")
            if "txt" in parts:
                out.append((path, media, parts["txt"]))
    return out


class shard_dataset(Dataset):
    """One sample per item: PIL decode + bilinear resize, [-1, 1] patches, byte tokens."""

    def __init__(self, items, image_size, patch_size, max_seq_len):
        self.items = items
        self.size, self.patch = image_size, patch_size
        self.patches = (image_size // patch_size) ** 2
        self.max_tokens = max_seq_len - self.patches
        self.files = {}

    def __len__(self):
        return len(self.items)

    def _read(self, path, span):
        f = self.files.get(path)
        if f is None:
            f = self.files[path] = open(path, "rb")
        f.seek(span[0])
        return f.read(span[1])

    def __getitem__(self, i):
        path, media, caption = self.items[i]
        patch_dim = self.patch * self.patch * 3
        patches = torch.zeros(self.patches, patch_dim)
        patch_mask = torch.zeros(self.patches, dtype=torch.uint8)
        if media is not None:
            img = Image.open(io.BytesIO(self._read(path, media))).convert("RGB")
            img = img.resize((self.size, self.size), Image.BILINEAR)
            a = torch.from_numpy(np.asarray(img, dtype=np.float32)) / 127.5 - 1.0
            g = self.size // self.patch
            a = a.reshape(g, self.patch, g, self.patch, 3).permute(0, 2, 1, 3, 4)
            patches = a.reshape(self.patches, patch_dim)
            patch_mask[:] = 1
        text = self._read(path, caption)[: self.max_tokens - 2]
        tokens = torch.full((self.max_tokens,), TOKEN_PAD, dtype=torch.int32)
        tokens[0] = TOKEN_BOS
        tokens[1 : 1 + len(text)] = torch.frombuffer(bytearray(text), dtype=torch.uint8).to(torch.int32)
        tokens[1 + len(text)] = TOKEN_EOS
        token_mask = (tokens != TOKEN_PAD).to(torch.uint8)
        return {"patches": patches, "patch_mask": patch_mask, "tokens": tokens, "token_mask": token_mask}


def cores(workers):
    """The first `workers` CPUs: every column of a row runs on the same cores (the limit, msomni's
    threads, PyTorch's main process and loader workers), so extra threads buy no extra cores."""
    return set(range(workers))


def run_torch(items, args, workers):
    saved = os.sched_getaffinity(0)
    if args.pin:
        os.sched_setaffinity(0, cores(workers))  # loader worker processes inherit it
    try:
        return run_torch_pinned(items, args, workers)
    finally:
        os.sched_setaffinity(0, saved)


def run_torch_pinned(items, args, workers):
    ds = shard_dataset(items, args.image_size, args.patch_size, args.max_seq_len)
    total = len(items) * args.epochs
    sampler = RandomSampler(ds, num_samples=total, generator=torch.Generator().manual_seed(7))
    t0 = time.perf_counter()
    loader = DataLoader(ds, batch_size=args.batch, sampler=sampler, num_workers=workers)
    got = 0
    for b in loader:
        got += b["tokens"].shape[0]
    secs = time.perf_counter() - t0
    return got / secs


def run_msomni(args, mode, workers, samples):
    pin = ["taskset", "-c", ",".join(str(c) for c in sorted(cores(workers)))] if args.pin else []
    cmd = pin + [args.bench, "--mode", mode, "--data", args.data, "--workers", str(workers),
           "--image-size", str(args.image_size), "--patch-size", str(args.patch_size), "--video-frames", "1",
           "--max-seq-len", str(args.max_seq_len), "--batch", str(args.batch)]
    cmd += ["--passes", str(args.epochs)] if mode == "limit" else ["--samples", str(samples)]
    line = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()
    fields = dict(kv.split("=") for kv in line.split())
    return float(fields["samples_per_s"])


def main():
    root = os.path.dirname(os.path.abspath(__file__))
    build = os.path.join(root, "..", "..", "build", "tools")
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", default="/tmp/msomni_bench_data")
    p.add_argument("--images", type=int, default=3000)
    p.add_argument("--videos", type=int, default=200)
    p.add_argument("--texts", type=int, default=1000)
    p.add_argument("--gen-size", type=int, default=224, help="pixels of generated images and videos")
    p.add_argument("--image-size", type=int, default=112, help="model image size both sides resize to")
    p.add_argument("--patch-size", type=int, default=16)
    p.add_argument("--max-seq-len", type=int, default=320)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--epochs", type=int, default=3, help="passes over the set per measurement")
    p.add_argument("--repeats", type=int, default=3, help="measurements per cell; the median is reported")
    p.add_argument("--workers", default="1,2")
    p.add_argument("--pin", type=int, default=1, help="1: run every column of a row on the first N cpus (taskset)")
    p.add_argument("--bench", default=os.path.join(build, "bench_data", "msomni-bench-data"))
    p.add_argument("--gen", default=os.path.join(build, "dataset_gen", "msomni-gen-dataset"))
    args = p.parse_args()

    if not os.path.isdir(os.path.join(args.data, "images")):
        subprocess.run([args.gen, "--out", args.data, "--images", str(args.images), "--videos", str(args.videos),
                        "--texts", str(args.texts), "--image-size", str(args.gen_size),
                        "--video-size", str(args.gen_size)], check=True, stderr=subprocess.DEVNULL)
    items = index_source(os.path.join(args.data, "images")) + index_source(os.path.join(args.data, "text"))
    samples = len(items) * args.epochs
    torch.set_num_threads(1)
    print(f"# {len(items)} samples (images + text) x {args.epochs} epochs per measurement, "
          f"{args.gen_size}px -> {args.image_size}px, batch {args.batch}, median of {args.repeats}, "
          f"{os.cpu_count()} cpus, torch {torch.__version__}", file=sys.stderr)

    rows = []
    for w in [int(x) for x in args.workers.split(",")]:
        cells = {"limit": [], "actors": [], "inline": [], "torch": []}
        for _ in range(args.repeats):  # interleaved, so drift hits every column alike
            cells["limit"].append(run_msomni(args, "limit", w, samples))
            cells["actors"].append(run_msomni(args, "actors", w, samples))
            if w == 1:
                cells["inline"].append(run_msomni(args, "inline", w, samples))
            cells["torch"].append(run_torch(items, args, w))
        med = {k: statistics.median(v) if v else None for k, v in cells.items()}
        rows.append((w, med))
        print(f"# workers={w} " + " ".join(f"{k}={[round(x) for x in v]}" for k, v in cells.items()), file=sys.stderr)

    print("| workers | (a) FFmpeg limit | msomni actor pipeline | msomni in-thread | (b) PyTorch DataLoader "
          "| actors / limit | actors / PyTorch | in-thread / limit | in-thread / PyTorch |")
    print("|---|---|---|---|---|---|---|---|---|")
    def fmt(x, suffix=""):
        return "-" if x is None else f"{x:.2f}{suffix}" if suffix else f"{x:.0f}"

    for w, m in rows:
        lim, act, inl, pt = m["limit"], m["actors"], m["inline"], m["torch"]
        ratio = lambda a, b: None if a is None else a / b
        print(f"| {w} | {fmt(lim)} | {fmt(act)} | {fmt(inl)} | {fmt(pt)} | {fmt(act / lim, 'x')} "
              f"| {fmt(act / pt, 'x')} | {fmt(ratio(inl, lim), 'x')} | {fmt(ratio(inl, pt), 'x')} |")

if __name__ == "__main__":
    main()
