"""Errors of the user's module, said as FILE:LINE: what, pointing into the user's own code.

WorkerError carries the [model] key the problem belongs to (torch_file, torch_class,
torch_args, torch_python), so msomni-run can locate it in the config as well.
"""
import inspect
import os
import traceback


class WorkerError(Exception):
    def __init__(self, key, text):
        super().__init__(text)
        self.key = key
        self.text = text


def user_frame(exc, user_dir):
    """The innermost traceback frame in a file under user_dir, else None."""
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        path = os.path.realpath(frame.filename)
        if path.startswith(user_dir + os.sep):
            found = frame
    return found


def describe(exc, user_dir, fallback_where=""):
    """'FILE:LINE: Type: message' for an exception raised while running the user's code. The
    place is the innermost frame in the user's folder; a SyntaxError names its own place; when
    no frame is the user's (e.g. a constructor called with the wrong arguments), fallback_where."""
    what = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}: {type(exc).__name__}: {exc.msg}"
    frame = user_frame(exc, user_dir)
    if frame is not None:
        return f"{frame.filename}:{frame.lineno}: {what}"
    return f"{fallback_where}: {what}" if fallback_where else what


def definition_of(obj):
    """'FILE:LINE' where a class or function is defined, or its qualified name when unknown."""
    try:
        return f"{inspect.getsourcefile(obj)}:{inspect.getsourcelines(obj)[1]}"
    except (OSError, TypeError):
        return getattr(obj, "__qualname__", repr(obj))
