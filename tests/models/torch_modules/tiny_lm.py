"""A small byte-level language model for the torch backend's tests: text tokens only (patches
are ignored), an embedding, a hidden layer with dropout and a LayerNorm, an output layer that
can share the embedding's weight, and a running mean of the loss kept as a buffer (state the
checkpoint must carry). `mode` makes forward misbehave in the ways msomni must refuse;
`delay_ms` makes each forward take that much longer (a job slow enough to act on while it
trains)."""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyLM(nn.Module):
    def __init__(self, width=16, vocab_size=260, dropout=0.0, tied=False, mode="loss", delay_ms=0):
        super().__init__()
        self.mode = mode
        self.delay_s = delay_ms / 1000
        self.embed = nn.Embedding(vocab_size, width)
        self.hidden = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)
        self.out = nn.Linear(width, vocab_size, bias=False)
        if tied:
            self.out.weight = self.embed.weight
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("loss_mean", torch.zeros(()))
        self.register_buffer("batches_seen", torch.zeros((), dtype=torch.int64))

    def forward(self, batch):
        if self.delay_s:
            time.sleep(self.delay_s)
        h = self.dropout(torch.tanh(self.hidden(self.embed(batch.tokens))))
        logits = self.out(self.norm(h))[:, :-1]
        mask = batch.loss_mask[:, 1:]
        per_token = F.cross_entropy(logits[mask], batch.tokens[:, 1:][mask].long(), reduction="none")
        loss = per_token.mean()
        if self.training:
            with torch.no_grad():
                self.batches_seen += 1
                self.loss_mean += (loss.detach() - self.loss_mean) / self.batches_seen
        if self.mode == "vector":
            return per_token
        if self.mode == "nan":
            return loss * float("nan")
        if self.mode == "detached":
            return loss.detach()
        if self.mode == "raise":
            raise RuntimeError("the module gave up")
        if self.mode == "zero_grad":
            self.zero_grad(set_to_none=True)
        return loss


class NotAModule:
    pass
