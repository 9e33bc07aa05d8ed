#!/usr/bin/env python3
"""A seeded fault soak over real msomni jobs: each trial runs a small job (msomni-run, its
msomni-rank processes over UCX, msomni-agent nodes for the multi-node kind), injects one
fault, and checks the invariants in soak_checks.py. Not part of CI: 200 trials take about
half an hour on a 2-core machine.

Fault kinds, in equal shares (each block of len(kinds) trials is a seeded permutation):
  control_kill  SIGKILL of msomni-run at a random moment, then the same command to its end
  rank_kill     SIGKILL of one msomni-rank; the job recovers by itself
  agent_kill    two msomni-agent nodes of 1 slot; SIGKILL of one (sometimes it rejoins)
  full_disk     checkpoint.dir on a 16 MiB tmpfs that a ballast file fills mid-run
  data_corrupt  bytes flipped in a shard of a generated dataset (before or while training)
  ckpt_corrupt  stop (SIGTERM or SIGKILL), flip a byte of the newest checkpoint, rerun

Each trial runs in DIR/trial-NNNN, removed afterwards unless it broke an invariant; a broken
trial prints its seed, number and the command that replays it alone.

usage: fault_soak.py --build BUILD [--trials 200] [--seed 1] [--kinds K,K] [--only-trial N]
                     [--out DIR] [--json FILE] [--keep-all]
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))

from soak_checks import evaluate, metrics_report  # noqa: E402
from soak_faults import FAULTS  # noqa: E402
from soak_trial import SYNTHETIC, Binaries, Trial, job_toml, wait_process  # noqa: E402

KINDS = list(FAULTS)
MUST_FINISH = {"control_kill", "rank_kill"}  # the job recovers from these by itself
RETRIES_ON_REBUILD = 2
# The quickstart preset's arguments (generated://quickstart): images, videos and captions.
DATASET_ARGS = ["--seed", "1234", "--images", "400", "--videos", "120", "--texts", "200", "--image-size", "32",
                "--video-size", "32", "--per-shard", "50"]
OBSERVED = ["finished_with_bad_samples", "finished_no_bad_samples", "resume_claim_mismatch",
            "latest_names_unverified", "seconds"]
COLUMNS = ["trials", "finished", "failed_with_reason", "refused_with_reason", "failed_without_reason", "hung",
           "not_injected",
           "steps_lost", "torn_loads", "unexplained_repeats", "explained_gaps", "strays", "broken"]


def kind_of(seed, number, kinds):
    block, at = divmod(number - 1, len(kinds))
    order = list(kinds)
    random.Random(f"fault-soak/{seed}/block/{block}").shuffle(order)
    return order[at]


def replay_command(args, number):
    kinds = f" --kinds {','.join(args.kinds)}" if args.kinds != KINDS else ""
    return (f"{sys.argv[0]} --build {args.build} --seed {args.seed}{kinds} --only-trial {number}")


def binaries_stamp(bins):
    stamp = []
    for p in (bins.run, bins.rank, bins.cli, bins.agent):
        try:
            stamp.append(os.stat(p).st_mtime_ns)
        except OSError:
            stamp.append(None)
    return stamp


def wait_for_build(root):
    """Waits for a build that holds the build lock (binaries are being replaced)."""
    lock = root / "tools/build_lock.sh"
    if lock.exists():
        subprocess.run([str(lock), "true"])
    time.sleep(5)


def build_description(build, repo):
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(os.stat(Binaries(build).run).st_mtime))
    return {"head": head.stdout.strip(), "msomni_run_built_utc": stamp}


def smoke_test(bins, out):
    """A plain 60-step job: the binaries are of one build and train (every step recorded)."""
    trial = Trial(out, 0, bins)
    try:
        trial.write_config(job_toml("soak-preflight", 60, 1, 1, SYNTHETIC))
        rc = wait_process(trial.start_job(), 120)
        lines = metrics_report(trial.run_dir)["lines"]
        return rc == 0 and lines == 60, f"exit {rc}, {lines} metrics lines of 60"
    finally:
        trial.close()


def ready_binaries(args, bins, out, repo, tries=6):
    """The binaries the soak runs: a snapshot of the build (unless --no-snapshot) that passes
    the smoke test; a build caught half-linked is waited for and copied again."""
    lock = repo / "tools/build_lock.sh"
    for attempt in range(tries):
        use = bins if args.no_snapshot else bins.snapshot(out / "bin", lock if lock.exists() else None)
        ok, why = smoke_test(use, out)
        if ok:
            return use
        print(f"fault soak: preflight job failed ({why}); waiting for the build", flush=True)
        wait_for_build(repo)
        time.sleep(30)
    return None


def run_trial(args, bins, out, dataset, number):
    kind = kind_of(args.seed, number, args.kinds)
    rng = random.Random(f"fault-soak/{args.seed}/trial/{number}/{kind}")
    trial = Trial(out, number, bins)
    started = time.monotonic()
    stamp = binaries_stamp(bins)
    result = {"trial": number, "seed": args.seed, "kind": kind}
    broken = []
    try:
        rec = FAULTS[kind](trial, rng, dataset)
        broken = evaluate(trial, rec, kind in MUST_FINISH)
        strays = trial.sweep_strays()
        if strays:
            broken.append("strays")
        result.update(plan=rec.plan, injected=rec.injected, exit=rec.rc, resume_floor=rec.resume_floor,
                      notes=rec.notes, strays=strays, **rec.checks)
    except Exception:  # the soak's own failure: keep the directory to see why
        broken.append("harness_error")
        result["error"] = traceback.format_exc()
    finally:
        result["rebuilt_meanwhile"] = binaries_stamp(bins) != stamp or bool(bins.missing())
        trial.keep = bool(broken) or args.keep_all
        trial.close()
    result["broken"] = broken
    result["seconds"] = round(time.monotonic() - started, 1)
    result["dir"] = str(trial.dir) if trial.keep else None
    return result


def one_line(r):
    how = r.get("outcome", "?")
    extra = ""
    if r.get("resumed_from") is not None:
        extra += f", resumed from {r['resumed_from']} (floor {r.get('resume_floor')})"
    if r["kind"] == "data_corrupt":
        extra += f", {r.get('bad_samples', 0)} bad samples"
    if not r.get("injected", True):
        extra += ", the job ended before the fault"
    return f"{r['kind']}: {how}{extra} in {r['seconds']} s"


def tally(results, kinds):
    table = {k: dict.fromkeys(COLUMNS, 0) for k in kinds}
    for r in results:
        row = table[r["kind"]]
        row["trials"] += 1
        outcome = r.get("outcome")
        if outcome in row:
            row[outcome] += 1
        elif outcome == "exit_0_without_job_finished":
            row["failed_without_reason"] += 1
        row["not_injected"] += 0 if r.get("injected", True) else 1
        row["steps_lost"] += r.get("steps_lost", 0)
        row["torn_loads"] += r.get("torn_loads", 0)
        row["unexplained_repeats"] += r.get("unexplained_repeats", 0)
        row["explained_gaps"] += len(r.get("explained_gaps", []))
        row["strays"] += len(r.get("strays", []))
        row["broken"] += 1 if r["broken"] else 0
    table["all"] = {c: sum(table[k][c] for k in kinds) for c in COLUMNS}
    return table


def observations(results, kinds):
    """What is not an invariant but worth reading: how data faults ended, and whether
    attempt_started named the step the ranks actually resumed from."""
    table = {k: dict.fromkeys(OBSERVED, 0) for k in kinds}
    for r in results:
        row = table[r["kind"]]
        finished = r.get("outcome") == "finished" and r["kind"] == "data_corrupt"
        row["finished_with_bad_samples"] += finished and r.get("bad_samples", 0) > 0
        row["finished_no_bad_samples"] += finished and r.get("bad_samples", 0) == 0
        row["resume_claim_mismatch"] += bool(r.get("resume_claim_mismatch"))
        row["latest_names_unverified"] += bool(r.get("latest_names_unverified"))
        row["seconds"] += r["seconds"]
    for row in table.values():
        row["seconds"] = round(row["seconds"])
    return table


def print_table(table, columns):
    names = list(table)
    width = max(len(n) for n in names) + 2
    print("".ljust(width) + " ".join(c.rjust(len(c)) for c in columns))
    for n in names:
        print(n.ljust(width) + " ".join(str(table[n][c]).rjust(len(c)) for c in columns))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="the build directory (build/apps/..., build/tools/...)")
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated subset of " + ",".join(KINDS))
    ap.add_argument("--only-trial", type=int, help="run this trial number alone (as it ran in the full soak)")
    ap.add_argument("--out", help="where trial directories go (default: a new temporary directory)")
    ap.add_argument("--json", help="write the summary and every trial's record here")
    ap.add_argument("--keep-all", action="store_true", help="keep every trial directory, not only broken ones")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="run the build's binaries in place instead of a copy taken under the build lock")
    args = ap.parse_args()
    requested = set(args.kinds.split(","))
    args.kinds = [k for k in KINDS if k in requested]
    unknown = requested - set(KINDS)
    if unknown or not args.kinds:
        ap.error(f"unknown kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
    if os.geteuid() != 0 and "full_disk" in args.kinds:
        ap.error("full_disk mounts a tmpfs: run as root or leave it out of --kinds")
    bins = Binaries(args.build)
    if bins.missing():
        ap.error("not built: " + ", ".join(bins.missing()))
    out = Path(args.out or tempfile.mkdtemp(prefix="msomni-fault-soak-")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    repo = Path(__file__).resolve().parents[2]
    bins = ready_binaries(args, bins, out, repo)
    if bins is None:
        print("fault soak: the build does not run a plain job; nothing soaked", file=sys.stderr)
        return 2
    dataset = out / "dataset"
    if "data_corrupt" in args.kinds and not (dataset / "images").is_dir():
        subprocess.run([str(bins.gen_dataset), "--out", str(dataset), *DATASET_ARGS], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    numbers = [args.only_trial] if args.only_trial else list(range(1, args.trials + 1))
    print(f"fault soak: seed {args.seed}, {len(numbers)} trials, kinds {','.join(args.kinds)}, under {out}", flush=True)
    results = []
    started = time.monotonic()
    log = open(out / "trials.jsonl", "a")
    for number in numbers:
        for attempt in range(RETRIES_ON_REBUILD + 1):
            r = run_trial(args, bins, out, dataset, number)
            if not (r["broken"] and r["rebuilt_meanwhile"]) or attempt == RETRIES_ON_REBUILD:
                break
            print(f"trial {number}: the binaries changed during it; waiting for the build and running it again",
                  flush=True)
            if r["dir"]:
                shutil.rmtree(r["dir"], ignore_errors=True)
            wait_for_build(repo)
        results.append(r)
        log.write(json.dumps(r, default=str) + "\n")
        log.flush()
        print(f"trial {number}/{numbers[-1]} {one_line(r)}", flush=True)
        if r["broken"]:
            print(f"  BROKEN seed {args.seed} trial {number} ({r['kind']}): {', '.join(r['broken'])}\n"
                  f"  kept {r['dir']}\n  replay: {replay_command(args, number)}", flush=True)
    log.close()
    table = tally(results, args.kinds)
    elapsed = round(time.monotonic() - started)
    print(f"\nfault soak, seed {args.seed}: {len(results)} trials in {elapsed} s")
    print_table(table, COLUMNS)
    observed = observations(results, args.kinds)
    print()
    print_table(observed, OBSERVED)
    broken = [r for r in results if r["broken"]]
    for r in broken:
        print(f"broken: trial {r['trial']} ({r['kind']}): {', '.join(r['broken'])}; kept {r['dir']}; "
              f"replay: {replay_command(args, r['trial'])}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seed": args.seed, "trials": len(results), "elapsed_s": elapsed, "kinds": args.kinds,
                       "build": build_description(args.build, repo),
                       "table": table, "observed": observed, "broken": broken, "results": results}, f, indent=1, default=str)
    if not broken and not args.keep_all and not args.out:
        shutil.rmtree(out, ignore_errors=True)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
