"""Importing the user's file, finding its nn.Module class and constructing it, each failure a
WorkerError naming the [model] key and the user's FILE:LINE."""
import importlib.util
import os
import sys

import torch

from .user_errors import WorkerError, definition_of, describe, user_frame


def import_user_file(path):
    """The user's file as a module named after it; its folder goes first on sys.path, so it
    may import its neighbours."""
    if not os.path.isfile(path):
        raise WorkerError("torch_file", f"{path}: no such file")
    folder = os.path.dirname(os.path.realpath(path))
    sys.path.insert(0, folder)
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise WorkerError("torch_file", f"{path}: not a Python file (it cannot be imported)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # SystemExit and KeyboardInterrupt in the file are its errors too
        raise WorkerError("torch_file", "importing failed: " + describe(e, folder, path)) from None
    return module


def module_class(module, path, class_name):
    cls = getattr(module, class_name, None)
    if cls is None:
        defined = sorted(n for n, v in vars(module).items()
                         if isinstance(v, type) and issubclass(v, torch.nn.Module)
                         and v.__module__ == module.__name__)
        raise WorkerError("torch_class", f"{path}: no class '{class_name}' (nn.Module classes defined there: "
                          f"{', '.join(defined) if defined else 'none'})")
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        raise WorkerError("torch_class", f"{definition_of(cls) if isinstance(cls, type) else path}: "
                          f"'{class_name}' is not a subclass of torch.nn.Module")
    return cls


def construct(cls, args, path):
    """cls(**args). A TypeError raised at the call itself (no frame of the user's) is about the
    arguments: it belongs to torch_args; anything raised inside the constructor to torch_class."""
    folder = os.path.dirname(os.path.realpath(path))
    try:
        instance = cls(**args)
    except BaseException as e:
        text = describe(e, folder, definition_of(cls))
        key = "torch_args" if isinstance(e, TypeError) and user_frame(e, folder) is None else "torch_class"
        raise WorkerError(key, f"constructing {cls.__name__}(**model.torch_args) failed: {text}") from None
    return instance
