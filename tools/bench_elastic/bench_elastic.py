#!/usr/bin/env python3
"""Training pause per elastic event: msomni's in-place resize at a barrier versus a full
stop-and-restart from a checkpoint (what torchrun does on any membership change).

Both runs use the same job (synthetic data, fuyu-tiny) on this machine, in this run:
  elastic:  msomni-run at 4 replicas -> `msomni scale-down --replicas 2` -> `msomni scale-up
            --replicas 4` -> `msomni stop`, all in one job.
  restart:  msomni-run at 4 replicas -> `msomni stop` (final checkpoint) -> new msomni-run
            at 2 replicas resuming from it -> stop -> new msomni-run at 4 -> stop.
The restart peer is given the best case: a graceful stop with a final checkpoint, so it
loses no steps (torchrun would also redo the steps since the last periodic checkpoint).

Pause = wall time between the last step before the change and the first step after it,
minus the median step time after it (the time without progress beyond a normal step).
Jitter = per-segment step-time coefficient of variation, and the mean step time of the 20
steps after an event relative to the steady state of that segment.

usage: bench_elastic.py --build BUILD_DIR [--steps-per-segment 60] [--out FILE.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CONFIG = """[job]
name = "bench-elastic"
[model]
name = "fuyu-tiny"
d_model = 128
n_layers = 2
n_heads = 4
d_ff = 256
image_size = 32
patch_size = 8
video_frames = 2
max_seq_len = 96
[[data.sources]]
name = "shapes"
uri = "synthetic://shapes"
modality = "image"
weight = 2.0
[[data.sources]]
name = "text"
uri = "synthetic://text"
modality = "text"
weight = 1.0
[training]
global_batch = 16
micro_batch = 2
grad_accum = 2
steps = 1000000
lr = 1e-3
seed = 3
[elasticity]
replicas = 4
min_replicas = 2
max_replicas = 4
grace_period_s = 120
heartbeat_interval_s = 2
[checkpoint]
interval_steps = 50
keep = 2
"""


def jsonl(path):
    """The JSON lines of a file msomni or a peer writes while the bench reads it: none while it
    does not exist yet, and a line still being written is left out."""
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def metrics(run_dir):
    return jsonl(os.path.join(run_dir, "metrics.jsonl"))


def wait_steps(run_dir, world, count, after_step=0, timeout=600):
    end = time.time() + timeout
    while time.time() < end:
        got = [r for r in metrics(run_dir) if r["world_size"] == world and r["step"] > after_step]
        if len(got) >= count:
            return got
        time.sleep(0.05)
    raise RuntimeError(f"no {count} steps at world {world} after step {after_step} within {timeout} s")


def cli(build, verb, run_dir, *args):
    exe = os.path.join(build, "apps/msomni/msomni")
    r = subprocess.run([exe, verb, "--run-dir", run_dir, *args], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"msomni {verb}: {r.stdout}{r.stderr}")


def start(build, cfg, run_dir, *sets):
    exe = os.path.join(build, "apps/msomni-run/msomni-run")
    args = [exe, cfg, "--run-dir", run_dir]
    for s in sets:
        args += ["--set", s]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def pause_at(recs, last_before_step):
    """Gap between step `last_before_step` and the next step, minus the median step time after."""
    by_step = {r["step"]: r for r in recs}
    before = by_step[last_before_step]
    after = [r for r in recs if r["step"] > last_before_step]
    first = after[0]
    typical = statistics.median(r["step_time_ms"] for r in after[1:41]) / 1000.0
    gap = (first["time_ms"] - before["time_ms"]) / 1000.0
    return gap, max(0.0, gap - typical), typical


def jitter(recs, first_step, n):
    seg = [r for r in recs if r["step"] >= first_step][:n]
    times = [r["step_time_ms"] for r in seg]
    steady = statistics.median(times[20:]) if len(times) > 25 else statistics.median(times)
    early = statistics.mean(times[1:21])
    return {"cv": statistics.pstdev(times[1:]) / statistics.mean(times[1:]), "early_vs_steady": early / steady - 1.0}


def elastic_run(build, cfg, root, n):
    run_dir = os.path.join(root, "elastic")
    job = start(build, cfg, run_dir)
    try:
        seg4 = wait_steps(run_dir, 4, n)
        cli(build, "scale-down", run_dir, "--replicas", "2")
        down_from = metrics(run_dir)[-1]["step"]
        seg2 = wait_steps(run_dir, 2, n, down_from)
        cli(build, "scale-up", run_dir, "--replicas", "4")
        up_from = metrics(run_dir)[-1]["step"]
        wait_steps(run_dir, 4, n, up_from)
        cli(build, "stop", run_dir)
        job.wait(timeout=300)
    finally:
        if job.poll() is None:
            job.kill()
    recs = metrics(run_dir)
    steps = [r["step"] for r in recs]
    assert steps == list(range(1, len(steps) + 1)), "a step was lost or repeated"
    last4 = max(r["step"] for r in recs if r["world_size"] == 4 and r["step"] < seg2[0]["step"])
    last2 = max(r["step"] for r in recs if r["world_size"] == 2)
    return recs, [("scale-down 4->2", last4), ("scale-up 2->4", last2)]


def restart_run(build, cfg, root, n):
    run_dir = os.path.join(root, "restart")
    recs_all = []
    events = []
    for i, (replicas, accum) in enumerate([(4, 2), (2, 4), (4, 2)]):
        job = start(build, cfg, run_dir, f"elasticity.replicas={replicas}", f"training.grad_accum={accum}")
        try:
            before = metrics(run_dir)[-1]["step"] if i else 0
            wait_steps(run_dir, replicas, n, before)
            cli(build, "stop", run_dir)
            job.wait(timeout=300)
        finally:
            if job.poll() is None:
                job.kill()
        if i:
            events.append((f"restart {'4->2' if i == 1 else '2->4'}", before))
    recs = metrics(run_dir)
    return recs, events


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--steps-per-segment", type=int, default=60)
    ap.add_argument("--out")
    a = ap.parse_args()
    result = {}
    with tempfile.TemporaryDirectory(prefix="msomni-bench-elastic-") as root:
        cfg = os.path.join(root, "job.toml")
        with open(cfg, "w") as f:
            f.write(CONFIG)
        for name, fn in (("elastic", elastic_run), ("restart", restart_run)):
            recs, events = fn(a.build, cfg, root, a.steps_per_segment)
            rows = []
            for label, last in events:
                gap, pause, typical = pause_at(recs, last)
                rows.append({"event": label, "gap_s": gap, "pause_s": pause, "step_s": typical,
                             "jitter_after": jitter(recs, last + 1, a.steps_per_segment)})
            result[name] = rows
    print(f"{'event':18} {'msomni pause s':>15} {'restart pause s':>16} {'ratio':>7}   step s   msomni early/steady")
    for e, r in zip(result["elastic"], result["restart"]):
        ratio = r["pause_s"] / e["pause_s"] if e["pause_s"] > 0 else float("inf")
        print(f"{e['event']:18} {e['pause_s']:15.3f} {r['pause_s']:16.3f} {ratio:7.1f}x  {e['step_s']:.3f}   "
              f"{e['jitter_after']['early_vs_steady']*100:+.1f}% (cv {e['jitter_after']['cv']*100:.1f}%)")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
