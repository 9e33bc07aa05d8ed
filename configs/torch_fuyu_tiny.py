"""fuyu-tiny as a plain PyTorch nn.Module: the reference model msomni has built in
(actors/models/fuyu_tiny), written for the torch backend (docs/torch_models.md).

Each sample's sequence is its image or video patches, linearly projected into the token
stream, followed by its byte-level text; learned positions, a pre-LayerNorm causal
transformer, an untied LM head, and the loss on the text targets only: position
patch_counts[b] + t predicts token t + 1 wherever loss_mask[b, t + 1] is set.

forward(batch) takes msomni's micro-batch (msomni_torch.batch.Batch) and returns the mean
cross-entropy over the batch's target tokens. Nothing here imports msomni.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout):
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj_attn = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, d_ff)
        self.proj_mlp = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, causal):
        b, s, d = x.shape
        h = self.n_heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, s, h, d // h).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        scores = scores.masked_fill(causal[:s, :s], float("-inf"))
        attention = self.dropout(scores.softmax(dim=-1)) @ v
        x = x + self.dropout(self.proj_attn(attention.transpose(1, 2).reshape(b, s, d)))
        return x + self.dropout(self.proj_mlp(F.gelu(self.fc(self.ln2(x)), approximate="tanh")))


class FuyuTiny(nn.Module):
    def __init__(self, d_model=64, n_layers=2, n_heads=4, d_ff=256, patch_dim=192, max_seq_len=128,
                 vocab_size=260, dropout=0.0):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        self.max_seq_len = max_seq_len
        self.patch_proj = nn.Linear(patch_dim, d_model)
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_seq_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, d_ff, dropout) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.dropout = nn.Dropout(dropout)
        # GPT-2 style: N(0, 0.02) weights, residual projections shrunk by 1/sqrt(2 * layers).
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * n_layers) if name.endswith(("proj_attn.weight", "proj_mlp.weight")) else 0.02
                nn.init.normal_(p, std=std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
        causal = torch.ones(max_seq_len, max_seq_len, dtype=torch.bool).triu(1)
        self.register_buffer("causal", causal, persistent=False)

    def forward(self, batch):
        b, t = batch.batch_size, batch.text_len
        p = batch.max_patches
        s = p + t
        if s > self.max_seq_len:
            raise ValueError(f"{p} patch slots + {t} text tokens exceed max_seq_len {self.max_seq_len}")
        counts = batch.patch_counts.long()
        # Sample b's sequence: its counts[b] patches, then its text at positions counts[b] + i;
        # what is left of the s positions is padding after them, which causal attention keeps
        # every real position from seeing.
        x = torch.zeros(b, s, self.tok_emb.embedding_dim)
        if p:
            slots = torch.arange(p).unsqueeze(0) < counts.unsqueeze(1)
            x[:, :p] = self.patch_proj(batch.patches) * slots.unsqueeze(-1)
        text_at = counts.unsqueeze(1) + torch.arange(t).unsqueeze(0)  # [b, t]
        x = x.scatter(1, text_at.unsqueeze(-1).expand(-1, -1, x.shape[-1]), self.tok_emb(batch.tokens))
        x = self.dropout(x + self.pos_emb(torch.arange(s)))
        for block in self.blocks:
            x = block(x, self.causal)
        x = self.ln_f(x)
        # Text position i predicts token i + 1.
        targets = batch.tokens[:, 1:].long()
        mask = batch.loss_mask[:, 1:]
        rows = x.gather(1, text_at[:, :-1].unsqueeze(-1).expand(-1, -1, x.shape[-1]))
        logits = self.lm_head(rows[mask])
        return F.cross_entropy(logits, targets[mask])
