"""torch.backends.opt_einsum: PyTorch orders einsum contractions with the opt_einsum package when it is
installed. rawdev's einsum contracts left to right; the flags are recorded."""
__all__ = ["is_available", "enabled", "strategy", "get_opt_einsum"]

enabled = True
strategy = "auto"


def is_available() -> bool:
    """False: rawdev's einsum does not use opt_einsum."""
    return False


def get_opt_einsum():
    """None: opt_einsum is not used."""
    return None
