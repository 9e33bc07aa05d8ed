#!/usr/bin/env python3
"""Real msomni-run jobs: the data stage actors against the inline pipeline, and 1 vs all threads.

For each config, in the same invocation and interleaved rep by rep (so both see the same
machine), runs the job with io.pipeline = "actors" and "inline" at the default compute
threads, the actor pipeline with io.downgrade_video = false (what downgrading buys), and at
training.threads = 1 and = every core, and the inline pipeline at 1 thread. From metrics.jsonl
(steps after the warm-up) it reports the median tokens/s and step time, the data-wait share
(data wait / step time, summed over the steps) and the downgraded samples. It also measures
the decode limit of each source (msomni-bench-data --mode limit, io.decode_workers threads,
no training beside it) and weights it by the mix, against the samples per second the job
consumes, to say whether the data-wait goal (under 5% of step time whenever decoding can
outrun consumption) applies. Usage:

  tools/bench_train_job/bench_pipeline.py --build build \\
      --configs tools/bench_train_job/video-heavy.toml,tools/bench_train_job/mixed.toml \\
      --steps 80 --warmup 10 --reps 3
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_threads import run_once  # noqa: E402


def toml_value(text, section, key):
    """A scalar of `section` from a flat TOML file (enough for these configs)."""
    current = None
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("[") and not line.startswith("[["):
            current = line.strip("[]")
        elif "=" in line and current == section:
            k, v = (x.strip() for x in line.split("=", 1))
            if k == key:
                return v.strip('"')
    return None


def sources(text):
    """(uri, weight) per [[data.sources]]."""
    out = []
    for block in text.split("[[data.sources]]")[1:]:
        uri = re.search(r'uri\s*=\s*"([^"]+)"', block).group(1)
        weight = float(re.search(r"weight\s*=\s*([0-9.]+)", block).group(1))
        out.append((uri, weight))
    return out


def decode_limit(build, config_text, workers):
    """Samples/s the mix decodes at (`workers` threads, nothing else running), from the limit bench."""
    cache = os.environ.get("MSOMNI_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "msomni")
    srcs = sources(config_text)
    total = sum(w for _, w in srcs)
    seconds_per_sample = 0.0
    for uri, weight in srcs:
        preset, part = uri[len("generated://"):].split("/")
        part = {"text": "text", "images": "images", "videos": "videos"}[part]
        cmd = [os.path.join(build, "tools/bench_data/msomni-bench-data"), "--mode", "limit", "--data",
               os.path.join(cache, "datasets", preset), "--workers", str(workers), "--sources", part,
               "--passes", "3"]
        for flag, key in (("--image-size", "image_size"), ("--patch-size", "patch_size"),
                          ("--video-frames", "video_frames"), ("--max-seq-len", "max_seq_len")):
            cmd += [flag, toml_value(config_text, "model", key)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        rate = float(re.search(r"samples_per_s=([0-9.]+)", out).group(1))
        seconds_per_sample += (weight / total) / rate
    return 1.0 / seconds_per_sample


def summarise(records, warmup):
    recs = [r for r in records if r["step"] > warmup]
    wait = sum(r["data_wait_ms"] for r in recs)
    step = sum(r["step_time_ms"] for r in recs)
    return {"tps": [r["tokens_per_s"] for r in recs], "ms": [r["step_time_ms"] for r in recs],
            "wait": wait, "step": step, "downgraded": sum(r["downgraded_samples"] for r in recs)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--configs", default="tools/bench_train_job/video-heavy.toml,tools/bench_train_job/mixed.toml")
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    cores = os.cpu_count() or 1
    variants = [("actors", "default", ["io.pipeline=actors"], 0), ("inline", "default", ["io.pipeline=inline"], 0),
                ("actors, no downgrade", "default", ["io.pipeline=actors", "io.downgrade_video=false"], 0),
                ("actors", "1", ["io.pipeline=actors"], 1), ("actors", str(cores), ["io.pipeline=actors"], cores),
                ("inline", "1", ["io.pipeline=inline"], 1)]
    for config in a.configs.split(","):
        text = open(config).read()
        acc = {i: {"tps": [], "ms": [], "wait": 0.0, "step": 0.0, "downgraded": 0} for i in range(len(variants))}
        for _ in range(a.reps):
            for i, (_, _, sets, threads) in enumerate(variants):
                s = summarise(run_once(a.build, config, threads, a.steps, sets), a.warmup)
                for k in ("tps", "ms"):
                    acc[i][k] += s[k]
                for k in ("wait", "step", "downgraded"):
                    acc[i][k] += s[k]
        workers = int(toml_value(text, "io", "decode_workers") or 2)
        limit = decode_limit(a.build, text, workers)
        samples_per_step = int(toml_value(text, "training", "global_batch"))
        inline_ms = statistics.median(acc[1]["ms"])
        inline_wait_share = acc[1]["wait"] / acc[1]["step"]
        compute_ms = inline_ms * (1 - inline_wait_share)  # the inline step less its decoding
        consumption = samples_per_step * 1000.0 / compute_ms
        print(f"\n### {os.path.basename(config)} ({a.steps} steps, {a.reps} reps, median over steps > {a.warmup})\n")
        print(f"decode limit {limit:.0f} samples/s at {workers} workers alone; training consumes "
              f"{consumption:.0f} samples/s at the inline run's compute time ({compute_ms:.2f} ms/step): "
              f"decoding {'can' if limit > consumption else 'cannot'} outrun consumption "
              f"({limit / consumption:.2f}x), on cores it shares with compute\n")
        base = statistics.median(acc[1]["tps"])
        print("| pipeline | threads/rank | tokens/s | step ms | data wait share | downgraded | tokens/s vs inline |")
        print("|---|---|---|---|---|---|---|")
        for i, (pipe, threads, _, _) in enumerate(variants):
            tps = statistics.median(acc[i]["tps"])
            print(f"| {pipe} | {threads} | {tps:.0f} | {statistics.median(acc[i]['ms']):.2f} | "
                  f"{acc[i]['wait'] / acc[i]['step']:.3f} | {acc[i]['downgraded']} | {tps / base:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
