"""nn.utils.skip_init: build a module without running its parameter initialization."""
import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) whose parameters and buffers hold uninitialized memory on `device` (default
    cpu): built, then given fresh empty storage with to_empty, for code that initializes everything itself.
    The class must take a `device` argument, as PyTorch requires."""
    from ..module import Module
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    return module_cls(*args, **kwargs).to_empty(device=final_device)
