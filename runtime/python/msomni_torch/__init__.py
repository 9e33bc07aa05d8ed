"""msomni's side of a PyTorch model: the process that runs a user's torch.nn.Module for one
msomni rank (docs/torch_models.md).

The rank starts `python -c ...` with this package on sys.path and talks to msomni_torch.worker
over a socket; parameters, gradients and each micro-batch live in shared memory. A module needs
nothing from this package: its forward(batch) reads the fields of a msomni_torch.batch.Batch
and returns the mean loss over the batch's target tokens. The constants a module may want
(token ids, modality codes) are in msomni_torch.batch.

This file imports nothing, so the worker can report a missing torch itself.
"""
