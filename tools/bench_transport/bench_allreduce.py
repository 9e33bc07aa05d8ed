#!/usr/bin/env python3
"""All-reduce bus bandwidth, msomni ring over UCX vs Gloo (torch.distributed) vs OpenMPI,
2 and 4 processes on this machine, 4 KiB..64 MiB, in one run. Prints a markdown table.

usage: tools/bench_transport/bench_allreduce.py BUILD_DIR
needs: python3-torch, openmpi-bin, libopenmpi-dev (MSOMNI_EXTRA_PACKAGES for bootstrap)."""
import os
import socket
import subprocess
import sys

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


def run_msomni(build, n):
    node = os.path.join(build, "tools/bench_transport/msomni-bench-allreduce-node")
    procs = [subprocess.Popen([node, f"bench{i}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for i in range(n)]
    addrs = [p.stdout.readline().strip() for p in procs]
    for p in procs:
        for a in addrs:
            p.stdin.write("PEER" + a[4:] + "\n")
        p.stdin.write("GO\n")
        p.stdin.flush()
    lines = []
    for line in procs[0].stdout:
        if line.startswith("DONE"):
            break
        lines.append(line)
    for p in procs:
        p.stdin.close()
    for p in procs:
        p.wait(timeout=60)
    return parse(lines)


def run_gloo(n):
    out = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "gloo_allreduce.py"), str(n), str(free_port())],
                         capture_output=True, text=True, timeout=600, check=True)
    return parse(out.stdout.splitlines())


def run_mpi(build, n):
    exe = os.path.join(build, "mpi_allreduce")
    subprocess.run(["mpicc", "-O2", "-o", exe, os.path.join(HERE, "mpi_allreduce.c")], check=True)
    out = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(n), exe],
                         capture_output=True, text=True, timeout=600, check=True)
    return parse(out.stdout.splitlines())


def human(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    print("| ranks | size | msomni GB/s | Gloo GB/s | OpenMPI GB/s | msomni/Gloo | msomni/MPI |")
    print("|---|---|---|---|---|---|---|")
    for n in (2, 4):
        ours, gloo, mpi = run_msomni(build, n), run_gloo(n), run_mpi(build, n)
        for b in sorted(ours):
            bus = lambda s: 2 * (n - 1) / n * b / s / 1e9
            print(f"| {n} | {human(b)} | {bus(ours[b]):.2f} | {bus(gloo[b]):.2f} | {bus(mpi[b]):.2f} "
                  f"| {gloo[b] / ours[b]:.2f} | {mpi[b] / ours[b]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
