#!/usr/bin/env python3
"""What metrics cost a real msomni-run job, and how long a scrape of /metrics takes.

1. Cost: the same job (config, seed, steps) with cluster.metrics_port = 0 (off: no registry,
   no accounting, nothing pushed) and = "auto" (on, scraped once a second the way Prometheus
   would), interleaved rep by rep so both see the same machine. From metrics.jsonl (steps
   after the warm-up) it reports the median step time, tokens/s and samples/s (global batch /
   step time), and the on/off ratios.
2. Scrape latency: a job of --scrape-ranks replicas (a tiny model, synthetic data) with
   metrics on; once every rank's series are in, GET /metrics --scrapes times and report the
   median and p95 latency, the body size and the series count. The peer is the Prometheus
   server's own /metrics (Debian's prometheus 2.42, started on loopback for the purpose),
   scraped the same way in the same run.
Usage:

  tools/bench_metrics/bench_metrics.py --build build --config tools/bench_train_job/mixed.toml \\
      --steps 80 --warmup 10 --reps 3 --scrape-ranks 16 --scrapes 50
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=10):
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=timeout) as r:
        body = r.read()
    return time.perf_counter() - t0, body


def metrics_address(run_dir, timeout=60):
    deadline = time.time() + timeout
    path = os.path.join(run_dir, "control.json")
    while time.time() < deadline:
        try:
            with open(path) as f:
                a = json.load(f).get("metrics_address")
            if a:
                return a
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"no metrics_address in {path}")


def run_job(build, config, steps, sets, metrics, scrape_every_s=1.0):
    run_dir = tempfile.mkdtemp(prefix="msomni-bench-metrics-")
    os.rmdir(run_dir)  # msomni-run creates (and claims) it
    cmd = [os.path.join(build, "apps/msomni-run/msomni-run"), config, "--run-dir", run_dir,
           "--set", f"training.steps={steps}", "--set", f"cluster.metrics_port={'auto' if metrics else 0}"]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    scrapes = 0
    try:
        if metrics:
            addr = metrics_address(run_dir)
            while p.poll() is None:
                try:
                    get(f"http://{addr}/metrics")
                    scrapes += 1
                except OSError:
                    pass
                time.sleep(scrape_every_s)
        if p.wait() != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}")
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            records = [json.loads(line) for line in f]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        shutil.rmtree(run_dir, ignore_errors=True)
    return records, scrapes


def global_batch(config):
    for line in open(config):
        line = line.split("#", 1)[0].strip()
        if line.startswith("global_batch"):
            return int(line.split("=", 1)[1])
    return 8


def cost(a):
    gb = global_batch(a.config)
    by = {False: {"ms": [], "tps": []}, True: {"ms": [], "tps": []}}
    scrapes = 0
    for _ in range(a.reps):
        for on in (False, True):
            recs, n = run_job(a.build, a.config, a.steps, a.set, on)
            scrapes += n
            recs = [r for r in recs if r["step"] > a.warmup]
            by[on]["ms"] += [r["step_time_ms"] for r in recs]
            by[on]["tps"] += [r["tokens_per_s"] for r in recs]
    off_ms, on_ms = statistics.median(by[False]["ms"]), statistics.median(by[True]["ms"])
    off_t, on_t = statistics.median(by[False]["tps"]), statistics.median(by[True]["tps"])
    print(f"## metrics on vs off: {os.path.basename(a.config)}, {a.reps} reps x {a.steps} steps "
          f"(median over steps after {a.warmup}); {scrapes} scrapes of /metrics during the 'on' runs")
    print(f"{'':>12} {'step ms':>9} {'tokens/s':>10} {'samples/s':>10}")
    print(f"{'off':>12} {off_ms:>9.2f} {off_t:>10.0f} {gb / (off_ms / 1000):>10.1f}")
    print(f"{'on':>12} {on_ms:>9.2f} {on_t:>10.0f} {gb / (on_ms / 1000):>10.1f}")
    print(f"{'on / off':>12} {on_ms / off_ms:>9.3f} {on_t / off_t:>10.3f} {off_ms / on_ms:>10.3f}")
    print(f"step-time cost of metrics: {100 * (on_ms / off_ms - 1):+.2f}%")


def latency(url, n):
    times, size = [], 0
    get(url)  # warm
    for _ in range(n):
        t, body = get(url)
        times.append(t)
        size = len(body)
    times.sort()
    series = sum(1 for line in body.decode().splitlines() if line and not line.startswith("#"))
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], size, series


def scrape_bench(a):
    prom = shutil.which("prometheus")
    tmp = tempfile.mkdtemp(prefix="msomni-bench-prom-")
    run_dir = os.path.join(tmp, "run")
    job = prom_proc = None
    try:
        cmd = [os.path.join(a.build, "apps/msomni-run/msomni-run"), "configs/quickstart.toml", "--run-dir", run_dir,
               "--set", "cluster.metrics_port=auto", "--set", "training.steps=100000",
               "--set", f"elasticity.replicas={a.scrape_ranks}", "--set", f"elasticity.min_replicas={a.scrape_ranks}",
               "--set", f"elasticity.max_replicas={a.scrape_ranks}", "--set", "training.threads=1",
               "--set", f"training.global_batch={2 * a.scrape_ranks}", "--set", "training.micro_batch=1",
               "--set", "training.grad_accum=2", "--set", "checkpoint.interval_steps=100000"]
        job = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        addr = metrics_address(run_dir)
        url = f"http://{addr}/metrics"
        deadline = time.time() + 600
        while time.time() < deadline:
            _, body = get(url)
            ranks = {l.split('rank="', 1)[1].split('"', 1)[0] for l in body.decode().splitlines()
                     if l.startswith("msomni_rank_steps_total{") and 'rank="' in l}
            if len(ranks) >= a.scrape_ranks:
                break
            if job.poll() is not None:
                raise RuntimeError(f"the {a.scrape_ranks}-rank job exited {job.returncode}")
            time.sleep(1)
        else:
            raise RuntimeError(f"not all {a.scrape_ranks} ranks reported")
        ours = latency(url, a.scrapes)
        peer = None
        if prom:
            port = free_port()
            cfgf = os.path.join(tmp, "prometheus.yml")
            with open(cfgf, "w") as f:
                f.write(f"global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: msomni\n    honor_labels: true\n"
                        f"    static_configs:\n      - targets: ['{addr}']\n")
            prom_proc = subprocess.Popen([prom, f"--config.file={cfgf}", f"--storage.tsdb.path={tmp}/data",
                                          f"--web.listen-address=127.0.0.1:{port}"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            purl = f"http://127.0.0.1:{port}/metrics"
            for _ in range(100):
                try:
                    get(purl)
                    break
                except OSError:
                    time.sleep(0.2)
            time.sleep(3)  # it scrapes the job meanwhile, as it would in use
            ours_beside = latency(url, a.scrapes)
            peer = latency(purl, a.scrapes)
        print(f"\n## /metrics scrape latency, {a.scrape_ranks} ranks on this machine, {a.scrapes} GETs each")
        print(f"{'endpoint':>34} {'median ms':>10} {'p95 ms':>8} {'KiB':>7} {'series':>7}")
        print(f"{'msomni-run (16-rank job)':>34} {1000 * ours[0]:>10.2f} {1000 * ours[1]:>8.2f} {ours[2] / 1024:>7.1f} {ours[3]:>7}")
        if peer:
            print(f"{'msomni-run, Prometheus scraping':>34} {1000 * ours_beside[0]:>10.2f} {1000 * ours_beside[1]:>8.2f} "
                  f"{ours_beside[2] / 1024:>7.1f} {ours_beside[3]:>7}")
            print(f"{'prometheus 2.42 own /metrics':>34} {1000 * peer[0]:>10.2f} {1000 * peer[1]:>8.2f} {peer[2] / 1024:>7.1f} {peer[3]:>7}")
            print(f"msomni / prometheus: median {ours_beside[0] / peer[0]:.2f}x, per series "
                  f"{(ours_beside[0] / ours_beside[3]) / (peer[0] / peer[3]):.2f}x")
    finally:
        for p in (prom_proc, job):
            if p and p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--config", default="tools/bench_train_job/mixed.toml")
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--scrape-ranks", type=int, default=16)
    ap.add_argument("--scrapes", type=int, default=50)
    ap.add_argument("--skip-cost", action="store_true")
    ap.add_argument("--skip-scrape", action="store_true")
    ap.add_argument("--set", action="append", default=[], help="extra --set for the cost runs")
    a = ap.parse_args()
    if not a.skip_cost:
        cost(a)
    if not a.skip_scrape:
        scrape_bench(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
