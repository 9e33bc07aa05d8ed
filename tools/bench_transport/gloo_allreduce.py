"""Gloo peer for the all-reduce benchmark: torch.distributed all_reduce (float32, sum) with
backend gloo, same sizes and iteration counts. Prints "BENCH <bytes> <seconds>" from rank 0."""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    nbytes = 4096
    while nbytes <= 64 << 20:
        t = torch.ones(nbytes // 4, dtype=torch.float32)
        iters = 50 if nbytes <= 1 << 20 else (10 if nbytes <= 16 << 20 else 5)
        dist.all_reduce(t)
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        s = (time.perf_counter() - t0) / iters
        if rank == 0:
            print(f"BENCH {nbytes} {s}", flush=True)
        nbytes *= 4
    dist.destroy_process_group()


if __name__ == "__main__":
    world, port = int(sys.argv[1]), int(sys.argv[2])
    mp.spawn(run, args=(world, port), nprocs=world)
