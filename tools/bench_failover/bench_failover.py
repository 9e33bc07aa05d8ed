#!/usr/bin/env python3
"""Control failover: what the control process's death costs a training job with a standby
that takes over ([control] store on a real etcd) and adopts the ranks, which train on while
no leader exists, against a full restart of the job from its checkpoint (msomni-run started
again by hand the moment the old one died, no store: the best case of a supervisor script).

Both runs train the same job (configs/quickstart.toml, 2 ranks, a checkpoint every 20 steps)
on this machine, in this run; the control process is SIGKILLed after `--kill-after-steps`.
  standby:  leader + standby msomni-run on one run directory; SIGKILL the leader.
  restart:  one msomni-run; SIGKILL it; start the same command again at once.
Reported per run:
  death -> first command served: `msomni status` answered by the next control process;
  death -> takeover / adoption events (standby only);
  the longest pause in training: the largest gap between consecutive STEP lines of the ranks'
    logs (stamped as they were written) from 2 s before the death to the end;
  the steps trained again (since the last checkpoint; 0 when the ranks were adopted);
  the median step time of the 50 steps before the death and of the 50 after it.

usage: bench_failover.py --build BUILD_DIR [--ttl 3] [--repeat 3] [--out FILE.json]
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def lines(path):
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            if line.endswith("\n"):
                out.append(json.loads(line))
    return out


def wait(pred, limit):
    end = time.time() + limit
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.02)
    return False


class Etcd:
    def __init__(self, root):
        self.client, peer = free_port(), free_port()
        c, p = f"http://127.0.0.1:{self.client}", f"http://127.0.0.1:{peer}"
        self.log = open(os.path.join(root, "etcd.log"), "w")
        self.proc = subprocess.Popen(["etcd", "--name", "b", "--data-dir", os.path.join(root, "etcd"),
                                      "--listen-client-urls", c, "--advertise-client-urls", c,
                                      "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
                                      "--initial-cluster", f"b={p}"], stdout=self.log, stderr=subprocess.STDOUT)
        import urllib.request
        def healthy():
            try:
                return b'"true"' in urllib.request.urlopen(f"{c}/health", timeout=1).read()
            except Exception:
                return False
        if not wait(healthy, 30):
            raise SystemExit("etcd did not start")

    def url(self):
        return f"etcd://127.0.0.1:{self.client}"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(20)
        self.log.close()


def step_times(run_dir):
    """(wall time, step) of every STEP line of the ranks' logs, in time order."""
    out = []
    logs = os.path.join(run_dir, "logs")
    for name in os.listdir(logs) if os.path.isdir(logs) else []:
        if not name.startswith("rank-"):
            continue
        with open(os.path.join(logs, name), errors="replace") as f:
            for line in f:
                stamp, _, rest = line.partition(" ")
                if not rest.startswith("STEP "):
                    continue
                try:
                    t = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
                    out.append((t, json.loads(rest[5:])["step"]))
                except (ValueError, KeyError):
                    pass
    return sorted(out)


def run_once(build, mode, root, etcd, ttl, kill_after, steps):
    run_dir = os.path.join(root, f"{mode}-run")
    shutil.rmtree(run_dir, ignore_errors=True)
    cmd = [os.path.join(build, "apps/msomni-run/msomni-run"), os.path.join(SRC, "configs/quickstart.toml"),
           "--run-dir", run_dir, "--set", "health.preflight=off", "--set", f"training.steps={steps}",
           "--set", "checkpoint.interval_steps=20", "--set", f"job.name=bench-failover-{mode}-{int(time.time()*1000)}"]
    if mode == "standby":
        cmd += ["--set", f"control.store={etcd.url()}", "--set", f"control.lease_ttl_s={ttl}"]
    cli = [os.path.join(build, "apps/msomni/msomni"), "status", "--json", "--run-dir", run_dir]
    log = open(os.path.join(root, f"{mode}.log"), "a")
    first = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    metrics = os.path.join(run_dir, "metrics.jsonl")
    events = os.path.join(run_dir, "events.jsonl")
    second = None
    if mode == "standby":
        wait(lambda: any(e.get("kind") == "control_elected" for e in lines(events)), 60)
        second = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    if not wait(lambda: len(lines(metrics)) >= kill_after, 300):
        raise SystemExit(f"{mode}: the job never reached step {kill_after}")
    first.send_signal(signal.SIGKILL)
    died = time.time()
    first.wait()
    if mode == "restart":
        second = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)

    def served():  # exit 0 only when a control process answered (the old one is dead)
        return subprocess.run(cli, capture_output=True, text=True).returncode == 0
    wait(served, 120)
    first_command = time.time()
    if second.wait(600) != 0:
        raise SystemExit(f"{mode}: the job did not finish (see {log.name})")
    ms = lines(metrics)
    before = [m for m in ms if m["attempt"] == 1]
    after = [m for m in ms if m["attempt"] >= 2]
    evs = lines(events)
    def since_death(kind):
        e = [x for x in evs if x.get("kind") == kind]
        return round(e[0]["time_ms"] / 1000 - died, 3) if e else None
    times = [t for t, _ in step_times(run_dir) if t >= died - 2]
    pause = max((b - a for a, b in zip(times, times[1:])), default=None)
    trained = [m["step"] for m in after]
    return {
        "death_to_first_command_s": round(first_command - died, 3),
        "death_to_takeover_s": since_death("control_takeover"),
        "death_to_adoption_s": since_death("ranks_adopted"),
        "longest_pause_s": round(pause, 3) if pause is not None else None,
        "steps_trained_again": max(0, before[-1]["step"] - min(trained) + 1) if trained else None,
        "step_ms_before": round(statistics.median(m["step_time_ms"] for m in before[-50:]), 2),
        "step_ms_after": round(statistics.median(m["step_time_ms"] for m in after[1:51]), 2),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--ttl", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kill-after-steps", type=int, default=130)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--out")
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="bench-failover-")
    etcd = Etcd(root)
    results = {"standby": [], "restart": []}
    try:
        for _ in range(a.repeat):
            for mode in ("standby", "restart"):
                r = run_once(a.build, mode, root, etcd, a.ttl, a.kill_after_steps, a.steps)
                results[mode].append(r)
                print(mode, json.dumps(r), flush=True)
    finally:
        etcd.stop()
        shutil.rmtree(root, ignore_errors=True)
    def med(mode, key):
        return statistics.median(r[key] for r in results[mode])
    summary = {
        "lease_ttl_s": a.ttl,
        "standby_death_to_first_command_s": med("standby", "death_to_first_command_s"),
        "restart_death_to_first_command_s": med("restart", "death_to_first_command_s"),
        "standby_death_to_adoption_s": med("standby", "death_to_adoption_s"),
        "standby_longest_pause_s": med("standby", "longest_pause_s"),
        "restart_longest_pause_s": med("restart", "longest_pause_s"),
        "ratio_pause_standby_over_restart": round(med("standby", "longest_pause_s") / med("restart", "longest_pause_s"), 3),
        "steps_trained_again_standby_restart": [med("standby", "steps_trained_again"), med("restart", "steps_trained_again")],
        "step_ms_before_after_standby": [med("standby", "step_ms_before"), med("standby", "step_ms_after")],
        "step_ms_before_after_restart": [med("restart", "step_ms_before"), med("restart", "step_ms_after")],
        "runs": results,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
