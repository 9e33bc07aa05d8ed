"""Loads a safetensors file that `msomni ckpt export` wrote for a torch model into a fresh
instance of the module, with load_state_dict(strict=True), and prints what it found as one
JSON line. Reads the file itself (the format is a header and raw data), so it needs only torch.

  python3 load_exported.py FILE.safetensors MODULE.py CLASS '{"constructor": "args"}'
"""
import importlib.util
import json
import struct
import sys

import torch

DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
          "BOOL": torch.bool}


def read_safetensors(path):
    data = open(path, "rb").read()
    (header_len,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + header_len])
    metadata = header.pop("__metadata__", {})
    base = 8 + header_len
    tensors, aligned = {}, True
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = DTYPES[entry["dtype"]]
        aligned = aligned and begin % torch.tensor([], dtype=dtype).element_size() == 0
        raw = bytearray(data[base + begin:base + end])
        tensors[name] = (torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)).reshape(entry["shape"])
    return metadata, tensors, aligned


def main():
    path, module_file, class_name, args = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    spec = importlib.util.spec_from_file_location("exported_module", module_file)
    user = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(user)
    module = getattr(user, class_name)(**args)
    metadata, tensors, aligned = read_safetensors(path)
    module.load_state_dict(tensors, strict=True)  # raises on a missing or unexpected key
    state = module.state_dict()
    equal = all(torch.equal(state[k], tensors[k]) for k in state)
    out = {"keys": sorted(tensors), "equal": equal, "aligned": aligned,
           "class": json.loads(metadata.get("msomni_model_config", "{}")).get("torch_class")}
    if hasattr(module, "out") and hasattr(module, "embed"):
        out["tied"] = module.out.weight is module.embed.weight
        out["batches_seen"] = int(module.batches_seen)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
