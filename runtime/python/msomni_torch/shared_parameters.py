"""The module's parameters and gradients as views into msomni's flat buffers.

msomni owns two float32 buffers of the same length in shared memory: parameters and
gradients, one slice per parameter in the order of parameter_table(). attach() copies each
parameter's initial value into its slice and makes the slice its storage (param.data) and its
.grad, so backward accumulates straight into the buffer msomni all-reduces, and msomni's AdamW
updates the weights the module computes with. No copy is made per step.
"""
import mmap

import torch

from .user_errors import WorkerError


def parameter_table(module):
    """(name, parameter) for every distinct parameter (a tied one once, under its first name),
    refusing what msomni cannot train: not float32, frozen, sparse, or not on the CPU."""
    table = list(module.named_parameters())
    for name, p in table:
        problem = None
        if p.dtype != torch.float32:
            problem = f"is {p.dtype}; msomni trains float32 parameters (call .float() in the constructor)"
        elif not p.requires_grad:
            problem = "is frozen (requires_grad=False); not built yet: msomni trains every parameter"
        elif p.is_sparse:
            problem = "is sparse; msomni trains dense parameters"
        elif p.device.type != "cpu":
            problem = f"is on {p.device}; create the module on the CPU (the torch backend computes there)"
        elif p.numel() == 0:
            problem = "has no elements"
        if problem:
            raise WorkerError("torch_class", f"parameter '{name}' {problem}")
    if not table:
        raise WorkerError("torch_class", "the module has no parameters: there is nothing to train")
    return table


def state_dict_aliases(module, table):
    """{state_dict name: parameter name} for the state_dict entries that repeat a parameter
    under another name (tied weights)."""
    canonical = {id(p): name for name, p in table}
    aliases = {}
    for key, value in module.state_dict(keep_vars=True).items():
        name = canonical.get(id(value))
        if name is not None and name != key:
            aliases[key] = name
    return aliases


def map_floats(fd, count):
    memory = mmap.mmap(fd, count * 4, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    return memory, torch.frombuffer(memory, dtype=torch.float32, count=count)


class SharedParameters:
    def __init__(self, table, params_fd, grads_fd):
        self.table = table
        total = sum(p.numel() for _, p in table)
        self._params_memory, self.params = map_floats(params_fd, total)
        self._grads_memory, self.grads = map_floats(grads_fd, total)
        self._views = []
        offset = 0
        with torch.no_grad():
            for _, p in table:
                n = p.numel()
                value = self.params[offset:offset + n].view(p.shape)
                grad = self.grads[offset:offset + n].view(p.shape)
                value.copy_(p.data)
                grad.zero_()
                p.data = value
                p.grad = grad
                self._views.append((value.data_ptr(), grad.data_ptr()))
                offset += n

    def replaced(self):
        """What the module replaced of msomni's memory (a parameter's storage or its .grad:
        zero_grad(), set_to_none, an optimizer of its own), or None. The gradients would no
        longer reach msomni, so a forward that does it is refused."""
        for (name, p), (value_ptr, grad_ptr) in zip(self.table, self._views):
            if p.data_ptr() != value_ptr:
                return f"parameter '{name}' was given new storage; msomni owns the parameters (do not assign .data)"
            if p.grad is None or p.grad.data_ptr() != grad_ptr:
                return (f"parameter '{name}'.grad was replaced; msomni owns the gradients "
                        "(do not call zero_grad() or set .grad)")
        return None

    def ranges(self):
        """The address ranges of the two shared buffers: [(first, end), (first, end)]."""
        return [(t.data_ptr(), t.data_ptr() + t.numel() * 4) for t in (self.params, self.grads)]

    def placement(self):
        """Where each parameter's storage and its .grad start now, in bytes from the start of
        the parameter and gradient buffers; -1 where one lies outside them."""
        def offset(tensor, buffer):
            if tensor is None:
                return -1
            first, size = buffer.data_ptr(), buffer.numel() * 4
            at = tensor.data_ptr() - first
            return at if 0 <= at and at + tensor.numel() * 4 <= size else -1

        return [{"name": name, "value": offset(p.data, self.params), "grad": offset(p.grad, self.grads)}
                for name, p in self.table]

