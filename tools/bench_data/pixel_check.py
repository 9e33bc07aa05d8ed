#!/usr/bin/env python3
# Pixel equality of the two video paths that bench_data.py times: msomni's media_decoder
# (msomni-bench-data --mode pixels: libavcodec decode, libswscale bilinear resize to RGB24) and
# the PyTorch side's PyAV decode with VideoFrame.to_ndarray(..., interpolation="BILINEAR"),
# both taking the same evenly spaced frames. Prints, over every sampled frame of the videos
# source: how many frames are byte-identical, the share of equal bytes, and the maximum and
# mean absolute difference per byte.
import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_data  # noqa: E402  (same directory: index_source, shard_dataset)


def main():
    root = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", default="/tmp/msomni_bench_data")
    p.add_argument("--bench", default=os.path.join(root, "..", "..", "build", "tools", "bench_data", "msomni-bench-data"))
    p.add_argument("--image-size", type=int, default=112)
    p.add_argument("--video-frames", type=int, default=4)
    p.add_argument("--out", default="/tmp/msomni_pixels.bin")
    args = p.parse_args()
    if bench_data.av is None:
        sys.exit("pixel_check.py needs PyAV (apt-get install python3-av)")

    subprocess.run([args.bench, "--mode", "pixels", "--data", args.data, "--sources", "videos", "--image-size",
                    str(args.image_size), "--video-frames", str(args.video_frames), "--out", args.out], check=True)
    items = bench_data.index_source(os.path.join(args.data, "videos"))
    S, F = args.image_size, args.video_frames
    ours = np.fromfile(args.out, dtype=np.uint8)
    if ours.size != len(items) * F * S * S * 3:
        sys.exit(f"pixel_check.py: {ours.size} bytes from msomni for {len(items)} videos of {F} x {S}x{S}x3")
    ours = ours.reshape(len(items), F, S, S, 3)
    ds = bench_data.shard_dataset(items, S, 16, 320, F)
    identical = equal_bytes = total_bytes = 0
    max_diff, sum_diff = 0, 0
    for i, (path, media, _) in enumerate(items):
        theirs = np.stack([np.asarray(f, dtype=np.uint8) for f in ds._video_frames(ds._read(path, media))])
        d = np.abs(ours[i].astype(np.int16) - theirs.astype(np.int16))
        identical += sum(int(not d[f].any()) for f in range(F))
        equal_bytes += int((d == 0).sum())
        total_bytes += d.size
        max_diff = max(max_diff, int(d.max()))
        sum_diff += int(d.sum())
    print(f"videos={len(items)} frames={len(items) * F} identical_frames={identical} "
          f"equal_bytes={equal_bytes / total_bytes:.4f} max_abs_diff={max_diff} mean_abs_diff={sum_diff / total_bytes:.4f}")


if __name__ == "__main__":
    main()
