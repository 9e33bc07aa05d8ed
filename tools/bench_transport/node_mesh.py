"""Starts N msomni benchmark nodes that print their address ("ADDR ..."), tells each of them
every address ("PEER ...") and "GO", and yields them; on exit closes their stdin, waits, and
kills any still running. Shared by bench_allreduce.py and bench_latency.py."""
import contextlib
import subprocess


@contextlib.contextmanager
def node_mesh(binary, names, extra_args=()):
    procs = [subprocess.Popen([binary, name, *extra_args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for name in names]
    try:
        addrs = [p.stdout.readline().strip() for p in procs]
        for p in procs:
            for a in addrs:
                p.stdin.write("PEER" + a[4:] + "\n")
            p.stdin.write("GO\n")
            p.stdin.flush()
        yield procs
        for p in procs:
            p.stdin.close()
        for p in procs:
            p.wait(timeout=60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def lines_until_done(stream):
    """The lines a node prints before its "DONE" line."""
    out = []
    for line in stream:
        if line.startswith("DONE"):
            break
        out.append(line)
    return out
