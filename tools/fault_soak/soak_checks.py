"""What a trial left behind, read back and held against the invariants.

  steps lost           the newest checkpoint committed before the fault (or, when the trial
                       corrupted the newest, the newest one that still verified) is newer
                       than the step some rank resumed from after the fault
  torn loads           a rank loaded a checkpoint that did not verify
  unexplained repeats  a step recorded twice in metrics.jsonl under the same attempt
  outcome              finished (exit 0 and job_finished) or failed with a reason (exit != 0
                       and job_failed with a non-empty reason); anything else, or a job still
                       running after its timeout (hung), breaks it
  strays               an msomni process of the trial still alive after the trial
  checkpoint lost      no checkpoint at least as new as the last good one verifies at the end
  gaps                 a finished job whose metrics miss a step that no steps_unrecorded
                       event names (the steps such an event names are counted apart, as
                       explained gaps: trained, in the checkpoint, their records lost)
  below min replicas   a step recorded at a world size under elasticity.min_replicas
  failed without fault a job that ended before its fault's moment and did not finish
"""
import json
import re
import subprocess
from collections import Counter
from pathlib import Path

JOINED = re.compile(r"^JOINED epoch (\d+) as rank (\d+) of (\d+) \(grad_accum \d+\) at step (\d+) from (.*)$", re.M)
LOADED = re.compile(r"^loaded step (\d+) \(verified\)", re.M)
SKIPPED = re.compile(r"^skipped (step-\d+): (.*)$", re.M)
ATTEMPT = re.compile(r"^attempt \d+ resumes from step (\d+)")
VERIFY = re.compile(r"^(OK|FAIL)\s+step-(\d+): (.*)$", re.M)


def read_jsonl(path, offset=0):
    """The JSON objects of a journal from byte `offset` on, and how many lines did not parse."""
    rows, torn = [], 0
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read().decode(errors="replace")
    except OSError:
        return rows, torn
    for line in data.splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            torn += 1
    return rows, torn


def file_size(path):
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def verify_checkpoints(cli, checkpoint_dir):
    """{step: (verifies, detail)} as `msomni ckpt verify` finds them."""
    if not Path(checkpoint_dir).is_dir():
        return {}
    r = subprocess.run([str(cli), "ckpt", "verify", str(checkpoint_dir)], capture_output=True, text=True,
                       timeout=120)
    return {int(m.group(2)): (m.group(1) == "OK", m.group(3)) for m in VERIFY.finditer(r.stdout + r.stderr)}


def resumes(log_texts):
    """From rank-log text written after a fault: the steps ranks joined at, the checkpoint
    steps they loaded, and the checkpoints they skipped with why."""
    joined, loaded, skipped = [], [], []
    for name, text in log_texts.items():
        who = Path(name).stem
        joined += [(who, int(m.group(4)), m.group(5)) for m in JOINED.finditer(text)]
        loaded += [(who, int(m.group(1))) for m in LOADED.finditer(text)]
        skipped += [(who, m.group(1), m.group(2)) for m in SKIPPED.finditer(text)]
    return joined, loaded, skipped


def metrics_report(run_dir):
    rows, torn = read_jsonl(Path(run_dir) / "metrics.jsonl")
    seen = Counter((r.get("step"), r.get("attempt")) for r in rows)
    repeats = sorted(k for k, n in seen.items() if n > 1)
    bad = sum(sum(r.get("bad_samples", {}).values()) for r in rows if isinstance(r.get("bad_samples"), dict))
    return {
        "lines": len(rows),
        "torn_lines": torn,
        "steps": {r.get("step") for r in rows},
        "without_attempt": sum(1 for r in rows if "attempt" not in r),
        "unexplained_repeats": repeats,
        "bad_samples": bad,
        "smallest_world": min((r.get("world_size", 0) for r in rows), default=None),
    }


# msomni-run's exit when its pre-flight check failed: nothing started, the reason on its output.
PREFLIGHT_REFUSED = 3
FAILED_CHECK = re.compile(r"^(\S+)\s+fail\s", re.M)  # a row of the health-check table


def outcome_of(rc, events, run_output=""):
    """finished / failed_with_reason / refused_with_reason / failed_without_reason / hung, and
    the reason. A start the pre-flight refused (exit 3, a disk already full, say) journals no
    job_failed: its reason is the failed check that msomni-run printed."""
    if rc is None:
        return "hung", ""
    if rc == PREFLIGHT_REFUSED and "pre-flight check failed" in run_output:
        failed_checks = FAILED_CHECK.findall(run_output)
        return "refused_with_reason", "pre-flight failed: " + (", ".join(failed_checks) or "see the output")
    finished = [e for e in events if e.get("event") == "job_finished"]
    failed = [e for e in events if e.get("event") == "job_failed"]
    if rc == 0:
        return ("finished", finished[-1].get("reason", "")) if finished else ("exit_0_without_job_finished", "")
    if failed and failed[-1].get("reason", "").strip():
        return "failed_with_reason", failed[-1]["reason"]
    return "failed_without_reason", ""


def evaluate(trial, fault, must_finish):
    """The invariants over what `fault` (a FaultRecord) saw; fills fault.checks and returns
    the list of broken ones."""
    c = fault.checks
    broken = []
    events, _ = read_jsonl(trial.run_dir / "events.jsonl", fault.last_events_offset)
    outputs = sorted(trial.dir.glob("msomni-run-*.out"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    last_output = outputs[-1].read_text(errors="replace") if outputs else ""
    c["outcome"], c["reason"] = outcome_of(fault.rc, events, last_output)
    if c["outcome"] not in ("finished", "failed_with_reason", "refused_with_reason"):
        broken.append(c["outcome"])
    elif must_finish and c["outcome"] != "finished":
        broken.append("did_not_recover")
    elif not fault.injected and c["outcome"] != "finished":
        broken.append("failed_without_fault")  # the job ended before the fault, yet not well

    m = metrics_report(trial.run_dir)
    c["metric_lines"] = m["lines"]
    c["bad_samples"] = m["bad_samples"]
    c["unexplained_repeats"] = len(m["unexplained_repeats"])
    if m["unexplained_repeats"]:
        c["repeated"] = [list(k) for k in m["unexplained_repeats"][:20]]
        broken.append("unexplained_repeats")
    if m["without_attempt"] or m["torn_lines"]:
        c["metric_lines_without_attempt"] = m["without_attempt"]
        c["metric_lines_torn"] = m["torn_lines"]
        broken.append("metrics_lines_malformed")
    if m["smallest_world"] is not None and m["smallest_world"] < fault.plan.get("min_replicas", 1):
        c["smallest_world"] = m["smallest_world"]
        broken.append("below_min_replicas")
    if c["outcome"] == "finished":
        named = set()
        for e in read_jsonl(trial.run_dir / "events.jsonl")[0]:
            if e.get("event") == "steps_unrecorded" and "first" in e and "last" in e:
                named.update(range(int(e["first"]), int(e["last"]) + 1))
        gaps = [s for s in range(1, fault.steps + 1) if s not in m["steps"]]
        explained = [s for s in gaps if s in named]
        gaps = [s for s in gaps if s not in named]
        if explained:
            c["explained_gaps"] = explained[:20]
        if gaps:
            c["gaps"] = gaps[:20]
            broken.append("gaps")

    joined, loaded, skipped = resumes(trial.logs_since(fault.log_offsets)) if fault.log_offsets is not None else ([], [], [])
    c["joined"] = [f"{who} at step {step} from {how}" for who, step, how in joined]
    c["loaded"] = sorted({s for _, s in loaded})
    c["skipped"] = sorted({f"{ck}: {why}" for _, ck, why in skipped})
    c["steps_lost"] = 0
    if fault.resume_floor and joined:
        lowest = min(step for _, step, _ in joined)
        c["resumed_from"] = lowest
        if lowest < fault.resume_floor:
            c["steps_lost"] = fault.resume_floor - lowest
            broken.append("steps_lost")
    # attempt_started says where each attempt resumes; the ranks say where they did.
    claims = resume_claims(read_jsonl(trial.run_dir / "events.jsonl", fault.events_at_fault)[0])
    if claims and joined:
        c["attempt_claims"] = claims
        c["resume_claim_mismatch"] = any(s not in {step for _, step, _ in joined} for s in claims)

    final = verify_checkpoints(trial.bin.cli, fault.checkpoint_dir)
    good = [s for s, (ok, _) in final.items() if ok]
    c["newest_verified_at_end"] = max(good) if good else 0
    if fault.resume_floor and (not good or max(good) < fault.resume_floor):
        c["checkpoints_at_end"] = {str(s): detail for s, (_, detail) in sorted(final.items())}
        broken.append("checkpoint_lost")
    c["latest_at_end"] = read_latest(fault.checkpoint_dir)
    if c["latest_at_end"] and c["latest_at_end"] not in good:
        c["latest_names_unverified"] = True

    # A load counts as torn when what was loaded failed verification right after the fault or
    # (if it is still there) at the end.
    bad_steps = {s for s, (ok, _) in list(fault.verified.items()) + list(final.items()) if not ok}
    c["torn_loads"] = sum(1 for _, s in loaded if s in bad_steps)
    if c["torn_loads"]:
        broken.append("torn_loads")
    return broken


def resume_claims(events):
    """The steps attempt_started events say each attempt resumes from."""
    out = []
    for e in events:
        m = ATTEMPT.match(e.get("reason", "")) if e.get("event") == "attempt_started" else None
        if m:
            out.append(int(m.group(1)))
    return out


def read_latest(checkpoint_dir):
    try:
        text = (Path(checkpoint_dir) / "latest").read_text().strip()
        return int(text.split("-")[1]) if text.startswith("step-") else None
    except (OSError, IndexError, ValueError):
        return None
