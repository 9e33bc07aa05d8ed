#!/usr/bin/python3
"""fuyu-tiny in PyTorch 1.13 (CPU), the peer of msomni-bench-train.

Reads the run that `msomni-bench-train --dump DIR` wrote (sizes, initial parameters by
name, the pool of micro-batches, optimizer settings) and trains the same architecture on
the same batches in the same order: patches projected into the token stream, byte token
embedding, learned positions, pre-LayerNorm blocks (causal multi-head attention, tanh-GELU
MLP), final LayerNorm, separate output head without bias, cross-entropy on text targets
only, AdamW (decay on matrices only) after global-norm clipping. Prints the per-step losses
and tokens/s over the timed steps, counted as msomni counts them (patches + text positions).
"""
import argparse
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def read_meta(path):
    meta = {}
    with open(os.path.join(path, "meta.txt")) as f:
        for line in f:
            key, value = line.split()
            meta[key] = float(value) if "." in value or "e" in value else int(value)
    return meta


def read_params(path):
    table = []
    with open(os.path.join(path, "params.txt")) as f:
        for line in f:
            name, offset, size, decay, *shape = line.split()
            table.append((name, int(offset), int(size), decay == "1", [int(s) for s in shape]))
    flat = torch.from_file(os.path.join(path, "params.bin"), size=sum(t[2] for t in table),
                           dtype=torch.float32)
    return table, flat


def read_batches(path, m):
    b, p, pd, t = m["batch"], m["max_patches"], m["patch_dim"], m["text_len"]
    raw = open(os.path.join(path, "batches.bin"), "rb").read()
    data = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    out, pos = [], 0

    def take(count, dtype, itemsize):
        nonlocal pos
        chunk = data[pos:pos + count * itemsize].view(dtype)
        pos += count * itemsize
        return chunk.clone()

    for _ in range(m["pool"]):
        patches = take(b * p * pd, torch.float32, 4).view(b, p, pd)
        counts = take(b, torch.int32, 4).long()
        tokens = take(b * t, torch.int32, 4).long().view(b, t)
        mask = take(b * t, torch.uint8, 1).view(b, t)
        out.append(make_inputs(patches, counts, tokens, mask, p, t))
    return out


def make_inputs(patches, counts, tokens, mask, p, t):
    """The per-batch index tensors: where each sequence position takes its embedding from
    (its patches, then its text, then a zero row for padding) and its target byte."""
    b = tokens.shape[0]
    s = p + t
    pos = torch.arange(s).unsqueeze(0).expand(b, s)
    c = counts.unsqueeze(1)
    gather = torch.where(pos < c, pos, torch.where(pos < c + t, p + (pos - c), p + t))
    targets = torch.full((b, s), -100, dtype=torch.long)
    for i in range(b):
        for j in range(t - 1):
            if mask[i, j + 1]:
                targets[i, int(counts[i]) + j] = tokens[i, j + 1]
    return {"patches": patches, "tokens": tokens, "gather": gather, "targets": targets,
            "input_tokens": b * t + int(counts.sum())}


class block(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d, eps=1e-5)
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-5)
        self.fc = nn.Linear(d, ff)
        self.proj = nn.Linear(ff, d)

    def forward(self, x, causal):
        b, s, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, s, self.heads, hd).transpose(1, 2)
        k = k.view(b, s, self.heads, hd).transpose(1, 2)
        v = v.view(b, s, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(causal[:s, :s], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        h = x + self.o(y)
        return h + self.proj(F.gelu(self.fc(self.ln2(h)), approximate="tanh"))


class fuyu_tiny(nn.Module):
    def __init__(self, m):
        super().__init__()
        d = m["d_model"]
        self.patch_proj = nn.Linear(m["patch_dim"], d)
        self.tok_emb = nn.Embedding(m["vocab"], d)
        self.pos_emb = nn.Parameter(torch.zeros(m["max_seq_len"], d))
        self.blocks = nn.ModuleList(block(d, m["heads"], m["d_ff"]) for _ in range(m["layers"]))
        self.ln_f = nn.LayerNorm(d, eps=1e-5)
        self.head = nn.Linear(d, m["vocab"], bias=False)
        n = m["max_seq_len"]
        self.register_buffer("causal", torch.ones(n, n, dtype=torch.bool).triu(1))

    def forward(self, inp):
        patches, tokens, gather = inp["patches"], inp["tokens"], inp["gather"]
        b, s = gather.shape
        d = self.pos_emb.shape[1]
        parts = torch.cat([self.patch_proj(patches), self.tok_emb(tokens),
                           patches.new_zeros(b, 1, d)], dim=1)
        x = parts.gather(1, gather.unsqueeze(-1).expand(b, s, d)) + self.pos_emb[:s]
        for blk in self.blocks:
            x = blk(x, self.causal)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(b * s, -1), inp["targets"].view(-1), ignore_index=-100)

    def load_msomni(self, table, flat):
        """Copies msomni's initial values in; its matrices are [in, out], nn.Linear's [out, in]."""
        by_name = {name: flat[off:off + size].view(*shape) for name, off, size, _, shape in table}
        targets = {"patch_proj.w": self.patch_proj.weight, "patch_proj.b": self.patch_proj.bias,
                   "tok_emb": self.tok_emb.weight, "pos_emb": self.pos_emb,
                   "ln_f.g": self.ln_f.weight, "ln_f.b": self.ln_f.bias,
                   "lm_head.w": self.head.weight}
        for i, blk in enumerate(self.blocks):
            p = f"layer{i}."
            targets.update({p + "ln1.g": blk.ln1.weight, p + "ln1.b": blk.ln1.bias,
                            p + "attn.w_qkv": blk.qkv.weight, p + "attn.b_qkv": blk.qkv.bias,
                            p + "attn.w_o": blk.o.weight, p + "attn.b_o": blk.o.bias,
                            p + "ln2.g": blk.ln2.weight, p + "ln2.b": blk.ln2.bias,
                            p + "mlp.w_fc": blk.fc.weight, p + "mlp.b_fc": blk.fc.bias,
                            p + "mlp.w_proj": blk.proj.weight, p + "mlp.b_proj": blk.proj.bias})
        assert set(targets) == set(by_name), set(targets) ^ set(by_name)
        decay, no_decay = [], []
        with torch.no_grad():
            for name, _, _, wd, _ in table:
                src, dst = by_name[name], targets[name]
                transpose = src.dim() == 2 and name not in ("tok_emb", "pos_emb")
                dst.copy_(src.t() if transpose else src)
                (decay if wd else no_decay).append(dst)
        return decay, no_decay


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dump", help="directory written by msomni-bench-train --dump")
    ap.add_argument("--threads", type=int, help="default: the dump's thread count")
    ap.add_argument("--foreach", action="store_true", help="AdamW(foreach=True)")
    args = ap.parse_args()
    m = read_meta(args.dump)
    threads = args.threads or m["threads"]
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    table, flat = read_params(args.dump)
    pool = read_batches(args.dump, m)
    model = fuyu_tiny(m)
    decay, no_decay = model.load_msomni(table, flat)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": m["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=m["lr"], betas=(m["beta1"], m["beta2"]), eps=m["eps"],
                            foreach=True if args.foreach else None)
    accum, nxt, tokens, losses = m["grad_accum"], 0, 0, []

    def step():
        nonlocal nxt, tokens
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for _ in range(accum):
            inp = pool[nxt % len(pool)]
            nxt += 1
            loss = model(inp)
            (loss / accum).backward()
            total += loss.item()
            tokens += inp["input_tokens"]
        torch.nn.utils.clip_grad_norm_(model.parameters(), m["grad_clip"])
        opt.step()
        losses.append(total / accum)

    for _ in range(m["warmup"]):
        step()
    tokens = 0
    t0 = time.perf_counter()
    for _ in range(m["steps"]):
        step()
    seconds = time.perf_counter() - t0
    print(f"torch {torch.__version__} threads {torch.get_num_threads()} params "
          f"{sum(p.numel() for p in model.parameters())}")
    print("losses " + " ".join(f"{x:.6f}" for x in losses))
    print(f"steps {m['steps']} seconds {seconds:.4f} step_ms {1e3 * seconds / m['steps']:.3f} "
          f"tokens {tokens} tokens_per_s {tokens / seconds:.1f}")


if __name__ == "__main__":
    main()
