#!/usr/bin/env python3
"""Recovery time after a rank is lost: from the fault to the next trained step.

One job (synthetic data, fuyu-tiny, 2 replicas, checkpoints every 20 steps, heartbeat 2 s x 3
misses) per trial: after --warm-steps recorded steps one rank process is SIGKILLed (its node
agent sees the exit at once) or SIGSTOPped (--fault freeze: only the heartbeat finds it, after
2 s x 3); the recovery time is the wall time from the fault to the first step metrics.jsonl
records after the rank_down event (time_ms of that line). Peer: a stop-and-restart from the newest checkpoint (what
torchrun does on a membership change), the same job killed whole and started again, timed
from the kill to its first recorded step.

usage: bench_recovery.py --build BUILD_DIR [--trials 5] [--warm-steps 40] [--fault kill|freeze] [--out FILE.json]
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

CONFIG = """[job]
name = "bench-recovery"
[model]
name = "fuyu-tiny"
d_model = 64
n_layers = 2
n_heads = 4
d_ff = 128
image_size = 32
patch_size = 8
video_frames = 2
max_seq_len = 96
[[data.sources]]
name = "shapes"
uri = "synthetic://shapes"
modality = "image"
[training]
global_batch = 8
micro_batch = 2
steps = 1000000
lr = 1e-3
seed = 3
[elasticity]
replicas = 2
min_replicas = 1
max_replicas = 2
heartbeat_interval_s = 2
heartbeat_misses = 3
[checkpoint]
interval_steps = 20
keep = 2
"""


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench_elastic"))
from bench_elastic import jsonl  # noqa: E402


def wait_for(pred, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.02)
    raise RuntimeError(f"timed out waiting for {what}")


def start(build, cfg, run_dir):
    exe = os.path.join(build, "apps/msomni-run/msomni-run")
    return subprocess.Popen([exe, cfg, "--run-dir", run_dir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(build, run_dir, p):
    subprocess.run([os.path.join(build, "apps/msomni/msomni"), "stop", "--run-dir", run_dir],
                   capture_output=True, timeout=120)
    try:
        p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def first_step_after(run_dir, kill_ms):
    later = [r for r in jsonl(os.path.join(run_dir, "metrics.jsonl")) if r.get("time_ms", 0) > kill_ms]
    return later[0] if later else None


def rank_pid(run_dir, rank):
    for e in reversed(jsonl(os.path.join(run_dir, "events.jsonl"))):
        if e.get("event") == "rank_ready" and e.get("rank") == rank and e.get("pid"):
            return e["pid"]
    return None


def recovery_trial(build, cfg, root, warm, fault):
    run_dir = tempfile.mkdtemp(dir=root, prefix="recovery-")
    p = start(build, cfg, run_dir)
    try:
        wait_for(lambda: len(jsonl(os.path.join(run_dir, "metrics.jsonl"))) >= warm, 300, f"{warm} steps")
        pid = rank_pid(run_dir, "rank-1")
        kill_ms = time.time() * 1000
        os.kill(pid, signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
        # The survivor's record of the step it finished before the kill may arrive after it:
        # the recovery ends with the first step recorded after the rank was declared down.
        down = wait_for(lambda: next((e for e in jsonl(os.path.join(run_dir, "events.jsonl"))
                                      if e.get("event") == "rank_down" and e.get("time_ms", 0) > kill_ms - 1), None),
                        300, "rank_down")
        rec = wait_for(lambda: first_step_after(run_dir, down["time_ms"]), 300, "a step after the recovery")
        events = [e["event"] for e in jsonl(os.path.join(run_dir, "events.jsonl")) if e.get("time_ms", 0) > kill_ms]
        return {"recovery_s": (rec["time_ms"] - kill_ms) / 1000, "detected_s": (down["time_ms"] - kill_ms) / 1000,
                "step": rec["step"], "world": rec["world_size"], "events": events[:12]}
    finally:
        stop(build, run_dir, p)


def restart_trial(build, cfg, root, warm):
    run_dir = tempfile.mkdtemp(dir=root, prefix="restart-")
    p = start(build, cfg, run_dir)
    wait_for(lambda: len(jsonl(os.path.join(run_dir, "metrics.jsonl"))) >= warm, 300, f"{warm} steps")
    kill_ms = time.time() * 1000
    p.send_signal(signal.SIGKILL)  # the whole job, as a launcher that restarts on any failure
    p.wait()
    pids = [e.get("pid") for e in jsonl(os.path.join(run_dir, "events.jsonl")) if e.get("event") == "rank_ready"]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, TypeError):
            pass
    time.sleep(0.2)
    p = start(build, cfg, run_dir)
    try:
        rec = wait_for(lambda: first_step_after(run_dir, kill_ms), 300, "a step after the restart")
        return {"recovery_s": (rec["time_ms"] - kill_ms) / 1000, "step": rec["step"], "world": rec["world_size"]}
    finally:
        stop(build, run_dir, p)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--warm-steps", type=int, default=40)
    ap.add_argument("--fault", choices=["kill", "freeze"], default="kill",
                    help="kill: SIGKILL (its agent sees the exit at once); freeze: SIGSTOP (only the heartbeat "
                         "finds it; the control process kills it)")
    ap.add_argument("--out")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="msomni-bench-recovery-")
    cfg = os.path.join(root, "job.toml")
    with open(cfg, "w") as f:
        f.write(CONFIG)
    rec, rst = [], []
    for i in range(args.trials):
        rec.append(recovery_trial(args.build, cfg, root, args.warm_steps, args.fault))
        print(f"trial {i + 1}: msomni recovery {rec[-1]['recovery_s']:.2f} s (down after {rec[-1]['detected_s']:.2f} s; "
              f"world {rec[-1]['world']} at step "
              f"{rec[-1]['step']}; {', '.join(rec[-1]['events'])})", flush=True)
        rst.append(restart_trial(args.build, cfg, root, args.warm_steps))
        print(f"trial {i + 1}: restart from checkpoint {rst[-1]['recovery_s']:.2f} s", flush=True)
    m_rec = statistics.median(r["recovery_s"] for r in rec)
    m_rst = statistics.median(r["recovery_s"] for r in rst)
    print(f"median of {args.trials}: kill to next step {m_rec:.2f} s (msomni, heartbeat 2 s x 3) against "
          f"{m_rst:.2f} s (whole-job restart from the newest checkpoint): {m_rec / m_rst:.2f}x")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"recovery": rec, "restart": rst, "median_recovery_s": m_rec, "median_restart_s": m_rst}, f, indent=1)
    subprocess.run(["rm", "-rf", root])
    return 0


if __name__ == "__main__":
    sys.exit(main())
