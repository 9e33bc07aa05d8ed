#!/usr/bin/env python3
"""Runs msomni-sim for every (trace, cluster size, policy) given and prints one markdown
table side by side, plus the gain of omni and greedy over exclusive. Each run's JSON is kept
in --out-dir. The BENCHMARKS.md scheduler table comes from this script.

usage: bench_matrix.py --sim build-sched/tools/sim/msomni-sim --out-dir DIR \
           --run NAME=TRACE:GPUS[:GPUS_PER_NODE] ... [--seed S] [-- extra msomni-sim flags]
"""
import argparse
import json
import os
import subprocess
import sys
import time

POLICIES = ["exclusive", "greedy", "omni"]


def run_one(sim, trace, gpus, per_node, policy, seed, out, extra):
    cmd = [sim, "--trace", trace, "--policy", policy, "--gpus", str(gpus),
           "--gpus-per-node", str(per_node), "--seed", str(seed), "--out", out] + extra
    t = time.monotonic()
    subprocess.run(cmd, check=True)
    return json.load(open(out)), time.monotonic() - t


def jct(d, k):
    c = d["classes_stats"].get(k)
    if not c or not c["completed"]:
        return "-"
    return f"{c['jct_mean_s'] / 3600:.1f} / {c['jct_p95_s'] / 3600:.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--run", action="append", required=True,
                    help="NAME=TRACE:GPUS[:GPUS_PER_NODE]")
    ap.add_argument("extra", nargs="*", help="passed to msomni-sim (after --)")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    rows = []
    for spec in a.run:
        name, rest = spec.split("=", 1)
        parts = rest.split(":")
        trace, gpus = parts[0], int(parts[1])
        per_node = int(parts[2]) if len(parts) > 2 else 8
        res = {}
        for p in POLICIES:
            out = os.path.join(a.out_dir, f"{name}-{gpus}-{p}-s{a.seed}.json")
            d, _ = run_one(a.sim, trace, gpus, per_node, p, a.seed, out, a.extra)
            res[p] = d
        ex = res["exclusive"]["busy_utilization"]
        for p in POLICIES:
            d = res[p]
            bad = sum(d["invariants"].values())
            gain = "-" if p == "exclusive" else f"{(d['busy_utilization'] / ex - 1) * 100:+.1f}%"
            rows.append(
                f"| {name} | {gpus} | {p} | {d['allocated_utilization']:.3f} | "
                f"{d['busy_utilization']:.3f} | {gain} | "
                f"{d['allocated_utilization'] - d['busy_utilization']:.3f} | "
                f"{d.get('free_while_waiting_utilization', float('nan')):.3f} | "
                f"{d['critical_idle_utilization']:.3f} | {d['guest_busy_utilization']:.3f} | "
                f"{d['critical_slowdown'] * 100:.2f}% | "
                f"{d['critical_slowdown_empty_cluster'] * 100:.1f}% = {d['critical_queue_slowdown'] * 100:.1f}% + "
                f"{d['critical_colocation_slowdown'] * 100:.2f}% | "
                f"{jct(d, 'critical')} | {jct(d, 'regular')} | {jct(d, 'best_effort')} | "
                f"{d['preemptions']} | {d['preempted_gpu_hours_lost']:.0f} | {d['rejected']} | "
                f"{'ok' if bad == 0 else 'VIOLATED'} |")
            print(rows[-1], file=sys.stderr, flush=True)
    print("| trace | GPUs | policy | alloc util | busy util | busy vs exclusive | "
          "allocated but idle | free while jobs wait | critical idle | guest busy | "
          "crit slowdown vs crit alone | crit slowdown vs empty cluster = queue + co-location | "
          "JCT crit mean / p95 (h) | "
          "JCT regular mean / p95 (h) | JCT best-effort mean / p95 (h) | preemptions | "
          "GPU-h lost to preemption | rejected | invariants |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
