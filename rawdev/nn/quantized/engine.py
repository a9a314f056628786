"""The quantized engine in use (what rawdev.backends.quantized.engine reads and sets), kept beside the quantized
modules that consult it: PyTorch's names and checks."""

__all__ = ["current_engine", "set_engine", "supported_engines"]

_IDS = {"none": 0, "fbgemm": 1, "qnnpack": 2, "onednn": 3, "x86": 4}
_SUPPORTED = ("qnnpack", "none", "onednn", "x86", "fbgemm")   # what PyTorch's x86 builds list
_current = ["x86"]


def current_engine():
    """The engine in use.

    Returns:
        Its name ("x86" unless set).

    Example:
        >>> current_engine()
        'x86'
    """
    return _current[0]


def supported_engines():
    """The engine names that may be set.

    Returns:
        A new list.

    Example:
        >>> "qnnpack" in supported_engines()
        True
    """
    return list(_SUPPORTED)


def set_engine(qengine):
    """Use another engine; RuntimeError (PyTorch's wording) for a name PyTorch does not know.

    Args:
        qengine: "x86", "fbgemm", "qnnpack", "onednn" or "none" ("" and None mean "none").

    Example:
        >>> set_engine("qnnpack")
    """
    if qengine is None or qengine == "":
        qengine = "none"
    if qengine not in _IDS:
        raise RuntimeError(f"{qengine} is not a valid value for quantized engine")
    if qengine not in _SUPPORTED:
        raise RuntimeError(f"quantized engine {qengine.upper()} is not supported")
    _current[0] = qengine
