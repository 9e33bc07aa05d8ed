#!/usr/bin/env python3
# Driver of the data-pipeline benchmark: generates one shard set, then, side by side
# at 1 and 2 workers, measures (a) the raw FFmpeg decode limit (msomni-bench-data --mode limit),
# the msomni pipeline (actor pipeline, and the in-thread reference at 1), and (b) a PyTorch
# DataLoader reading the same tar members with PIL decoding, and prints a markdown table. A
# second table (--video 1) runs the same columns on the videos source alone: the limit, msomni
# and a DataLoader decoding the MP4s with PyAV (python3-av; torchvision.io.read_video is a
# wrapper over the same PyAV decode that converts every frame, so it would only be slower),
# all taking the same evenly spaced frames, bilinear-resized. Every column of a row runs pinned
# to the same N cpus (--pin 1, taskset / sched_setaffinity).
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

try:
    import av  # python3-av (PyAV), for the video table
except ImportError:
    av = None
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
            media = parts.get("jpg") or parts.get("jpeg") or parts.get("png") or parts.get("mp4")
            if "txt" in parts:
                out.append((path, media, parts["txt"]))
    return out


def frame_indices(total, count):
    """msomni's sample_frame_indices: slot i takes frame floor((i + 0.5) * total / count)."""
    return [min(total - 1, int((i + 0.5) * total / count)) for i in range(count)]


class shard_dataset(Dataset):
    """One sample per item: PIL decode (PyAV for MP4) + bilinear resize, [-1, 1] patches, byte tokens."""

    def __init__(self, items, image_size, patch_size, max_seq_len, video_frames=1):
        self.items = items
        self.size, self.patch, self.frames = image_size, patch_size, video_frames
        self.per_frame = (image_size // patch_size) ** 2
        self.patches = self.per_frame * video_frames
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

    def _video_frames(self, data):
        """The evenly spaced frames of an MP4, decoded in order on one thread (like msomni's
        workers), converted (libswscale, bilinear) only where a slot wants them."""
        with av.open(io.BytesIO(data)) as container:
            stream = container.streams.video[0]
            stream.codec_context.thread_count = 1
            wanted = frame_indices(stream.frames, self.frames)
            got = {}
            for n, frame in enumerate(container.decode(stream)):
                if n in wanted:
                    got[n] = frame.to_ndarray(width=self.size, height=self.size, format="rgb24", interpolation="BILINEAR")
                if n >= wanted[-1]:
                    break
        last = got[max(got)]
        return [got.get(n, last) for n in wanted]

    def _patchify(self, rgb):
        g = self.size // self.patch
        a = torch.from_numpy(np.asarray(rgb, dtype=np.float32)) / 127.5 - 1.0
        a = a.reshape(g, self.patch, g, self.patch, 3).permute(0, 2, 1, 3, 4)
        return a.reshape(self.per_frame, self.patch * self.patch * 3)

    def __getitem__(self, i):
        path, media, caption = self.items[i]
        patch_dim = self.patch * self.patch * 3
        patches = torch.zeros(self.patches, patch_dim)
        patch_mask = torch.zeros(self.patches, dtype=torch.uint8)
        if media is not None:
            data = self._read(path, media)
            if data[4:8] == b"ftyp":  # MP4
                frames = self._video_frames(data)
            else:
                img = Image.open(io.BytesIO(data)).convert("RGB")
                frames = [img.resize((self.size, self.size), Image.BILINEAR)]
            for f, rgb in enumerate(frames):
                patches[f * self.per_frame:(f + 1) * self.per_frame] = self._patchify(rgb)
            patch_mask[:len(frames) * self.per_frame] = 1
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


def run_torch(items, args, workers, frames):
    saved = os.sched_getaffinity(0)
    if args.pin:
        os.sched_setaffinity(0, cores(workers))  # loader worker processes inherit it
    try:
        return run_torch_pinned(items, args, workers, frames)
    finally:
        os.sched_setaffinity(0, saved)


def run_torch_pinned(items, args, workers, frames):
    ds = shard_dataset(items, args.image_size, args.patch_size, args.max_seq_len, frames)
    total = len(items) * args.epochs
    sampler = RandomSampler(ds, num_samples=total, generator=torch.Generator().manual_seed(7))
    t0 = time.perf_counter()
    loader = DataLoader(ds, batch_size=args.batch, sampler=sampler, num_workers=workers)
    got = 0
    for b in loader:
        got += b["tokens"].shape[0]
    secs = time.perf_counter() - t0
    return got / secs


def run_msomni(args, mode, workers, samples, sources, frames):
    pin = ["taskset", "-c", ",".join(str(c) for c in sorted(cores(workers)))] if args.pin else []
    cmd = pin + [args.bench, "--mode", mode, "--data", args.data, "--workers", str(workers), "--sources", sources,
           "--image-size", str(args.image_size), "--patch-size", str(args.patch_size), "--video-frames", str(frames),
           "--max-seq-len", str(args.max_seq_len), "--batch", str(args.batch)]
    cmd += ["--passes", str(args.epochs)] if mode == "limit" else ["--samples", str(samples)]
    line = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()
    fields = dict(kv.split("=") for kv in line.split())
    return float(fields["samples_per_s"])


def table(args, title, sources, frames, inline, epochs):
    """One markdown table: per worker count, every column `repeats` times, interleaved."""
    args = argparse.Namespace(**{**vars(args), "epochs": epochs})
    items = [it for src in sources.split(",") for it in index_source(os.path.join(args.data, src))]
    samples = len(items) * args.epochs
    print(f"# {title}: {len(items)} samples x {args.epochs} epochs per measurement, {frames} frame(s) per sample, "
          f"{args.gen_size}px -> {args.image_size}px, batch {args.batch}, median of {args.repeats}, "
          f"{os.cpu_count()} cpus, torch {torch.__version__}", file=sys.stderr)
    rows = []
    for w in [int(x) for x in args.workers.split(",")]:
        cells = {"limit": [], "actors": [], "inline": [], "torch": []}
        for _ in range(args.repeats):  # interleaved, so drift hits every column alike
            cells["limit"].append(run_msomni(args, "limit", w, samples, sources, frames))
            cells["actors"].append(run_msomni(args, "actors", w, samples, sources, frames))
            if w == 1 and inline:
                cells["inline"].append(run_msomni(args, "inline", w, samples, sources, frames))
            cells["torch"].append(run_torch(items, args, w, frames))
        med = {k: statistics.median(v) if v else None for k, v in cells.items()}
        rows.append((w, med))
        print(f"# {title} workers={w} " + " ".join(f"{k}={[round(x) for x in v]}" for k, v in cells.items()),
              file=sys.stderr)

    print(f"\n{title}\n")
    print("| workers | (a) FFmpeg limit | msomni actor pipeline | msomni in-thread | (b) PyTorch DataLoader "
          "| actors / limit | actors / PyTorch | in-thread / limit | in-thread / PyTorch |")
    print("|---|---|---|---|---|---|---|---|---|")
    def fmt(x, suffix=""):
        return "-" if x is None else f"{x:.2f}{suffix}" if suffix else f"{x:.0f}"

    for w, m in rows:
        lim, act, inl, pt = m["limit"], m["actors"], m["inline"], m["torch"]
        ratio = lambda a, b: None if a is None else a / b
        print(f"| {w} | {fmt(lim)} | {fmt(act)} | {fmt(inl)} | {fmt(pt)} | {fmt(act / lim, 'x')} "
              f"| {fmt(act / pt, 'x')} | {fmt(ratio(inl, lim), 'x')} | {fmt(ratio(inl, pt), 'x')} |", flush=True)


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
    p.add_argument("--image-text", type=int, default=1, help="1: the images + text table")
    p.add_argument("--video", type=int, default=1, help="1: the videos table (needs python3-av)")
    p.add_argument("--video-frames", type=int, default=4, help="frames sampled per video in the videos table")
    p.add_argument("--video-epochs", type=int, default=10, help="passes over the videos per measurement")
    p.add_argument("--bench", default=os.path.join(build, "bench_data", "msomni-bench-data"))
    p.add_argument("--gen", default=os.path.join(build, "dataset_gen", "msomni-gen-dataset"))
    args = p.parse_args()

    if not os.path.isdir(os.path.join(args.data, "images")):
        subprocess.run([args.gen, "--out", args.data, "--images", str(args.images), "--videos", str(args.videos),
                        "--texts", str(args.texts), "--image-size", str(args.gen_size),
                        "--video-size", str(args.gen_size)], check=True, stderr=subprocess.DEVNULL)
    torch.set_num_threads(1)
    if args.image_text:
        table(args, "images + text", "images,text", 1, inline=True, epochs=args.epochs)
    if args.video:
        if av is None:
            sys.exit("bench_data.py: the videos table needs PyAV (apt-get install python3-av)")
        table(args, f"videos ({args.video_frames} frames each)", "videos", args.video_frames, inline=True,
              epochs=args.video_epochs)


if __name__ == "__main__":
    main()
