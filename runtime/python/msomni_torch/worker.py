"""The worker process of one rank's torch model: answers the rank's requests until it closes
the socket (descriptor 0 at start). Requests and replies are channel.py frames; every reply has
"ok", and a failed one "error" (FILE:LINE: what) and "key" (the [model] key it concerns).

  hello (sent unasked at start)  {"python", "torch"} or the reason torch cannot be imported
  build   {file, class, args, seed, threads}   -> {"parameters": [{name, shape, decay}],
                                                   "aliases": {state_dict name: parameter name},
                                                   "buffers": [names], "where": FILE:LINE}
  attach  fds [parameters, gradients]          copies the initial values into the shared buffers
  forward {train, grad_scale, seed, require_finite, dims, offsets[, batch_bytes + fd]}
                                               -> {"activation_bytes"} (saved_activations.py),
                                                  tail: the loss, float64 little-endian
  placement                                    -> {"parameters": [{name, value, grad}]}: where
                                                  each parameter's storage and .grad start, in
                                                  bytes into the shared buffers (-1: outside)
  save                                         -> tail: the buffers blob (module_buffers.py)
  load    tail: a buffers blob                 checked, then copied in
"""
import mmap
import os
import struct
import sys
import traceback

from .channel import Channel, ChannelClosed


def _error_reply(key, text):
    return {"ok": False, "key": "model." + key, "error": text}


class Worker:
    def __init__(self):
        self.module = None
        self.shared = None
        self.table = None
        self.user_dir = ""
        self.batch_memory = None
        self.shared_ranges = []  # address ranges of the shared buffers and the batch memory

    def build(self, request, _tail, _fds):
        import torch

        from . import module_loading, shared_parameters, module_buffers
        from .user_errors import definition_of

        path = request["file"]
        self.user_dir = os.path.dirname(os.path.realpath(path))
        if request.get("threads", 0) > 0:
            torch.set_num_threads(int(request["threads"]))
        user_module = module_loading.import_user_file(path)
        cls = module_loading.module_class(user_module, path, request["class"])
        # Every replica builds the same initial weights: the seed is the job's.
        torch.manual_seed(int(request["seed"]))
        module = module_loading.construct(cls, request["args"], path)
        module.train()
        self.table = shared_parameters.parameter_table(module)
        aliases = shared_parameters.state_dict_aliases(module, self.table)
        buffers = list(module_buffers.persistent_buffers(module))
        self.module = module
        return {"parameters": [{"name": n, "shape": list(p.shape), "decay": p.dim() >= 2} for n, p in self.table],
                "aliases": aliases, "buffers": buffers, "where": definition_of(cls)}, b""

    def attach(self, _request, _tail, fds):
        from .shared_parameters import SharedParameters

        self.shared = SharedParameters(self.table, fds[0], fds[1])
        self.shared_ranges = self.shared.ranges()
        return {}, b""

    def forward(self, request, _tail, fds):
        from . import batch as batch_view
        from . import forward_pass
        from .saved_activations import memory_range

        if fds:
            self.batch_memory = mmap.mmap(fds[0], int(request["batch_bytes"]), mmap.MAP_SHARED,
                                          mmap.PROT_READ | mmap.PROT_WRITE)
            self.shared_ranges = self.shared.ranges() + [memory_range(self.batch_memory)]
        batch = batch_view.batch_from_memory(self.batch_memory, request)
        loss, activation_bytes = forward_pass.run(self.module, self.shared, batch, request, self.user_dir,
                                                  self.shared_ranges)
        return {"activation_bytes": activation_bytes}, struct.pack("<d", loss)

    def placement(self, _request, _tail, _fds):
        return {"parameters": self.shared.placement()}, b""

    def save(self, _request, _tail, _fds):
        from .module_buffers import save_buffers

        return {}, save_buffers(self.module)

    def load(self, _request, tail, _fds):
        from .module_buffers import load_buffers

        load_buffers(self.module, tail)
        return {}, b""


def serve(channel):
    from .user_errors import WorkerError

    worker = Worker()
    handlers = {"build": worker.build, "attach": worker.attach, "forward": worker.forward,
                "save": worker.save, "load": worker.load, "placement": worker.placement}
    while True:
        try:
            request, tail, fds = channel.receive()
        except ChannelClosed:
            return
        try:
            handler = handlers.get(request.get("op"))
            if handler is None:
                reply, out = _error_reply("name", f"the worker has no request '{request.get('op')}'"), b""
            else:
                reply, out = handler(request, tail, fds)
                reply["ok"] = True
        except WorkerError as e:
            reply, out = _error_reply(e.key, e.text), b""
        except Exception:  # a fault of this package, not of the module: the whole traceback
            reply, out = _error_reply("name", "the torch worker failed: " + traceback.format_exc()), b""
        finally:
            for fd in fds:
                os.close(fd)
        channel.send(reply, out)


def main():
    # Descriptor 0 is the socket to the rank; stdin becomes /dev/null so that nothing the
    # module does can read from the socket.
    channel = Channel(os.dup(0))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        import torch
    except Exception as e:  # ImportError, or a broken installation's own error
        channel.send(_error_reply("torch_python", f"{sys.executable} (Python {sys.version.split()[0]}) "
                                  f"cannot import torch: {type(e).__name__}: {e}"))
        return
    channel.send({"ok": True, "python": sys.version.split()[0], "torch": torch.__version__})
    try:
        serve(channel)
    except (BrokenPipeError, ConnectionResetError, ChannelClosed):
        pass  # the rank is gone
