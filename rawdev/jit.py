"""rawdev.jit: TorchScript entry points accepted so programs that script or trace a function run.

rawdev runs eagerly and has no TorchScript compiler: `script` and `trace` return what they are given (with a
notice once), the decorators `ignore`/`unused`/`export` leave functions as they are, and `is_scripting()` is
False. Saving or loading a TorchScript archive is refused (it is a program, not a checkpoint).
"""
import warnings

__all__ = ["script", "trace", "trace_module", "ignore", "unused", "export", "is_scripting", "is_tracing",
           "script_method", "Final", "Attribute", "annotate", "save", "load", "ScriptModule", "ScriptFunction",
           "fork", "wait"]

_told = False


def _notice(what):
    global _told
    if not _told:
        _told = True
        warnings.warn(f"rawdev.jit.{what}: rawdev runs eagerly; the function or module is returned unchanged",
                      UserWarning, stacklevel=3)


def script(obj=None, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """torch.jit.script: the function or module itself (usable as a decorator)."""
    _notice("script")
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """torch.jit.trace: the function or module itself; example_inputs are not run."""
    _notice("trace")
    return func


def trace_module(mod, inputs, *args, **kwargs):
    _notice("trace_module")
    return mod


def ignore(drop=False, **kwargs):
    """@torch.jit.ignore and @torch.jit.ignore(drop=True): the function unchanged."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    return fn


def export(fn):
    return fn


def script_method(fn):
    """@torch.jit.script_method (on a ScriptModule subclass's methods): the method unchanged. The class can be
    defined; making one raises, as rawdev has no ScriptModule (subclass nn.Module instead)."""
    return fn


def is_scripting():
    """False: rawdev never runs TorchScript."""
    return False


def is_tracing():
    return False


def annotate(the_type, the_value):
    return the_value


class _Final:
    def __getitem__(self, item):
        return item


Final = _Final()    # typing.Final stand-in: `x: torch.jit.Final[int]`


def Attribute(value, type=None):  # noqa: N802,A002  (PyTorch's name)
    return value


class ScriptModule:
    """Not constructible: rawdev has no TorchScript modules (script() returns the nn.Module itself)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("rawdev has no TorchScript: use the nn.Module itself (rawdev.jit.script returns it)")


ScriptFunction = ScriptModule


def save(m, f, _extra_files=None):
    raise NotImplementedError("rawdev.jit.save: rawdev has no TorchScript archives; save the state_dict with "
                              "rawdev.save(model.state_dict(), path)")


def load(f, map_location=None, _extra_files=None):
    raise NotImplementedError("rawdev.jit.load: a TorchScript archive is a program, which rawdev does not run; load "
                              "a state_dict (rawdev.load reads PyTorch's .pt checkpoints) into the model class")


class _Future:
    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value


def fork(func, *args, **kwargs):
    """torch.jit.fork: runs func now (eagerly) and returns a future holding its result."""
    return _Future(func(*args, **kwargs))


def wait(future):
    return future.wait()
