"""The tensorboard package check: rawdev.utils.tensorboard imports without it, and a writer built without it
raises PyTorch's ImportError with how to install the optional extra."""
from typing import Any

_MESSAGE = ("TensorBoard logging requires TensorBoard version 1.15 or above "
            "(install it with `pip install rawdev[tensorboard]` or `pip install tensorboard`)")


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def require_tensorboard() -> Any:
    """Return the imported tensorboard package, or raise ImportError when it is missing or older than 1.15.

    Returns:
        The tensorboard module.

    Example:
        >>> tb = require_tensorboard()   # doctest: +SKIP
    """
    try:
        import tensorboard
    except ImportError as e:
        raise ImportError(_MESSAGE) from e
    version = getattr(tensorboard, "__version__", None)
    if not isinstance(version, str) or _version_tuple(version) < (1, 15):
        raise ImportError(_MESSAGE)
    return tensorboard
