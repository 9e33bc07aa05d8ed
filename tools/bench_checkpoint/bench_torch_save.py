# Peer for bench_checkpoint: torch.save of the same tensors (read from the raw file the C++
# benchmark wrote), followed by fsync, like our save. Prints one line of JSON.
import json
import os
import sys
import time

import torch

raw_path, shapes_path, out_path, threads, reps = sys.argv[1:6]
torch.set_num_threads(int(threads))
with open(shapes_path) as f:
    shapes = json.load(f)
data = open(raw_path, "rb").read()
tensors = {}
offset = 0
for name, shape in shapes:
    n = 1
    for d in shape:
        n *= d
    tensors[name] = torch.frombuffer(bytearray(data[offset:offset + 4 * n]),
                                     dtype=torch.float32).reshape(shape)
    offset += 4 * n
seconds = []
for _ in range(int(reps)):
    if os.path.exists(out_path):
        os.remove(out_path)
    t0 = time.perf_counter()
    with open(out_path, "wb") as f:
        torch.save(tensors, f)
        f.flush()
        os.fsync(f.fileno())
    seconds.append(time.perf_counter() - t0)
os.remove(out_path)
print(json.dumps({"seconds": seconds, "bytes": offset}))
