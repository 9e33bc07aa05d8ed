"""One trial's world: its directory, the job configs it writes, the msomni processes it
starts, and a sweep that finds every msomni process still running from that directory.

A process belongs to a trial when its program is an msomni binary and one of its
arguments names a path inside the trial directory (the config, the run directory, the
checkpoint directory or the token file all do), so ranks started by msomni-run or by an
agent are found without knowing their parents.
"""
import errno
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

JOB_TIMEOUT_S = 150     # one msomni-run invocation; a job here takes 2-10 s
STRAY_GRACE_S = 15      # how long processes may take to leave after their job ended
POLL_S = 0.01


class Binaries:
    """The build's programs; missing() names those that cannot be executed."""

    def __init__(self, build):
        build = Path(build).resolve()
        self.run = build / "apps/msomni-run/msomni-run"
        self.rank = build / "apps/msomni-rank/msomni-rank"
        self.cli = build / "apps/msomni/msomni"
        self.agent = build / "apps/msomni-agent/msomni-agent"
        self.gen_dataset = build / "tools/dataset_gen/msomni-gen-dataset"
        # The pre-flight's UCX loopback check starts it, found beside msomni-run in the build's layout.
        self.health_peer = build / "actors/health/msomni-health-peer"

    def all(self):
        return (self.run, self.rank, self.cli, self.agent, self.gen_dataset, self.health_peer)

    def snapshot(self, dest, lock=None):
        """Copies the programs to `dest` in the build's layout (msomni-run finds msomni-rank
        beside itself there), under the build lock when there is one, so a rebuild of the
        build tree meanwhile does not mix two builds in one trial."""
        dest = Path(dest).resolve()
        build = self.run.parents[2]
        copies = [(p, dest / p.relative_to(build)) for p in self.all()]
        for _, to in copies:
            to.parent.mkdir(parents=True, exist_ok=True)
        script = "set -e; " + "; ".join(f"cp -p '{a}' '{b}'" for a, b in copies)
        subprocess.run(([str(lock)] if lock else []) + ["sh", "-c", script], check=True)
        return Binaries(dest)

    def missing(self):
        return [str(p) for p in self.all() if not os.access(p, os.X_OK)]


def job_toml(name, steps, seed, min_replicas, sources, checkpoint_dir=None, nodes=None,
             image_size=16, max_seq_len=64, max_failures=3):
    """A small fuyu-tiny job of 2 replicas with fast failure detection (1 s of silence)."""
    text = (f'[job]\nname = "{name}"\n'
            '[model]\nname = "fuyu-tiny"\nd_model = 64\nn_layers = 2\nn_heads = 4\nd_ff = 128\n'
            f'image_size = {image_size}\npatch_size = 8\nvideo_frames = 2\nmax_seq_len = {max_seq_len}\n')
    for src_name, uri, modality, weight in sources:
        text += (f'[[data.sources]]\nname = "{src_name}"\nuri = "{uri}"\nmodality = "{modality}"\n'
                 f'weight = {weight}\n')
    text += ('[training]\nglobal_batch = 8\nmicro_batch = 2\ngrad_accum = 2\n'
             f'steps = {steps}\nlr = 1e-3\nseed = {seed}\n'
             f'[elasticity]\nreplicas = 2\nmin_replicas = {min_replicas}\nmax_replicas = 2\n'
             'heartbeat_interval_s = 0.2\nheartbeat_misses = 5\n'
             '[checkpoint]\ninterval_steps = 10\nkeep = 3\n'
             f'max_consecutive_failures = {max_failures}\n')
    if checkpoint_dir:
        text += f'dir = "{checkpoint_dir}"\n'
    for node in nodes or []:
        text += f'[[cluster.nodes]]\nname = "{node}"\nslots = 1\n'
    return text


SYNTHETIC = [("shapes", "synthetic://shapes", "image", 1.0)]


def wait_until(predicate, timeout_s, poll_s=POLL_S):
    deadline = time.monotonic() + timeout_s
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)


def read_text(path):
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def latest_step(checkpoint_dir):
    """The step `latest` points at (0 when there is none yet)."""
    text = read_text(Path(checkpoint_dir) / "latest").strip()
    try:
        return int(text.split("-")[1]) if text.startswith("step-") else 0
    except (IndexError, ValueError):
        return 0


class Trial:
    """A trial directory and everything started in it."""

    def __init__(self, root, number, binaries):
        self.number = number
        self.bin = binaries
        base = Path(root).resolve() / f"trial-{number:04d}"
        self.dir = base
        for again in range(2, 1000):  # a kept directory of an earlier run stays as it was
            if not self.dir.exists():
                break
            self.dir = base.with_name(f"{base.name}-{again}")
        self.dir.mkdir(parents=True)
        self.run_dir = self.dir / "run"
        self.checkpoint_dir = self.run_dir / "checkpoints"
        self.config = self.dir / "job.toml"
        self.invocations = 0
        self.agents = {}
        self.children = []
        self.cleanups = []      # run in reverse order after every process of the trial is gone
        self.keep = False
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MSOMNI_")}

    def write_config(self, text):
        self.config.write_text(text)

    def start_job(self):
        """msomni-run CONFIG --run-dir DIR, the same command every time."""
        self.invocations += 1
        out = open(self.dir / f"msomni-run-{self.invocations}.out", "wb")
        p = subprocess.Popen([str(self.bin.run), str(self.config), "--run-dir", str(self.run_dir)],
                             stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                             env=self.env, start_new_session=True)
        out.close()
        self.children.append(p)
        return p

    def control_address(self, timeout_s=30):
        """The address in RUN_DIR/control.json once msomni-run has written it."""
        found = {}

        def ready():
            try:
                found.update(json.loads(read_text(self.run_dir / "control.json")))
            except ValueError:
                return False
            return "address" in found

        return found["address"] if wait_until(ready, timeout_s, 0.02) else None

    def start_agent(self, node, address):
        out = open(self.dir / f"agent-{node}.out", "ab")
        p = subprocess.Popen([str(self.bin.agent), "--join", address, "--token-file",
                              str(self.run_dir / "control.json"), "--node", node, "--heartbeat-s", "0.2",
                              "--log-dir", str(self.dir / node)],
                             stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                             env=self.env, start_new_session=True)
        out.close()
        self.children.append(p)
        self.agents[node] = p
        return p

    def log_files(self):
        """Every rank log: the local agent's under RUN_DIR/logs, remote agents' in their --log-dir."""
        files = list((self.run_dir / "logs").glob("*.log"))
        for node in self.agents:
            files += list((self.dir / node).glob("*.log"))
        return sorted(files)

    def log_offsets(self):
        return {str(f): f.stat().st_size for f in self.log_files() if f.exists()}

    def logs_since(self, offsets):
        """The text each rank log gained since `offsets` (a whole new file counts from 0)."""
        out = {}
        for f in self.log_files():
            with open(f, "rb") as h:
                h.seek(offsets.get(str(f), 0))
                out[str(f)] = h.read().decode(errors="replace")
        return out

    def processes(self):
        """(pid, argv) of every live msomni process of this trial."""
        mine = str(self.dir)
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            argv = [a.decode(errors="replace") for a in argv if a]
            if not argv or state == "Z" or not os.path.basename(argv[0]).startswith("msomni"):
                continue
            if any(mine + os.sep in a for a in argv[1:]):
                found.append((int(entry), argv))
        return found

    def ranks(self):
        return [(pid, argv) for pid, argv in self.processes() if os.path.basename(argv[0]) == "msomni-rank"]

    def reap(self):
        for p in self.children:
            p.poll()

    def sweep_strays(self, grace_s=STRAY_GRACE_S):
        """Waits up to grace_s for this trial's processes to leave, then SIGKILLs the rest and
        names them."""
        self.reap()
        wait_until(lambda: (self.reap(), not self.processes())[1], grace_s, 0.1)
        strays = self.processes()
        for pid, argv in strays:
            kill(pid)
        return [f"pid {pid}: {' '.join(argv)}" for pid, argv in strays]

    def kill_everything(self):
        for p in self.children:
            if p.poll() is None:
                kill(p.pid)
        for pid, _ in self.processes():
            kill(pid)
        for p in self.children:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def close(self):
        """Kills what is left, undoes the cleanups (mounts) in reverse, and removes the
        directory unless the trial is kept."""
        try:
            self.kill_everything()
        finally:
            while self.cleanups:
                self.cleanups.pop()()
            if not self.keep:
                shutil.rmtree(self.dir, ignore_errors=True)


def kill(pid, sig=signal.SIGKILL):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def wait_process(p, timeout_s=JOB_TIMEOUT_S):
    """The exit status, or None when it is still running after timeout_s (a hang)."""
    try:
        return p.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None


def mount_tmpfs(trial, path, size_mib):
    """A small tmpfs at `path`, unmounted and removed by the trial's cleanup whatever happened
    (its contents are copied beside it first when the trial is kept)."""
    path = Path(path)
    path.mkdir(parents=True)
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0700", "tmpfs", str(path)],
                       check=True, capture_output=True)
    except BaseException:
        path.rmdir()
        raise

    def cleanup():
        try:
            if trial.keep:
                shutil.copytree(path, path.with_name(path.name + "-kept"), symlinks=True,
                                ignore=shutil.ignore_patterns("ballast"))
        finally:
            unmount(path)

    trial.cleanups.append(cleanup)
    return path


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def unmount(path):
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)
    try:
        os.rmdir(path)
    except OSError as e:
        if e.errno != errno.ENOENT:
            raise


def fill(path, leave_bytes):
    """Writes a ballast file at `path` until the file system is full, then gives back
    leave_bytes (so a save may still partly fit). Returns the ballast's size."""
    chunk = b"\0" * (1 << 20)
    written = 0
    with open(path, "wb", buffering=0) as f:
        while len(chunk) >= 4096:
            try:
                written += f.write(chunk)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                chunk = chunk[: len(chunk) // 2]
        if leave_bytes:
            written = max(0, written - leave_bytes)
            f.truncate(written)
    return written
