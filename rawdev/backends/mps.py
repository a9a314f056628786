"""torch.backends.mps: rawdev has no Metal backend."""
__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: no MPS device."""
    return False


def is_built() -> bool:
    """False: rawdev is not built with MPS."""
    return False
