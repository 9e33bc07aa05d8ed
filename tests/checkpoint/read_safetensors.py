# Reads a safetensors file with nothing but json+struct (and cross-checks with torch when it
# is installed), printing "NAME SHAPE V1 V2 ..." per tensor, values as Python float reprs.
import json
import struct
import sys

path = sys.argv[1]
with open(path, "rb") as f:
    data = f.read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n].decode("utf-8"))
body = data[8 + n:]
meta = header.pop("__metadata__", {})
print("meta", json.dumps(meta, sort_keys=True))
try:
    import torch
except ImportError:
    torch = None
for name, info in header.items():
    assert info["dtype"] == "F32", info
    b, e = info["data_offsets"]
    count = (e - b) // 4
    values = struct.unpack("<%df" % count, body[b:e])
    shape = info["shape"]
    numel = 1
    for d in shape:
        numel *= d
    assert numel == count, (name, shape, count)
    if torch is not None:
        t = torch.frombuffer(bytearray(body[b:e]), dtype=torch.float32).reshape(shape)
        assert t.flatten().tolist() == list(values), name
    print(name, ",".join(str(d) for d in shape), " ".join(repr(v) for v in values))
print("torch:", "ok" if torch is not None else "absent")
