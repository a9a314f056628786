"""torch.backends.openmp: rawdev's cpu path does not use OpenMP."""
__all__ = ["is_available"]


def is_available() -> bool:
    """False."""
    return False
