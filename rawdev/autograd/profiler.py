"""`torch.autograd.profiler`: the older profiler entry point, on rawdev.profiler's recorder. `profile` takes the
legacy signature (enabled, use_cuda, record_shapes, ...) and `record_function` names a range."""
from typing import Any

from ..profiler import EventList, record_function
from ..profiler import profile as _profile

__all__ = ["profile", "record_function", "EventList"]


class profile(_profile):  # noqa: N801  (PyTorch's name)
    """torch.autograd.profiler.profile(enabled=True, *, use_cuda=False, ...): rawdev.profiler.profile with the
    legacy arguments; enabled=False records nothing.

    Example:
        >>> with torch.autograd.profiler.profile(use_cuda=True) as prof:
        ...     model(x)
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: Any = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Any = None) -> None:
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules,
                         use_cuda=use_cuda or (use_device == "cuda"))
        self.enabled = enabled

    def __enter__(self):
        return super().__enter__() if self.enabled else self

    def __exit__(self, *exc):
        return super().__exit__(*exc) if self.enabled else False
