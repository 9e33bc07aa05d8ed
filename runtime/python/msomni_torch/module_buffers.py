"""The module's persistent buffers (its state_dict entries that are not parameters, e.g.
BatchNorm's running statistics) as one byte blob for msomni's checkpoints, and back.

The blob is a JSON header, then the raw bytes of each buffer (C order, little-endian):
  u64 header length, header {"buffers": [{"name", "dtype", "shape", "offset", "bytes"}]}, data
where "dtype" is the safetensors name (F32, F64, F16, BF16, I64, I32, I16, I8, U8, BOOL) and
offsets count from the start of the data. `msomni ckpt export` reads the same form
(actors/models/torch_module/torch_state_blobs.cpp).
"""
import json
import struct

import torch

from .user_errors import WorkerError

DTYPES = {
    torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}
BY_NAME = {v: k for k, v in DTYPES.items()}


def persistent_buffers(module):
    """name -> tensor for the buffers state_dict() holds, in its order."""
    parameters = {id(p) for p in module.parameters()}
    out = {}
    for key, value in module.state_dict(keep_vars=True).items():
        if id(value) in parameters:
            continue
        if not isinstance(value, torch.Tensor):
            continue
        if value.dtype not in DTYPES:
            raise WorkerError("torch_class", f"buffer '{key}' is {value.dtype}, which msomni cannot checkpoint")
        out[key] = value
    return out


def _raw_bytes(t):
    flat = t.detach().cpu().contiguous().reshape(-1)
    if flat.dtype == torch.bfloat16:  # numpy has no bfloat16: the same bits as int16
        flat = flat.view(torch.int16)
    return flat.numpy().tobytes()


def _from_raw(raw, like):
    dtype = torch.int16 if like.dtype == torch.bfloat16 else like.dtype
    t = torch.frombuffer(bytearray(raw), dtype=dtype)
    return t.view(like.dtype).reshape(like.shape)


def save_buffers(module):
    entries, chunks, offset = [], [], 0
    for name, t in persistent_buffers(module).items():
        data = _raw_bytes(t)
        entries.append({"name": name, "dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "offset": offset, "bytes": len(data)})
        chunks.append(data)
        offset += len(data)
    header = json.dumps({"buffers": entries}).encode("utf-8")
    return struct.pack("<Q", len(header)) + header + b"".join(chunks)


def load_buffers(module, blob):
    """Checks every entry against the module's buffers first, then copies them in: a blob
    that does not fit changes nothing."""
    if len(blob) < 8:
        raise WorkerError("torch_file", "the checkpoint's torch/buffers blob is truncated")
    (header_len,) = struct.unpack_from("<Q", blob, 0)
    entries = json.loads(blob[8:8 + header_len].decode("utf-8"))["buffers"]
    data = memoryview(blob)[8 + header_len:]
    mine = persistent_buffers(module)
    given = {e["name"]: e for e in entries}
    for name, t in mine.items():
        e = given.get(name)
        if e is None:
            raise WorkerError("torch_class", f"the checkpoint has no buffer '{name}'")
        if BY_NAME.get(e["dtype"]) != t.dtype or list(e["shape"]) != list(t.shape):
            raise WorkerError("torch_class", f"buffer '{name}' is {e['dtype']} {e['shape']} in the checkpoint, "
                              f"{DTYPES[t.dtype]} {list(t.shape)} in the module")
    extra = sorted(set(given) - set(mine))
    if extra:
        raise WorkerError("torch_class", f"the checkpoint has buffers the module lacks: {', '.join(extra)}")
    for name, t in mine.items():
        e = given[name]
        if e["bytes"] != t.numel() * t.element_size():
            raise WorkerError("torch_class", f"buffer '{name}' has {e['bytes']} bytes in the checkpoint, "
                              f"{t.numel() * t.element_size()} in the module")
    with torch.no_grad():
        for name, t in mine.items():
            e = given[name]
            if t.numel() == 0:
                continue
            t.copy_(_from_raw(data[e["offset"]:e["offset"] + e["bytes"]], t))
