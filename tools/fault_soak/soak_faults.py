"""The fault kinds: each runs one real job in a trial, injects its fault once, and returns a
FaultRecord of what the checks need (the newest checkpoint before the fault, where the rank
logs stood, which checkpoints verified, the final exit status).

Every choice (job length, fault moment, victim, byte offsets) comes from the trial's RNG, so
a seed and trial number name the same plan again; the moment a process dies within a step
still depends on timing, so a replay repeats the plan, not always the interleaving.
"""
import os
import shutil
import signal
import time
from pathlib import Path

from soak_checks import file_size, read_jsonl, verify_checkpoints
from soak_trial import (SYNTHETIC, fill, free_bytes, job_toml, kill, latest_step, mount_tmpfs,
                        wait_process, wait_until)

MOMENT_TIMEOUT_S = 60


class FaultRecord:
    def __init__(self, kind, steps, trial, plan):
        self.kind = kind
        self.steps = steps
        self.plan = plan
        self.checkpoint_dir = trial.checkpoint_dir
        self.rc = None
        self.injected = False       # false when the job ended before the fault's moment
        self.resume_floor = 0       # no rank may resume from an older step after the fault
        self.log_offsets = None     # rank logs as they stood at the fault
        self.verified = {}          # step -> (verifies, detail) right after the fault
        self.last_events_offset = 0  # events.jsonl before the last msomni-run started
        self.events_at_fault = 0
        self.notes = []
        self.checks = {}

    def mark_fault(self, trial, floor=None):
        self.injected = True
        self.resume_floor = latest_step(self.checkpoint_dir) if floor is None else floor
        self.log_offsets = trial.log_offsets()
        self.events_at_fault = file_size(trial.run_dir / "events.jsonl")


class MetricLines:
    """Counts metrics.jsonl lines as they are appended, reading only what is new."""

    def __init__(self, run_dir):
        self.path = Path(run_dir) / "metrics.jsonl"
        self.offset = 0
        self.lines = 0

    def count(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return self.lines
        self.offset += len(data)
        self.lines += data.count(b"\n")
        return self.lines


def pick_moment(rng, steps):
    """A fifth of faults land by wall time in the first second (start-up, first joins), the
    rest after a random number of recorded steps."""
    if rng.random() < 0.2:
        return {"after_s": round(rng.uniform(0.0, 1.0), 3)}
    return {"after_step": rng.randint(3, int(steps * 0.8))}


def wait_moment(trial, p, moment):
    """Waits for the moment; false when the job ended first."""
    if "after_s" in moment:
        wait_until(lambda: p.poll() is not None, moment["after_s"], 0.005)
    else:
        lines = MetricLines(trial.run_dir)
        wait_until(lambda: p.poll() is not None or lines.count() >= moment["after_step"], MOMENT_TIMEOUT_S, 0.005)
    return p.poll() is None


def finish(trial, rec, p):
    rec.rc = wait_process(p)
    if rec.rc is None:
        rec.notes.append("msomni-run hung: SIGKILLed after its timeout")
        kill(p.pid)
        p.wait()
    return rec


def rerun(trial, rec):
    """The same msomni-run command again, to its end."""
    rec.last_events_offset = file_size(trial.run_dir / "events.jsonl")
    return finish(trial, rec, trial.start_job())


def control_kill(trial, rng, dataset):
    steps = rng.randint(400, 1000)
    plan = {"steps": steps, "moment": pick_moment(rng, steps), "rerun_after_s": rng.choice([0.0, 0.0, 0.3, 1.0, 3.0])}
    rec = FaultRecord("control_kill", steps, trial, plan)
    trial.write_config(job_toml("soak", steps, rng.randint(1, 10**6), 1, SYNTHETIC))
    p = trial.start_job()
    if not wait_moment(trial, p, plan["moment"]):
        return finish(trial, rec, p)
    rec.mark_fault(trial)
    kill(p.pid)
    p.wait()
    rec.verified = verify_checkpoints(trial.bin.cli, trial.checkpoint_dir)
    time.sleep(plan["rerun_after_s"])
    return rerun(trial, rec)


def rank_kill(trial, rng, dataset):
    steps = rng.randint(400, 1000)
    plan = {"steps": steps, "moment": pick_moment(rng, steps), "victim_index": rng.randint(0, 1)}
    rec = FaultRecord("rank_kill", steps, trial, plan)
    trial.write_config(job_toml("soak", steps, rng.randint(1, 10**6), 1, SYNTHETIC))
    p = trial.start_job()
    if not wait_moment(trial, p, plan["moment"]):
        return finish(trial, rec, p)
    if not wait_until(lambda: p.poll() is not None or trial.ranks(), MOMENT_TIMEOUT_S, 0.005) or p.poll() is not None:
        return finish(trial, rec, p)
    ranks = sorted(trial.ranks(), key=lambda r: r[1][r[1].index("--name") + 1] if "--name" in r[1] else "")
    pid, argv = ranks[plan["victim_index"] % len(ranks)]
    rec.plan["victim"] = argv[argv.index("--name") + 1] if "--name" in argv else str(pid)
    rec.mark_fault(trial)
    kill(pid)
    return finish(trial, rec, p)


def agent_kill(trial, rng, dataset):
    steps = rng.randint(400, 1000)
    plan = {"steps": steps, "moment": pick_moment(rng, steps), "min_replicas": rng.choice([1, 2]),
            "victim": rng.choice(["node-a", "node-b"]), "rejoin_after_s": rng.choice([None, None, 0.3, 1.5])}
    rec = FaultRecord("agent_kill", steps, trial, plan)
    trial.write_config(job_toml("soak", steps, rng.randint(1, 10**6), plan["min_replicas"], SYNTHETIC,
                                nodes=["node-a", "node-b"]))
    p = trial.start_job()
    address = trial.control_address()
    if address is None:
        rec.notes.append("control.json never named an address")
        kill(p.pid)
        return finish(trial, rec, p)
    for node in ("node-a", "node-b"):
        trial.start_agent(node, address)
    if not wait_moment(trial, p, plan["moment"]):
        return finish(trial, rec, p)
    rec.mark_fault(trial)
    victim = trial.agents[plan["victim"]]
    kill(victim.pid)
    victim.wait()
    if plan["rejoin_after_s"] is not None:
        wait_until(lambda: p.poll() is not None, plan["rejoin_after_s"], 0.01)
        if p.poll() is None:
            trial.start_agent(plan["victim"], address)
    finish(trial, rec, p)
    for node, agent in trial.agents.items():
        code = wait_process(agent, 20)
        rec.notes.append(f"agent {node} exit {code}")
    return rec


def failed_saves(run_dir, offset):
    """checkpoint_failed events journaled after byte `offset` of events.jsonl."""
    rows, _ = read_jsonl(Path(run_dir) / "events.jsonl", offset)
    return sum(1 for e in rows if e.get("event") == "checkpoint_failed")


def full_disk(trial, rng, dataset):
    """The ballast is removed after 1 or 2 failed saves (the job may go on), or never (it
    must stop after checkpoint.max_consecutive_failures, 3, failed saves in a row)."""
    steps = rng.randint(400, 1000)
    plan = {"steps": steps, "moment": pick_moment(rng, steps), "disk_mib": 16,
            "leave_bytes": rng.choice([0, 0, 64 << 10, 1 << 20]),
            "remove_after_failed_saves": rng.choice([None, None, 1, 2])}
    rec = FaultRecord("full_disk", steps, trial, plan)
    disk = mount_tmpfs(trial, trial.dir / "disk", plan["disk_mib"])
    rec.checkpoint_dir = trial.checkpoint_dir = disk / "checkpoints"
    trial.write_config(job_toml("soak", steps, rng.randint(1, 10**6), 1, SYNTHETIC,
                                checkpoint_dir=trial.checkpoint_dir))
    p = trial.start_job()
    if not wait_moment(trial, p, plan["moment"]):
        return finish(trial, rec, p)
    rec.mark_fault(trial)
    events_at = file_size(trial.run_dir / "events.jsonl")
    ballast = disk / "ballast"
    rec.plan["ballast_bytes"] = fill(ballast, plan["leave_bytes"])
    rec.plan["free_after_fill"] = free_bytes(disk)
    if plan["remove_after_failed_saves"] is not None:
        wanted = plan["remove_after_failed_saves"]
        wait_until(lambda: p.poll() is not None or failed_saves(trial.run_dir, events_at) >= wanted,
                   MOMENT_TIMEOUT_S, 0.005)
        ballast.unlink()
        rec.plan["ballast_removed_while_running"] = p.poll() is None
    return finish(trial, rec, p)


def flip_bytes(path, rng, count):
    """XORs `count` random bytes of a file with random non-zero masks, in place."""
    size = path.stat().st_size
    flips = []
    with open(path, "r+b") as f:
        for _ in range(count):
            at = rng.randrange(size)
            mask = rng.randint(1, 255)
            f.seek(at)
            b = f.read(1)[0]
            f.seek(at)
            f.write(bytes([b ^ mask]))
            flips.append(at)
    return flips


def data_corrupt(trial, rng, dataset):
    steps = rng.randint(150, 400)
    data = trial.dir / "data"
    shutil.copytree(dataset, data)
    shards = sorted(str(s.relative_to(data)) for s in data.glob("*/*.tar"))
    plan = {"steps": steps, "shard": rng.choice(shards), "flips": rng.choice([1, 4, 16, 64]),
            "when": rng.choice(["before_start", "while_running"])}
    plan["moment"] = pick_moment(rng, steps)
    rec = FaultRecord("data_corrupt", steps, trial, plan)
    sources = [("images", data / "images", "image", 0.5), ("videos", data / "videos", "video", 0.3),
               ("text", data / "text", "text", 0.2)]
    trial.write_config(job_toml("soak-data", steps, rng.randint(1, 10**6), 1, sources, image_size=32,
                                max_seq_len=128))
    if plan["when"] == "before_start":
        rec.plan["offsets"] = flip_bytes(data / plan["shard"], rng, plan["flips"])
        rec.mark_fault(trial, floor=0)
        return finish(trial, rec, trial.start_job())
    p = trial.start_job()
    if not wait_moment(trial, p, plan["moment"]):
        return finish(trial, rec, p)
    rec.mark_fault(trial)
    rec.plan["offsets"] = flip_bytes(data / plan["shard"], rng, plan["flips"])
    return finish(trial, rec, p)


def ckpt_corrupt(trial, rng, dataset):
    steps = rng.randint(400, 1000)
    plan = {"steps": steps, "stop_after_checkpoint": rng.randint(20, int(steps * 0.6)),
            "stop_with": rng.choice(["SIGTERM", "SIGKILL"])}
    rec = FaultRecord("ckpt_corrupt", steps, trial, plan)
    trial.write_config(job_toml("soak", steps, rng.randint(1, 10**6), 1, SYNTHETIC))
    p = trial.start_job()
    wait_until(lambda: p.poll() is not None or latest_step(trial.checkpoint_dir) >= plan["stop_after_checkpoint"],
               MOMENT_TIMEOUT_S, 0.005)
    if p.poll() is not None:
        return finish(trial, rec, p)
    kill(p.pid, signal.SIGTERM if plan["stop_with"] == "SIGTERM" else signal.SIGKILL)
    first = wait_process(p, 60)
    rec.plan["first_exit"] = first
    if first is None:
        rec.notes.append(f"msomni-run did not end within 60 s of {plan['stop_with']}; SIGKILLed")
        kill(p.pid)
        p.wait()
        return rec
    committed = sorted(trial.checkpoint_dir.glob("step-*"), key=lambda d: d.name)
    if not committed:
        rec.notes.append("no committed checkpoint to corrupt")
        return rerun(trial, rec)
    newest = committed[-1]
    target = rng.choice(sorted(f for f in newest.iterdir() if f.is_file()))
    rec.plan["corrupted"] = f"{newest.name}/{target.name}"
    rec.plan["offsets"] = flip_bytes(target, rng, 1)
    rec.verified = verify_checkpoints(trial.bin.cli, trial.checkpoint_dir)
    corrupted_step = int(newest.name.split("-")[1])
    still_good = rec.verified.get(corrupted_step, (False, ""))[0]
    rec.plan["corrupted_still_verifies"] = still_good
    good = [s for s, (ok, _) in rec.verified.items() if ok]
    rec.mark_fault(trial, floor=max(good) if good else 0)
    return rerun(trial, rec)


FAULTS = {
    "control_kill": control_kill,
    "rank_kill": rank_kill,
    "agent_kill": agent_kill,
    "full_disk": full_disk,
    "data_corrupt": data_corrupt,
    "ckpt_corrupt": ckpt_corrupt,
}
