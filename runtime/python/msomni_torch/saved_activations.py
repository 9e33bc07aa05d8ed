"""The bytes of the tensors autograd keeps for backward during one training micro-batch: the
module's activations, which the rank adds to its memory account for that micro-batch (its
per-step samples, the journal and the budget then see them as they see a native model's).

Counted by a saved_tensors_hooks pack hook, each storage once. Storages inside msomni's shared
memory (the parameters, the gradients, the micro-batch) are counted by the rank already and
are skipped. Not counted: temporaries autograd does not keep (freed within forward or
backward), and the interpreter's and torch's own memory.
"""
import torch


def _storage_of(tensor):
    # torch 2.x has untyped_storage() (and warns on storage()); 1.13 has storage() only.
    untyped = getattr(tensor, "untyped_storage", None)
    return untyped() if untyped is not None else tensor.storage()


class SavedActivations:
    def __init__(self, shared_ranges):
        self._shared = list(shared_ranges)  # [(first address, end address)]
        self._seen = set()
        self.bytes = 0

    def _pack(self, tensor):
        try:
            storage = _storage_of(tensor)
        except (RuntimeError, NotImplementedError):  # a tensor without storage (sparse, nested)
            return tensor
        address = storage.data_ptr()
        if address not in self._seen:
            self._seen.add(address)
            if not any(first <= address < end for first, end in self._shared):
                self.bytes += storage.nbytes()
        return tensor

    def counting(self):
        """The context in which forward runs: every tensor saved for backward passes _pack."""
        return torch.autograd.graph.saved_tensors_hooks(self._pack, lambda tensor: tensor)


def memory_range(memory):
    """(first address, end address) of an mmap."""
    if len(memory) == 0:
        return (0, 0)
    first = torch.frombuffer(memory, dtype=torch.uint8, count=1).data_ptr()
    return (first, first + len(memory))
