"""torch.backends.mha: the switch for PyTorch's fused multi-head-attention inference path. rawdev has one
attention path; the switch is recorded and read back."""
__all__ = ["get_fastpath_enabled", "set_fastpath_enabled"]

_fastpath = True


def get_fastpath_enabled() -> bool:
    """Whether the fast path may be used (True by default, as PyTorch)."""
    return _fastpath


def set_fastpath_enabled(value: bool) -> None:
    """Record the fast-path switch."""
    global _fastpath
    _fastpath = bool(value)
