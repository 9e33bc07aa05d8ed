"""The micro-batch a module's forward(batch) receives: msomni's micro_batch
(runtime/model/micro_batch.hpp) as tensors over the shared memory the rank wrote it into, with
no copy. B samples, each patch_counts[b] image or video patches followed by text_len tokens.

  batch.patches       float32 [B, P, D]  RGB in [0, 1], channel-last within a patch; rows past
                                         patch_counts[b] are padding
  batch.patch_counts  int32   [B]        0 for text, one frame's patches for an image, whole
                                         frames for a video
  batch.tokens        int32   [B, T]     byte-level: BOS, the bytes, EOS, then PAD
  batch.loss_mask     bool    [B, T]     True where token t is a prediction target (the tokens
                                         after BOS up to and including EOS)
  batch.modalities    uint8   [B]        IMAGE, VIDEO or TEXT
  batch.batch_size, batch.max_patches, batch.patch_dim, batch.text_len: B, P, D and T

The tensors are valid during the forward call only (the next micro-batch overwrites the
memory), and are read-only by contract. int32 tokens serve nn.Embedding as they are; use
.long() where torch wants int64 (cross_entropy's targets).
"""
import torch

# core/modality.hpp
IMAGE = 0
VIDEO = 1
TEXT = 2

# model/text_tokens.hpp
TOKEN_BOS = 256
TOKEN_EOS = 257
TOKEN_PAD = 258
TOKEN_IMAGE_SEP = 259
VOCAB_SIZE = 260


class Batch:
    __slots__ = ("patches", "patch_counts", "tokens", "loss_mask", "modalities",
                 "batch_size", "max_patches", "patch_dim", "text_len")

    def __repr__(self):
        return (f"Batch(batch_size={self.batch_size}, max_patches={self.max_patches}, "
                f"patch_dim={self.patch_dim}, text_len={self.text_len})")


def _view(memory, dtype, offset, shape):
    count = 1
    for s in shape:
        count *= s
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(memory, dtype=dtype, count=count, offset=offset).view(shape)


def batch_from_memory(memory, request):
    """The Batch in `memory` (an mmap) at the offsets the rank sent: request["dims"] is
    [B, P, D, T] and request["offsets"] the byte offset of each field."""
    b, p, d, t = request["dims"]
    at = request["offsets"]
    batch = Batch()
    batch.batch_size, batch.max_patches, batch.patch_dim, batch.text_len = b, p, d, t
    batch.patches = _view(memory, torch.float32, at["patches"], (b, p, d))
    batch.patch_counts = _view(memory, torch.int32, at["patch_counts"], (b,))
    batch.tokens = _view(memory, torch.int32, at["tokens"], (b, t))
    batch.loss_mask = _view(memory, torch.uint8, at["loss_mask"], (b, t)).view(torch.bool)
    batch.modalities = _view(memory, torch.uint8, at["modalities"], (b,))
    return batch
