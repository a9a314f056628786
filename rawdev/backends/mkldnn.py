"""torch.backends.mkldnn: rawdev has no oneDNN; the flag is recorded, is_available() is False."""
__all__ = ["enabled", "is_available"]

enabled = False


def is_available() -> bool:
    """False: rawdev is not built with oneDNN."""
    return False
