#!/usr/bin/env python3
"""Summarises the JSON files bench_matrix.py left in a directory: per (trace, GPUs), the busy
utilisation gain of omni and greedy over exclusive, their critical slowdown against the
critical jobs alone, the demand ceiling's gain over exclusive -- the trace's own bound on
what any policy could show (msomni-sim's demand_ceiling_utilization) -- and how much of
that omni reached, one column per seed found.

usage: bench_summary.py DIR [DIR ...]
"""
import glob
import json
import os
import re
import sys
from collections import defaultdict

NAME = re.compile(r"^(?P<run>.+)-(?P<gpus>\d+)-(?P<policy>exclusive|greedy|omni)-s(?P<seed>\d+)\.json$")


def main():
    runs = defaultdict(dict)  # (run, gpus) -> {(policy, seed): json}
    for d in sys.argv[1:]:
        for path in glob.glob(os.path.join(d, "*.json")):
            m = NAME.match(os.path.basename(path))
            if m:
                runs[(m["run"], int(m["gpus"]))][(m["policy"], int(m["seed"]))] = json.load(open(path))
    print("| trace | GPUs | seeds | omni busy vs exclusive | greedy busy vs exclusive | "
          "omni crit slowdown vs alone | greedy crit slowdown vs alone | "
          "exclusive crit slowdown vs alone | demand ceiling vs exclusive | omni share of the ceiling's gain | "
          "omni guest busy / critical idle |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (run, gpus), res in sorted(runs.items()):
        seeds = sorted({s for (p, s) in res if all((q, s) in res for q in ("exclusive", "greedy", "omni"))})
        if not seeds:
            continue
        cols = defaultdict(list)
        for s in seeds:
            ex, gr, om = res[("exclusive", s)], res[("greedy", s)], res[("omni", s)]
            b = ex["busy_utilization"]
            cols["omni"].append(f"{(om['busy_utilization'] / b - 1) * 100:+.1f}%")
            cols["greedy"].append(f"{(gr['busy_utilization'] / b - 1) * 100:+.1f}%")
            for k, d in (("so", om), ("sg", gr), ("se", ex)):
                cols[k].append(f"{d['critical_slowdown'] * 100:.2f}%")
            ceiling = ex["demand_ceiling_utilization"] / b - 1
            cols["ceil"].append(f"{ceiling * 100:+.1f}%")
            reach = (om["busy_utilization"] / b - 1) / ceiling if ceiling > 1e-9 else float("nan")
            cols["reach"].append(f"{reach * 100:.0f}%" if ceiling > 0.001 else "-")
            idle = om["critical_idle_utilization"]
            cols["lent"].append(f"{om['guest_busy_utilization'] / idle:.2f}" if idle > 0 else "-")
        j = lambda k: " / ".join(cols[k])
        print(f"| {run} | {gpus} | {' / '.join(map(str, seeds))} | {j('omni')} | {j('greedy')} | "
              f"{j('so')} | {j('sg')} | {j('se')} | {j('ceil')} | {j('reach')} | {j('lent')} |")


if __name__ == "__main__":
    main()
