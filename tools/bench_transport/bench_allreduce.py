#!/usr/bin/env python3
"""All-reduce bus bandwidth, msomni vs Gloo (torch.distributed) vs OpenMPI, 2 and 4
processes on this machine, 4 KiB..64 MiB, in one run. "msomni" is what a job runs (on one
host: the same-host path, buffers read by cross-memory attach); "msomni-ucx" is the ring of
UCX frames it uses across hosts (--same-host 0). Each repetition runs them back to back for
one world size; the table reports the median time per size over the repetitions. Prints a
markdown table.

usage: tools/bench_transport/bench_allreduce.py BUILD_DIR [--reps R] [--ranks 2,4]
                                                [--only msomni,ucx,gloo,mpi]
needs: python3-torch, openmpi-bin, libopenmpi-dev (MSOMNI_EXTRA_PACKAGES for bootstrap)."""
import argparse
import os
import socket
import statistics
import subprocess

from node_mesh import lines_until_done, node_mesh

HERE = os.path.dirname(os.path.abspath(__file__))


def parse(lines):
    out = {}
    for line in lines:
        if line.startswith("BENCH "):
            _, b, s = line.split()
            out[int(b)] = float(s)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_msomni(build, n, same_host=True, busy_poll_us=0):
    node = os.path.join(build, "tools/bench_transport/msomni-bench-allreduce-node")
    flags = ["--busy-poll-us", str(busy_poll_us), "--same-host", "1" if same_host else "0"]
    with node_mesh(node, [f"bench{i}" for i in range(n)], flags) as procs:
        lines = lines_until_done(procs[0].stdout)
    want = "same-host" if same_host else "ucx-ring"
    if not any(line.strip() == f"BACKEND {want}" for line in lines):
        raise SystemExit(f"msomni ran another path than {want}: {[l for l in lines if l.startswith('BACKEND')]}")
    return parse(lines)


def run_gloo(n):
    out = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "gloo_allreduce.py"), str(n), str(free_port())],
                         capture_output=True, text=True, timeout=600, check=True)
    return parse(out.stdout.splitlines())


def build_mpi(build):
    exe = os.path.join(build, "mpi_allreduce")
    subprocess.run(["mpicc", "-O2", "-o", exe, os.path.join(HERE, "mpi_allreduce.c")], check=True)
    return exe


def run_mpi(exe, n):
    out = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(n), exe],
                         capture_output=True, text=True, timeout=600, check=True)
    return parse(out.stdout.splitlines())


def human(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


def median_of(runs):
    sizes = sorted(set.intersection(*(set(r) for r in runs))) if runs else []
    return {b: statistics.median(r[b] for r in runs) for b in sizes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--only", default="msomni,ucx,gloo,mpi")
    args = ap.parse_args()
    which = args.only.split(",")
    mpi_exe = build_mpi(args.build) if "mpi" in which else None
    cols = [c for c in ("msomni", "ucx", "gloo", "mpi") if c in which]
    title = {"msomni": "msomni", "ucx": "msomni-ucx", "gloo": "Gloo", "mpi": "OpenMPI"}
    head = "| ranks | size | " + " | ".join(f"{title[c]} GB/s" for c in cols)
    if "msomni" in cols:
        head += "".join(f" | msomni/{title[c]}" for c in cols if c != "msomni")
    print(f"median of {args.reps} repetitions (time per all-reduce); ratio = time(peer) / time(msomni)")
    print(head + " |")
    print("|" + "---|" * (head.count("|")))
    for n in (int(x) for x in args.ranks.split(",")):
        runs = {c: [] for c in cols}
        for _ in range(args.reps):
            if "msomni" in cols:
                runs["msomni"].append(run_msomni(args.build, n))
            if "ucx" in cols:
                runs["ucx"].append(run_msomni(args.build, n, same_host=False))
            if "gloo" in cols:
                runs["gloo"].append(run_gloo(n))
            if "mpi" in cols:
                runs["mpi"].append(run_mpi(mpi_exe, n))
        med = {c: median_of(runs[c]) for c in cols}
        for b in sorted(med[cols[0]]):
            bus = lambda s: 2 * (n - 1) / n * b / s / 1e9
            row = f"| {n} | {human(b)} | " + " | ".join(f"{bus(med[c][b]):.2f}" for c in cols)
            if "msomni" in cols:
                row += "".join(f" | {med[c][b] / med['msomni'][b]:.2f}" for c in cols if c != "msomni")
            print(row + " |", flush=True)


if __name__ == "__main__":
    main()
