"""One micro-batch through the module: forward, the loss checked, backward scaled into the
shared gradients (training) or forward alone under no_grad in eval mode (evaluation)."""
import math
import random

import torch

from .saved_activations import SavedActivations
from .user_errors import WorkerError, definition_of, describe

try:
    import numpy
except ImportError:  # numpy is optional: only its global generator is seeded when present
    numpy = None


def seed_generators(seed):
    """Every generator a forward may draw from (dropout: torch's), from the seed msomni derives
    for this micro-batch: the same batch at the same step draws the same numbers on any rank, in
    any world size, after any resume."""
    torch.manual_seed(seed)
    random.seed(seed)
    if numpy is not None:
        numpy.random.seed(seed % (1 << 32))


def checked_loss(loss, module, training, require_finite):
    """The loss as a float; raises when it is not a scalar floating tensor (that needs grad, when
    training) or, with require_finite, not finite. Errors point at the module's forward."""
    # Where forward is defined, for the messages only: looking it up reads the source (about
    # 0.8 ms), too much to pay on every micro-batch.
    def where():
        return definition_of(type(module).forward)

    name = type(module).__name__
    if not isinstance(loss, torch.Tensor):
        raise WorkerError("torch_class", f"{where()}: {name}.forward returned {type(loss).__name__}; "
                          "msomni needs the mean loss as a scalar tensor")
    if loss.numel() != 1:
        raise WorkerError("torch_class", f"{where()}: {name}.forward returned a tensor of shape {list(loss.shape)}; "
                          "msomni needs the mean loss as a scalar tensor")
    if not loss.is_floating_point():
        raise WorkerError("torch_class", f"{where()}: {name}.forward returned a {loss.dtype} tensor; "
                          "msomni needs a floating-point loss")
    if training and not loss.requires_grad:
        raise WorkerError("torch_class", f"{where()}: {name}.forward returned a loss that depends on no parameter "
                          "(it does not require grad)")
    value = float(loss.detach().reshape(()))
    if require_finite and not math.isfinite(value):
        raise WorkerError("torch_class", f"{where()}: {name}.forward returned {value} on msomni's probe batch; "
                          "the loss must be finite")
    return value


def run(module, shared, batch, request, user_dir, shared_ranges=()):
    """Runs one micro-batch; returns (the loss, the bytes autograd saved for backward: 0 in
    evaluation). request: train (bool), grad_scale, seed, require_finite. shared_ranges: the
    address ranges of msomni's shared memory, whose tensors are not counted as activations."""
    training = bool(request["train"])
    seed_generators(int(request["seed"]))
    saved = SavedActivations(shared_ranges)
    try:
        if training:
            with saved.counting():
                loss = module(batch)
            value = checked_loss(loss, module, True, bool(request.get("require_finite", False)))
            (loss.reshape(()) * float(request["grad_scale"])).backward()
            problem = shared.replaced()
            if problem:
                raise WorkerError("torch_class", f"{definition_of(type(module).forward)}: during forward or backward, "
                                  + problem)
        else:
            module.eval()
            try:
                with torch.no_grad():
                    value = checked_loss(module(batch), module, False, bool(request.get("require_finite", False)))
            finally:
                module.train()
    except WorkerError:
        raise
    except Exception as e:
        phase = "forward or backward" if training else "forward (evaluation)"
        raise WorkerError("torch_class", f"{phase} failed: " +
                          describe(e, user_dir, definition_of(type(module).forward))) from None
    return value, saved.bytes
