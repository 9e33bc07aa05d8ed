#!/usr/bin/env python3
"""Small-message latency and rate: msomni (raw ucx_node frames and CAF request/response
through the gateway) vs ucx_perftest (ucp_am_lat, ucp_am_bw) on the same transport (TCP
loopback: msomni's endpoints use peer error handling, which rules out shared memory), and
ucx_perftest on shared memory for reference. Prints a markdown table.

usage: tools/bench_transport/bench_latency.py BUILD_DIR"""
import os
import re
import subprocess
import sys
import time

from node_mesh import lines_until_done, node_mesh


def run_msomni(build, busy_poll_us, idle):
    node = os.path.join(build, "tools/bench_transport/msomni-bench-latency-node")
    with node_mesh(node, ["lat0", "lat1"], ["--busy-poll-us", str(busy_poll_us), "--idle", idle]) as procs:
        lines = lines_until_done(procs[1].stdout)
    return {k: float(v) for k, v in (line.split() for line in lines)}


def perftest(test, tls, size=8, iters=200000):
    env = dict(os.environ)
    env.pop("UCX_TLS", None)
    if tls:
        env["UCX_TLS"] = tls
    port = "13377"
    server = subprocess.Popen(["ucx_perftest", "-p", port], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    out = subprocess.run(["ucx_perftest", "127.0.0.1", "-p", port, "-t", test, "-s", str(size), "-n", str(iters)],
                         env=env, capture_output=True, text=True, timeout=300)
    server.wait(timeout=30)
    final = [l for l in out.stdout.splitlines() if re.match(r"^\s*Final:", l)]
    if not final:
        raise RuntimeError(out.stdout + out.stderr)
    cols = final[0].split()
    # Final: iterations, typical/avg/overall latency (us), bw avg/overall (MB/s), msgrate avg/overall
    return {"lat_us": float(cols[3]), "rate": float(cols[-1])}


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    tcp_lat, tcp_bw = perftest("ucp_am_lat", "tcp"), perftest("ucp_am_bw", "tcp")
    shm_lat, shm_bw = perftest("ucp_am_lat", ""), perftest("ucp_am_bw", "")
    # A rank's process: its node sleeps at once (0), its actor threads park at low priority.
    # The control plane's: its node polls 50 us after traffic, its actor threads wake at once.
    # Work stealing (CAF's default, the control plane's before) for comparison.
    for busy_poll_us, idle in ((0, "park"), (50, "wake"), (50, "poll")):
        table(run_msomni(build, busy_poll_us, idle), busy_poll_us, idle, tcp_lat, tcp_bw, shm_lat, shm_bw)


def table(ours, busy_poll_us, idle, tcp_lat, tcp_bw, shm_lat, shm_bw):
    print(f"\nmsomni nodes with busy_poll = {busy_poll_us} us, idle actor threads: {idle}\n")
    print("| metric (8-byte messages) | msomni | ucx_perftest tcp | ucx_perftest shm | msomni / perftest tcp (latency: lower is better) |")
    print("|---|---|---|---|---|")
    print(f"| one-way latency, raw frames (us) | {ours['LAT_FRAME']:.2f} | {tcp_lat['lat_us']:.2f} | {shm_lat['lat_us']:.2f} "
          f"| {ours['LAT_FRAME'] / tcp_lat['lat_us']:.2f}x |")
    print(f"| one-way latency, CAF request/response (us) | {ours['LAT_ACTOR']:.2f} | {tcp_lat['lat_us']:.2f} | "
          f"{shm_lat['lat_us']:.2f} | {ours['LAT_ACTOR'] / tcp_lat['lat_us']:.2f}x |")
    print(f"| message rate, raw frames (msg/s) | {ours['RATE_FRAME']:.0f} | {tcp_bw['rate']:.0f} | {shm_bw['rate']:.0f} "
          f"| {ours['RATE_FRAME'] / tcp_bw['rate']:.2f}x |")


if __name__ == "__main__":
    main()
