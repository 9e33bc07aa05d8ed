#!/usr/bin/python3
"""msomni plot: one PNG of a run directory's metrics.jsonl and events.jsonl.

Panels against the step: loss, step time, tokens/s, data wait and world size; elastic events
(resizes, failures, recoveries, rollbacks) are vertical marks on every panel. Reads the
effective curve: a metrics line of a later attempt replaces every earlier line of the same or
a later step (docs/run_directory.md). Run by `msomni plot RUN_DIR [--out FILE.png]` with
Debian's /usr/bin/python3 and python3-matplotlib.

Exit codes: 0 written, 1 nothing to plot or the PNG cannot be written, 2 usage.
"""
import argparse
import json
import os
import sys

ELASTIC = {
    "scale_down", "scale_down_done", "scale_up", "scale_up_done", "scale_up_join", "autoscale",
    "rank_down", "agent_down", "recovery", "recovered", "replacement", "grace_period_expired",
    "scale_up_incomplete", "training_rollback", "attempt_started", "job_stopped", "job_failed",
}
# Mark colours by what happened: losses red, recoveries green, resizes blue, the rest grey.
COLOURS = {
    "rank_down": "tab:red", "agent_down": "tab:red", "job_failed": "tab:red", "training_rollback": "tab:red",
    "recovery": "tab:orange", "recovered": "tab:green", "scale_down": "tab:blue", "scale_down_done": "tab:blue",
    "scale_up": "tab:cyan", "scale_up_done": "tab:cyan", "scale_up_join": "tab:cyan", "autoscale": "tab:purple",
}


def read_lines(path):
    out = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass  # a torn last line of a run still going
    except FileNotFoundError:
        pass
    return out


def effective_curve(records):
    by_step = {}
    for r in records:
        step = r.get("step")
        if not isinstance(step, int):
            continue
        for s in [s for s in by_step if s >= step]:
            del by_step[s]
        by_step[step] = r
    return [by_step[s] for s in sorted(by_step)]


def series(curve, key):
    xs, ys = [], []
    for r in curve:
        v = r.get(key)
        if isinstance(v, (int, float)):
            xs.append(r["step"])
            ys.append(v)
    return xs, ys


def main(argv):
    p = argparse.ArgumentParser(prog="msomni plot", description=__doc__.splitlines()[0])
    p.add_argument("run_dir")
    p.add_argument("--out", help="the PNG to write (default RUN_DIR/run.png)")
    a = p.parse_args(argv)
    metrics = os.path.join(a.run_dir, "metrics.jsonl")
    curve = effective_curve(read_lines(metrics))
    if not curve:
        print(f"msomni plot: no step recorded in {metrics}", file=sys.stderr)
        return 1
    events = [e for e in read_lines(os.path.join(a.run_dir, "events.jsonl"))
              if e.get("kind", e.get("event")) in ELASTIC and isinstance(e.get("step"), int)]
    out = a.out or os.path.join(a.run_dir, "run.png")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print(f"msomni plot: {sys.executable} has no matplotlib ({e}); install python3-matplotlib "
              "(tools/bootstrap.sh does)", file=sys.stderr)
        return 1

    panels = [("loss", "loss"), ("step_time_ms", "step time (ms)"), ("tokens_per_s", "tokens/s"),
              ("data_wait_ms", "data wait (ms)"), ("world_size", "world size")]
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 11), sharex=True)
    title = os.path.basename(os.path.abspath(a.run_dir))
    summary = read_lines(os.path.join(a.run_dir, "summary.json"))
    if summary:
        s = summary[0]
        title += f"  ({s.get('state', '?')}, step {s.get('steps', {}).get('done', '?')}/{s.get('steps', {}).get('total', '?')})"
    fig.suptitle(title)
    for ax, (key, label) in zip(axes, panels):
        xs, ys = series(curve, key)
        if key == "world_size":
            ax.step(xs, ys, where="post", color="black")
            ax.set_ylim(bottom=0, top=max(ys + [1]) + 1)
        else:
            ax.plot(xs, ys, linewidth=1)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        for e in events:
            kind = e.get("kind", e.get("event"))
            ax.axvline(e["step"], color=COLOURS.get(kind, "grey"), alpha=0.6, linewidth=1, linestyle="--")
    # Name each kind once, in the top panel's legend.
    seen = {}
    for e in events:
        kind = e.get("kind", e.get("event"))
        seen.setdefault(kind, COLOURS.get(kind, "grey"))
    if seen:
        from matplotlib.lines import Line2D
        axes[0].legend([Line2D([0], [0], color=c, linestyle="--") for c in seen.values()], list(seen.keys()),
                       fontsize="small", loc="upper right")
    axes[-1].set_xlabel("step")
    fig.tight_layout()
    try:
        fig.savefig(out, format="png", dpi=100)
    except OSError as e:
        print(f"msomni plot: cannot write {out}: {e}", file=sys.stderr)
        return 1
    print(f"msomni plot: wrote {out} ({len(curve)} steps, {len(events)} elastic events)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
