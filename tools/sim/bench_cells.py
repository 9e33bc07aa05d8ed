#!/usr/bin/env python3
"""The scheduler's acceptance matrix: for each cell (trace, cluster size) and seed, runs
msomni-sim under exclusive, greedy and omni (--classes size) and prints one markdown row per
cell and seed with the lines omni is held to:
  - mean critical slowdown (against the critical jobs alone) < 1%, and the worst single
    critical job's loss to co-location < 2% of its duration;
  - regular and best-effort mean and p95 JCT <= both greedy's and exclusive's;
  - busy utilisation >= greedy's, and omni's gain over exclusive >= 70% of the demand
    ceiling's gain wherever that gain is >= 5%.
Beside them: the jobs each policy rejected (a JCT is over the jobs a policy completed, so a
policy that turned more jobs away averages over fewer), omni's busy utilisation against the
demand ceiling, and the critical idle time its idle threshold kept from guests (share of
capacity, critical_idle_split.below_threshold). Each run's JSON is kept in --out-dir (NAME-GPUS-POLICY-sSEED.json, as bench_matrix.py names
them, so bench_summary.py reads them too); a run whose JSON is there is not repeated, except
omni's with --rerun-omni. --omni-tag names omni's files differently (an ablation beside the
default), and the flags after `--` go to omni's runs only.

A cell is NAME=TRACE:GPUS[:GPUS_PER_NODE]. Loads: a cell's GPUs at load 1 are the trace's mean
offered demand rounded up to whole nodes; at load L they are that size / L, again rounded up
to whole nodes (--load L does the division for every cell given at load 1).

usage: bench_cells.py --sim build-sched/tools/sim/msomni-sim --out-dir DIR [--seeds 1,2,3]
           [--load L] [--omni-tag TAG] [--rerun-omni] --cell NAME=TRACE:GPUS[:PER_NODE] ...
           [-- omni-only msomni-sim flags]
"""
import argparse
import json
import math
import os
import subprocess
import sys

POLICIES = ["exclusive", "greedy", "omni"]


def jct(d, klass, field):
    c = d["classes_stats"].get(klass)
    return c[field] / 3600 if c and c["completed"] else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--load", type=float, default=1.0)
    ap.add_argument("--omni-tag", default="omni")
    ap.add_argument("--rerun-omni", action="store_true")
    ap.add_argument("--cell", action="append", required=True, help="NAME=TRACE:GPUS[:GPUS_PER_NODE]")
    ap.add_argument("extra", nargs="*", help="passed to omni's msomni-sim runs (after --)")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    print("| trace | load | GPUs | seed | busy vs exclusive: omni / greedy / ceiling | omni share of the ceiling's gain | "
          "crit slowdown mean: omni / greedy | worst co-located crit job | regular JCT mean (h): omni / greedy / exclusive | "
          "regular JCT p95 (h) | best-effort JCT mean (h) | best-effort JCT p95 (h) | "
          "rejected: omni / greedy / exclusive | omni busy / ceiling, idle under the threshold | lines missed |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for spec in a.cell:
        name, rest = spec.split("=", 1)
        parts = rest.split(":")
        trace, per_node = parts[0], int(parts[2]) if len(parts) > 2 else 8
        gpus = math.ceil(int(parts[1]) / a.load / per_node) * per_node
        for seed in a.seeds.split(","):
            d = {}
            for p in POLICIES:
                label = a.omni_tag if p == "omni" else p
                out = os.path.join(a.out_dir, f"{name}-{gpus}-{label}-s{seed}.json")
                if not os.path.exists(out) or (p == "omni" and a.rerun_omni):
                    cmd = [a.sim, "--trace", trace, "--policy", p, "--gpus", str(gpus), "--gpus-per-node",
                           str(per_node), "--seed", seed, "--classes", "size", "--out", out]
                    subprocess.run(cmd + (a.extra if p == "omni" else []), check=True, stdout=subprocess.DEVNULL)
                d[p] = json.load(open(out))
            ex = d["exclusive"]["busy_utilization"]
            gain = {p: d[p]["busy_utilization"] / ex - 1 for p in ("greedy", "omni")}
            ceiling = d["omni"]["demand_ceiling_utilization"] / ex - 1
            o = d["omni"]
            missed = []
            if o["critical_slowdown"] >= 0.01:
                missed.append("crit mean")
            if o["critical_colocation_slowdown_max"] >= 0.02:
                missed.append("crit worst")
            cols = []
            for klass, short in (("regular", "R"), ("best_effort", "BE")):
                for field, f in (("jct_mean_s", "mean"), ("jct_p95_s", "p95")):
                    v = [jct(d[p], klass, field) for p in ("omni", "greedy", "exclusive")]
                    cols.append(" / ".join(f"{x:.1f}" for x in v))
                    if v[0] > min(v[1], v[2]) * (1 + 1e-9):
                        missed.append(f"{short} {f}" + (" (greedy)" if v[0] > v[1] else "") +
                                      (" (exclusive)" if v[0] > v[2] else ""))
            if gain["omni"] < gain["greedy"]:
                missed.append("busy < greedy")
            if ceiling >= 0.05 and gain["omni"] < 0.7 * ceiling:
                missed.append("busy < 70% of ceiling")
            if sum(o["invariants"].values()):
                missed.append("INVARIANTS")
            share = f"{gain['omni'] / ceiling * 100:.0f}%" if ceiling >= 0.05 else "- (ceiling < 5%)"
            print(f"| {name} | {a.load:g} | {gpus} | {seed} | {gain['omni'] * 100:+.1f}% / {gain['greedy'] * 100:+.1f}% / "
                  f"{ceiling * 100:+.1f}% | {share} | {o['critical_slowdown'] * 100:.2f}% / "
                  f"{d['greedy']['critical_slowdown'] * 100:.2f}% | {o['critical_colocation_slowdown_max'] * 100:.2f}% | "
                  f"{' | '.join(cols)} | {o['rejected']} / {d['greedy']['rejected']} / {d['exclusive']['rejected']} | "
                  f"{o['busy_utilization']:.3f} / {o['demand_ceiling_utilization']:.3f}, "
                  f"{o['critical_idle_split']['below_threshold']:.3f} | {', '.join(missed) if missed else 'none'} |", flush=True)


if __name__ == "__main__":
    main()
