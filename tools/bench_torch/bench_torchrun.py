#!/usr/bin/env python3
"""The torch fuyu-tiny (configs/torch-quickstart.toml) trained by msomni-run against the same
nn.Module trained by torchrun (torch.distributed.run) with DistributedDataParallel over gloo,
on the same micro-batches, global batch, optimizer and torch threads per rank, on this
machine, in one run:

  throughput  msomni-run at 1 and 2 ranks, and torchrun (one agent, --nproc_per_node 1 or 2)
              the same number of steps; steady-state tokens/s of each (steps after the
              warm-up), tokens counted as msomni counts a micro-batch's input tokens
              (B x T text positions + the patches of its samples) for both.
  elastic     one msomni job at 2 ranks: `msomni scale-down --replicas 1`, `msomni scale-up
              --replicas 2`, then `kill -9` of one rank process (msomni recovers by itself);
              against torchrun elastic, two agents on loopback as two nodes (--nnodes 1:2
              --nproc_per_node 1, c10d rendezvous): SIGTERM of the second agent, a second agent
              started again, SIGKILL of one worker. The torchrun script checkpoints model,
              optimizer and step (fsync'd) every K steps and resumes from it on every restart.
              Each event comes when the newest step is just past the middle of a checkpoint
              interval (step mod K = K/2 .. K/2 + 5), on both sides. For each event: the pause
              (the stalls between consecutive steps from the event until the job has trained
              --segment steps at its target size, each less one median step) and the steps
              trained again (step numbers completed a second time).

Same samples: msomni-run first trains the quickstart config for a few hundred steps at one
rank with a subclass of FuyuTiny whose forward copies each training micro-batch it is given
to a file (a user module of this bench, nothing in msomni changes; one rank, so the file
holds the micro-batches in msomni's global order). The torchrun script trains on those:
micro-step k of step t on rank r of W takes global micro-batch t*G/mb + k*W + r, the slot
msomni gives it (docs/data_pipeline.md). All msomni runs set io.downgrade_video = false, so
their video pixels are the recorded ones whatever the timing.

  tools/build_lock.sh /usr/bin/python3 tools/bench_torch/bench_torchrun.py --build build [--steps 200] [--segment 60] [--k 50]

The torchrun script is this file (`--peer-worker`, run by torchrun, not by hand).
"""
import argparse
import contextlib
import json
import os
import pickle
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, "configs", "torch-quickstart.toml")
TORCH_ARGS = dict(d_model=64, n_layers=2, n_heads=4, d_ff=256, patch_dim=192, max_seq_len=128,
                  vocab_size=260, dropout=0.1)  # configs/torch-quickstart.toml's model.torch_args
GLOBAL_BATCH, MICRO_BATCH, LR, SEED = 8, 2, 1e-3, 1234  # its [training]
# msomni's AdamW and clipping at the config defaults (runtime/config/job_config.hpp,
# runtime/model/adamw.hpp): betas 0.9 / 0.95, eps 1e-8, weight decay 0.01 on parameters of
# two or more dimensions, global-norm clip 1.0, no warm-up.
BETAS, EPS, WEIGHT_DECAY, GRAD_CLIP = (0.9, 0.95), 1e-8, 0.01, 1.0

sys.path.insert(0, os.path.join(ROOT, "tools", "bench_elastic"))
from bench_elastic import cli, jsonl, metrics, wait_steps  # noqa: E402  (msomni's control CLI and metrics.jsonl)

CAPTURE_MODULE = '''import os, pickle, sys
import torch
sys.path.insert(0, {configs!r})
from torch_fuyu_tiny import FuyuTiny


class RecordingFuyuTiny(FuyuTiny):
    """FuyuTiny that appends every training micro-batch it is given to a file of its process."""
    def forward(self, batch):
        if self.training and torch.is_grad_enabled():
            if not hasattr(self, "_out"):
                self._out = open(os.path.join({out!r}, "%d.pkl" % os.getpid()), "ab")
            b, p = batch.batch_size, batch.max_patches
            pickle.dump({{"patches": batch.patches.numpy().copy(), "patch_counts": batch.patch_counts.numpy().copy(),
                          "tokens": batch.tokens.numpy().copy(), "loss_mask": batch.loss_mask.numpy().copy(),
                          "modalities": batch.modalities.numpy().copy()}}, self._out)
            self._out.flush()
        return super().forward(batch)
'''


# ---------------------------------------------------------------- helpers of both sides

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def input_tokens(mb):
    """What msomni counts for tokens/s (runtime/model/micro_batch.hpp input_tokens)."""
    b, t = mb["tokens"].shape
    return int(b * t + mb["patch_counts"].sum())


def msomni_sets(ranks, steps, interval, max_replicas=None):
    sets = {"training.steps": steps, "elasticity.replicas": ranks,
            "elasticity.max_replicas": max_replicas or ranks, "elasticity.min_replicas": 1,
            "checkpoint.interval_steps": interval, "io.downgrade_video": "false"}
    out = []
    for k, v in sets.items():
        out += ["--set", f"{k}={v}"]
    return out


def msomni_run_cmd(build, run_dir, sets):
    return [os.path.join(build, "apps", "msomni-run", "msomni-run"), CONFIG, "--run-dir", run_dir, "--fresh"] + sets


def msomni_threads(build, work, ranks):
    """The torch threads msomni gives each rank at this size (its --dry-run plan)."""
    done = subprocess.run(msomni_run_cmd(build, os.path.join(work, f"dry-run-{ranks}"),
                                         msomni_sets(ranks, 10, 10)) + ["--dry-run"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    m = re.search(r"rank 0 -> .*?, (\d+) threads?", done.stdout)
    if not m:
        sys.exit(f"no thread count in msomni-run --dry-run:\n{done.stdout[-2000:]}")
    return int(m.group(1))


def pauses(recs, t_event, t_end, label):
    """recs: [{step, t, world}] in completion order. The pause: the stalls between consecutive
    steps from the last step before t_event to the step that ended the event's wait (t_end),
    every gap over 3 median steps less one median step (the median of the second half of the
    window's gaps); without such a gap, the largest gap less one median step. Steps trained
    again: the step numbers completed a second time in that window."""
    before = [i for i, r in enumerate(recs) if r["t"] <= t_event]
    first = before[-1] if before else 0
    window = [r for r in recs[first:] if r["t"] <= t_end]
    gaps = [(window[i + 1]["t"] - window[i]["t"], i + 1) for i in range(len(window) - 1)]
    tail = [g for g, _ in gaps[len(gaps) // 2:]]
    med = statistics.median(tail)
    stalls = [(g, i) for g, i in gaps if g > 3 * med]
    seen = {r["step"] for r in recs[:first + 1]}
    again = set()
    for r in window[1:]:
        if r["step"] in seen:
            again.add(r["step"])
        seen.add(r["step"])
    biggest = max(gaps)
    pause = sum(g - med for g, _ in stalls) if stalls else max(0.0, biggest[0] - med)
    return {"event": label, "pause_s": pause / 1000.0, "stalls": len(stalls),
            "largest_gap_s": biggest[0] / 1000.0, "median_step_s": med / 1000.0, "steps_again": len(again),
            "gap_from": window[biggest[1] - 1]["step"], "gap_to": window[biggest[1]]["step"]}


# ---------------------------------------------------------------- capture (msomni's micro-batches)

def capture(build, work, steps):
    out = os.path.join(work, "capture")
    os.makedirs(out)
    module = os.path.join(work, "recording_fuyu_tiny.py")
    with open(module, "w") as f:
        f.write(CAPTURE_MODULE.format(configs=os.path.join(ROOT, "configs"), out=out))
    sets = msomni_sets(1, steps, steps) + ["--set", f"model.torch_file={module}",
                                           "--set", "model.torch_class=RecordingFuyuTiny"]
    done = subprocess.run(msomni_run_cmd(build, os.path.join(work, "capture-run"), sets),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.exit(f"capture: msomni-run exited {done.returncode}:\n{done.stdout[-3000:]}")
    want = steps * GLOBAL_BATCH // MICRO_BATCH
    files = []
    for name in os.listdir(out):
        recs = []
        with open(os.path.join(out, name), "rb") as f:
            while True:
                try:
                    recs.append(pickle.load(f))
                except EOFError:
                    break
        files.append(recs)
    # The rank's worker has the training micro-batches; msomni-run's own check worker has its
    # probe batch, and the rank may warm up on probe batches before step 1.
    recs = max(files, key=len)
    if len(recs) < want:
        sys.exit(f"capture: {len(recs)} micro-batches recorded, {want} expected")
    recs = recs[len(recs) - want:]
    # msomni's step records count the same tokens: check the capture against them.
    m = metrics(os.path.join(work, "capture-run"))
    for r in m[:5]:
        ours = sum(input_tokens(mb) for mb in recs[(r["step"] - 1) * 4:r["step"] * 4])
        theirs = r["tokens_per_s"] * r["step_time_ms"] / 1000.0
        if abs(ours - theirs) > 0.02 * ours + 2:
            sys.exit(f"capture: step {r['step']} has {ours} input tokens recorded, msomni's metrics say {theirs:.0f}")
    path = os.path.join(work, "batches.pkl")
    with open(path, "wb") as f:
        pickle.dump(recs, f, protocol=pickle.HIGHEST_PROTOCOL)
    return path, recs


# ---------------------------------------------------------------- throughput

def step_tokens(recs, step):
    per = GLOBAL_BATCH // MICRO_BATCH
    n = len(recs) // per
    s = (step - 1) % n
    return sum(input_tokens(mb) for mb in recs[s * per:(s + 1) * per])


def rate(steps_t, recs, warmup):
    """tokens/s over the steps after the warm-up: their input tokens over the wall time from the
    warm-up's last step to the last step. steps_t: {step: completion time ms}."""
    last = max(steps_t)
    tokens = sum(step_tokens(recs, s) for s in range(warmup + 1, last + 1))
    return tokens * 1000.0 / (steps_t[last] - steps_t[warmup])


def msomni_throughput(build, work, ranks, steps, warmup, recs):
    run_dir = os.path.join(work, f"msomni-{ranks}")
    started = time.monotonic()
    done = subprocess.run(msomni_run_cmd(build, run_dir, msomni_sets(ranks, steps, steps + 1)),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.exit(f"msomni-run at {ranks} ranks exited {done.returncode}:\n{done.stdout[-3000:]}")
    m = metrics(run_dir)
    steady = [r for r in m if r["step"] > warmup]
    step_ms = statistics.median(r["step_time_ms"] for r in steady)
    compute = statistics.median(r["compute_ms_max"] for r in steady)
    data = statistics.median(r["data_wait_ms"] for r in steady)
    return {"tokens_per_s": rate({r["step"]: r["time_ms"] for r in m}, recs, warmup),
            "own_tokens_per_s": statistics.median(r["tokens_per_s"] for r in steady),
            "step_ms": statistics.median(b["time_ms"] - a["time_ms"] for a, b in zip(steady, steady[1:])),
            "parts": {"recorded step": step_ms, "forward+backward (slowest rank)": compute, "data wait": data,
                      "all-reduce, optimizer, rest": step_ms - compute - data},
            "loss_first": m[0]["loss"], "loss_last": m[-1]["loss"], "wall_s": time.monotonic() - started}


def torchrun_cmd(nnodes, nproc, port, log_dir, extra, worker_args):
    # torch 1.13's torchrun under Python 3.11 fails with its defaults --redirects 0 --tee 0 (an
    # IntFlag's iteration no longer yields NONE, so "0" parses to None): the workers' stdout goes
    # to log_dir and their stderr there and to the agent's.
    return [sys.executable, "-m", "torch.distributed.run", f"--nnodes={nnodes}", f"--nproc_per_node={nproc}",
            "--rdzv_backend=c10d", f"--rdzv_endpoint=127.0.0.1:{port}", "--rdzv_id=bench",
            "--redirects=1", "--tee=2", f"--log_dir={log_dir}"] + extra + \
           [os.path.abspath(__file__), "--peer-worker"] + worker_args


def peer_env(threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    env.pop("PYTHONPATH", None)
    return env


def torchrun_throughput(work, ranks, steps, warmup, batches, recs, threads):
    d = os.path.join(work, f"torchrun-{ranks}")
    os.makedirs(d)
    log = os.path.join(d, "steps.jsonl")
    cmd = torchrun_cmd(1, ranks, free_port(), os.path.join(d, "logs"), ["--max_restarts=0"],
                       ["--batches", batches, "--log", log, "--steps", str(steps), "--threads", str(threads)])
    started = time.monotonic()
    with open(os.path.join(d, "out.txt"), "w") as out:
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=peer_env(threads), timeout=1800)
    if done.returncode != 0:
        with open(os.path.join(d, "out.txt")) as f:
            sys.exit(f"torchrun at {ranks} ranks exited {done.returncode}:\n{f.read()[-3000:]}")
    m = [r for r in jsonl(log) if "step" in r]
    steady = [r for r in m if r["step"] > warmup]
    step_ms = statistics.median(b["t"] - a["t"] for a, b in zip(steady, steady[1:]))
    fwd = statistics.median(r["forward_ms"] for r in steady)
    bwd = statistics.median(r["backward_ms"] for r in steady)
    sync = statistics.median(r["last_backward_ms"] for r in steady)
    opt = statistics.median(r["optimizer_ms"] for r in steady)
    parts = {"recorded step": statistics.median(r["step_ms"] for r in steady), "forward": fwd,
             "backward (no_sync micro-batches)": bwd - sync,
             "last backward (with DDP's all-reduce)": sync, "clip + AdamW": opt}
    return {"tokens_per_s": rate({r["step"]: r["t"] for r in m}, recs, warmup), "step_ms": step_ms, "parts": parts,
            "loss_first": m[0]["loss"], "loss_last": m[-1]["loss"], "wall_s": time.monotonic() - started}


# ---------------------------------------------------------------- elastic

def mid_interval(latest_step, k, timeout=600):
    """Waits until the newest step is just past the middle of a checkpoint interval (step mod k
    in [k/2, k/2 + 5]), so that both sides meet each event at the same place between checkpoints."""
    end = time.time() + timeout
    while time.time() < end:
        if k // 2 <= latest_step() % k <= k // 2 + 5:
            return
        time.sleep(0.005)
    raise RuntimeError("no step in the middle of a checkpoint interval")


def msomni_elastic(build, work, segment, k, log):
    run_dir = os.path.join(work, "msomni-elastic")
    job = subprocess.Popen(msomni_run_cmd(build, run_dir, msomni_sets(2, 1000000, k)),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    events = []
    try:
        wait_steps(run_dir, 2, segment)
        latest = lambda: metrics(run_dir)[-1]["step"]  # noqa: E731
        mid_interval(latest, k)
        t = time.time() * 1000
        cli(build, "scale-down", run_dir, "--replicas", "1")
        events.append(("scale-down 2->1", t, wait_steps(run_dir, 1, segment, metrics(run_dir)[-1]["step"])))
        log(f"msomni: scaled down at step {events[-1][2][0]['step'] - 1}")
        mid_interval(latest, k)
        t = time.time() * 1000
        cli(build, "scale-up", run_dir, "--replicas", "2")
        events.append(("scale-up 1->2", t, wait_steps(run_dir, 2, segment, metrics(run_dir)[-1]["step"])))
        log(f"msomni: scaled up at step {events[-1][2][0]['step'] - 1}")
        status = subprocess.run([os.path.join(build, "apps/msomni/msomni"), "status", "--run-dir", run_dir, "--json"],
                                capture_output=True, text=True, timeout=60)
        ranks = [r for r in json.loads(status.stdout)["ranks"] if r["state"] == "active"]
        victim = max(ranks, key=lambda r: r["name"])
        mid_interval(latest, k)
        t = time.time() * 1000
        os.kill(victim["pid"], signal.SIGKILL)
        events.append(("SIGKILL of a rank", t, wait_steps(run_dir, 2, segment, metrics(run_dir)[-1]["step"])))
        log(f"msomni: {victim['name']} (pid {victim['pid']}) killed; back at 2 ranks")
        cli(build, "stop", run_dir)
        job.wait(timeout=300)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    recs = [{"step": r["step"], "t": r["time_ms"], "world": r["world_size"]} for r in metrics(run_dir)]
    resumes = [e["reason"] for e in jsonl(os.path.join(run_dir, "events.jsonl")) if e.get("event") == "attempt_started"]
    return [pauses(recs, t, got[-1]["time_ms"], label) for label, t, got in events], resumes[1:]


class Agents:
    """torchrun agents of the elastic peer, and everything they start, ended on close()."""

    def __init__(self, work, k, threads, last_call_s, monitor_s):
        self.dir = os.path.join(work, "torchrun-elastic")
        os.makedirs(self.dir)
        self.log = os.path.join(self.dir, "steps.jsonl")
        self.port, self.k, self.threads = free_port(), k, threads
        self.last_call_s, self.monitor_s = last_call_s, monitor_s
        self.agents = []

    def start(self, host):
        conf = f"is_host={'true' if host else 'false'},last_call_timeout={self.last_call_s}"
        cmd = torchrun_cmd("1:2", 1, self.port, os.path.join(self.dir, f"logs-{len(self.agents)}"),
                           ["--max_restarts=100", f"--monitor_interval={self.monitor_s}",
                                                  f"--rdzv_conf={conf}"],
                           ["--batches", os.path.join(os.path.dirname(self.dir), "batches.pkl"), "--log", self.log,
                            "--steps", "100000000", "--threads", str(self.threads), "--checkpoint-every", str(self.k),
                            "--checkpoint", os.path.join(self.dir, "checkpoint.pt")])
        out = open(os.path.join(self.dir, f"agent-{len(self.agents)}.txt"), "w")
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=peer_env(self.threads),
                             start_new_session=True)
        out.close()
        self.agents.append(p)
        return p

    def steps(self):
        return [r for r in jsonl(self.log) if "step" in r]

    def wait(self, world, count, after_step=0, timeout=600):
        end = time.time() + timeout
        while time.time() < end:
            got = [r for r in self.steps() if r["world"] == world and r["step"] > after_step]
            if len(got) >= count:
                return got
            for p in self.agents[:1]:
                if p.poll() is not None:
                    with open(os.path.join(self.dir, "agent-0.txt")) as f:
                        raise RuntimeError(f"the first torchrun agent exited {p.returncode}:\n{f.read()[-3000:]}")
            time.sleep(0.05)
        raise RuntimeError(f"torchrun: no {count} steps at world {world} after step {after_step} within {timeout} s")

    def workers_of(self, agent):
        return [r["pid"] for r in jsonl(self.log) if r.get("event") == "start" and r["ppid"] == agent.pid
                and os.path.exists(f"/proc/{r['pid']}")]

    def close(self):
        for p in self.agents:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.agents:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        for r in jsonl(self.log):  # a worker outliving its agent: ours by its command line
            if r.get("event") == "start":
                with contextlib.suppress(OSError):
                    with open(f"/proc/{r['pid']}/cmdline", "rb") as f:
                        if b"--peer-worker" in f.read():
                            os.kill(r["pid"], signal.SIGKILL)


def torchrun_elastic(work, segment, k, threads, last_call_s, monitor_s, log):
    agents = Agents(work, k, threads, last_call_s, monitor_s)
    events = []
    try:
        agents.start(host=True)
        second = agents.start(host=False)
        agents.wait(2, segment)
        latest = lambda: agents.steps()[-1]["step"]  # noqa: E731
        mid_interval(latest, k)
        t = time.time() * 1000
        second.send_signal(signal.SIGTERM)  # the node leaves: its agent ends its worker
        events.append(("scale-down 2->1", t, agents.wait(1, segment, agents.steps()[-1]["step"])))
        log("torchrun: second agent terminated; training at 1")
        second.wait(timeout=60)
        mid_interval(latest, k)
        t = time.time() * 1000
        second = agents.start(host=False)
        events.append(("scale-up 1->2", t, agents.wait(2, segment, agents.steps()[-1]["step"])))
        log("torchrun: second agent started again; training at 2")
        victim = agents.workers_of(second)
        if len(victim) != 1:
            raise RuntimeError(f"torchrun: the second agent has workers {victim}")
        mid_interval(latest, k)
        t = time.time() * 1000
        os.kill(victim[0], signal.SIGKILL)
        events.append(("SIGKILL of a rank", t, agents.wait(2, segment, agents.steps()[-1]["step"])))
        log(f"torchrun: worker pid {victim[0]} killed; back at 2")
    finally:
        agents.close()
    recs = agents.steps()
    starts = [r for r in jsonl(agents.log) if r.get("event") == "start" and r["rank"] == 0]
    return [pauses(recs, t, got[-1]["t"], label) for label, t, got in events], starts


# ---------------------------------------------------------------- the torchrun training script

def peer_worker(a):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    sys.path.insert(0, os.path.join(ROOT, "configs"))
    sys.path.insert(0, os.path.join(ROOT, "runtime", "python"))
    from msomni_torch.batch import Batch
    from torch_fuyu_tiny import FuyuTiny

    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(SEED)  # every rank builds the same initial weights, as msomni's workers do
    model = FuyuTiny(**TORCH_ARGS)
    model.train()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY},
                             {"params": no_decay, "weight_decay": 0.0}], lr=LR, betas=BETAS, eps=EPS)
    step = 0
    if a.checkpoint and os.path.exists(a.checkpoint):
        state = torch.load(a.checkpoint)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step = state["step"]
    with open(a.batches, "rb") as f:
        recs = pickle.load(f)
    batches = []
    for r in recs:
        b = Batch()
        b.patches = torch.from_numpy(r["patches"])
        b.patch_counts = torch.from_numpy(r["patch_counts"])
        b.tokens = torch.from_numpy(r["tokens"])
        b.loss_mask = torch.from_numpy(r["loss_mask"])
        b.modalities = torch.from_numpy(r["modalities"])
        b.batch_size, b.max_patches, b.patch_dim = r["patches"].shape
        b.text_len = r["tokens"].shape[1]
        batches.append(b)
    # A micro-batch of text samples leaves patch_proj without a gradient: DDP must look for it.
    unused = any(b.max_patches == 0 for b in batches)
    # The causal mask is a constant bool buffer gloo cannot broadcast; the module has no other.
    DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, ["causal"])
    ddp = DistributedDataParallel(model, find_unused_parameters=unused, broadcast_buffers=False)
    accum = GLOBAL_BATCH // (MICRO_BATCH * world)
    per_step = GLOBAL_BATCH // MICRO_BATCH
    torch.manual_seed(SEED + 1000 * rank + 7919 * step)  # dropout
    log = open(a.log, "a")
    log.write(json.dumps({"event": "start", "t": time.time() * 1000, "pid": os.getpid(), "ppid": os.getppid(),
                          "rank": rank, "world": world, "resume_step": step,
                          "restart": int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0))}) + "\n")
    log.flush()
    clock = time.perf_counter
    while step < a.steps:
        t0 = clock()
        fwd = bwd = last_bwd = 0.0
        loss_sum = 0.0
        for k in range(accum):
            batch = batches[(step * per_step + k * world + rank) % len(batches)]
            sync = k == accum - 1
            with contextlib.nullcontext() if sync else ddp.no_sync():
                t1 = clock()
                loss = ddp(batch)
                t2 = clock()
                (loss / accum).backward()
                t3 = clock()
            fwd += t2 - t1
            bwd += t3 - t2
            if sync:
                last_bwd = t3 - t2
            loss_sum += loss.item()
        t4 = clock()
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        opt.step()
        opt.zero_grad(set_to_none=True)
        t5 = clock()
        step += 1
        if a.checkpoint_every and step % a.checkpoint_every == 0 and rank == 0:
            tmp = a.checkpoint + ".tmp"
            with open(tmp, "wb") as f:
                torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step}, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, a.checkpoint)
            d = os.open(os.path.dirname(a.checkpoint), os.O_RDONLY)
            os.fsync(d)
            os.close(d)
        if rank == 0:
            log.write(json.dumps({"step": step, "t": time.time() * 1000, "world": world, "loss": loss_sum / accum,
                                  "step_ms": (clock() - t0) * 1000, "forward_ms": fwd * 1000,
                                  "backward_ms": bwd * 1000, "last_backward_ms": last_bwd * 1000,
                                  "optimizer_ms": (t5 - t4) * 1000}) + "\n")
            log.flush()
    dist.destroy_process_group()


# ---------------------------------------------------------------- main

def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--steps", type=int, default=200, help="steps of each throughput run")
    p.add_argument("--warmup", type=int, default=20, help="steps left out at the start of a throughput run")
    p.add_argument("--segment", type=int, default=60, help="steps at each size before the next elastic event")
    p.add_argument("--k", type=int, default=50, help="checkpoint interval in steps, msomni's and the peer's")
    p.add_argument("--capture-steps", type=int, default=400, help="steps of msomni's micro-batches recorded")
    p.add_argument("--last-call-s", type=int, default=1,
                   help="torchrun's rendezvous last_call_timeout (its default is 30 s)")
    p.add_argument("--monitor-s", type=float, default=0.5,
                   help="torchrun's --monitor_interval (its default is 5 s)")
    p.add_argument("--skip", choices=["throughput", "elastic"], action="append", default=[])
    p.add_argument("--out", help="write the results as JSON here")
    # the torchrun training script
    p.add_argument("--peer-worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--batches", help=argparse.SUPPRESS)
    p.add_argument("--log", help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--checkpoint", help=argparse.SUPPRESS)
    p.add_argument("--checkpoint-every", type=int, default=0, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.peer_worker:
        return peer_worker(a)

    def log(text):
        print(text, file=sys.stderr, flush=True)

    build = os.path.abspath(a.build)
    work = tempfile.mkdtemp(prefix="msomni-bench-torchrun-")
    result = {}
    try:
        threads = {r: msomni_threads(build, work, r) for r in (1, 2)}
        log(f"msomni's torch threads per rank: {threads[1]} at 1 rank, {threads[2]} at 2 (the peer uses the same)")
        batches, recs = capture(build, work, max(a.capture_steps, a.steps))
        unused = any(mb["patches"].shape[1] == 0 for mb in recs)
        log(f"recorded {len(recs)} micro-batches of msomni ({len(recs) * MICRO_BATCH // GLOBAL_BATCH} steps)"
            f"{'; some are text only (DDP find_unused_parameters on)' if unused else ''}")
        if "throughput" not in a.skip:
            rows = []
            for ranks in (1, 2):
                m = msomni_throughput(build, work, ranks, a.steps, a.warmup, recs)
                log(f"msomni {ranks} ranks: {m['tokens_per_s']:.0f} tokens/s")
                t = torchrun_throughput(work, ranks, a.steps, a.warmup, batches, recs, threads[ranks])
                log(f"torchrun {ranks} ranks: {t['tokens_per_s']:.0f} tokens/s")
                rows.append({"ranks": ranks, "msomni": m, "torchrun": t})
            result["throughput"] = rows
        if "elastic" not in a.skip:
            m_ev, resumes = msomni_elastic(build, work, a.segment, a.k, log)
            t_ev, starts = torchrun_elastic(work, a.segment, a.k, threads[2], a.last_call_s, a.monitor_s, log)
            result["elastic"] = {"msomni": m_ev, "torchrun": t_ev, "msomni_attempts": resumes,
                                 "torchrun_starts": [{"resume_step": s["resume_step"], "world": s["world"]}
                                                     for s in starts]}
    finally:
        subprocess.run(["rm", "-rf", work])

    if "throughput" in result:
        print(f"throughput: {a.steps} steps, first {a.warmup} left out; global batch {GLOBAL_BATCH}, "
              f"micro-batch {MICRO_BATCH}; tokens = B x T + patches per micro-batch (msomni's input tokens)")
        print(f"{'ranks':>5} {'msomni tok/s':>13} {'torchrun tok/s':>15} {'ratio':>6} {'msomni ms/step':>15} "
              f"{'torchrun ms/step':>17} {'loss msomni':>12} {'loss torchrun':>14}")
        for r in result["throughput"]:
            m, t = r["msomni"], r["torchrun"]
            print(f"{r['ranks']:5d} {m['tokens_per_s']:13.0f} {t['tokens_per_s']:15.0f} "
                  f"{m['tokens_per_s'] / t['tokens_per_s']:5.2f}x {m['step_ms']:15.1f} {t['step_ms']:17.1f} "
                  f"{m['loss_first']:.2f}->{m['loss_last']:.2f} {t['loss_first']:7.2f}->{t['loss_last']:.2f}")
        for r in result["throughput"]:
            for side in ("msomni", "torchrun"):
                parts = ", ".join(f"{k} {v:.1f}" for k, v in r[side]["parts"].items())
                print(f"  {r['ranks']} ranks, {side} medians ms: {parts}")
    if "elastic" in result:
        e = result["elastic"]
        print(f"elastic: checkpoints every {a.k} steps on both; torchrun last_call_timeout {a.last_call_s} s, "
              f"monitor_interval {a.monitor_s} s")
        print(f"{'event':18} {'msomni pause s':>15} {'torchrun pause s':>17} {'ratio':>6} {'again msomni':>13} "
              f"{'again torchrun':>15}   stalls, median step s, the largest gap's steps "
              f"(msomni | torchrun)")
        for m, t in zip(e["msomni"], e["torchrun"]):
            ratio = m["pause_s"] / t["pause_s"] if t["pause_s"] > 0 else float("nan")
            print(f"{m['event']:18} {m['pause_s']:15.3f} {t['pause_s']:17.3f} {ratio:6.3f} {m['steps_again']:13d} "
                  f"{t['steps_again']:15d}   " + " | ".join(
                      f"{r['stalls']}, {r['median_step_s']:.3f}, {r['gap_from']} -> {r['gap_to']}" for r in (m, t)))
        for text in e["msomni_attempts"]:
            print(f"  msomni: {text}")
        print("  torchrun worker starts (rank 0): " +
              ", ".join(f"world {s['world']} from step {s['resume_step']}" for s in e["torchrun_starts"]))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
