"""`rawdev.distributed`: rawdev runs in one process and has no process groups. The query functions answer as
PyTorch's do before init_process_group, so programs that check `dist.is_available() and dist.is_initialized()`
take their single-process path; init_process_group says it cannot."""

__all__ = ["is_available", "is_initialized", "init_process_group", "get_rank", "get_world_size",
           "is_torchelastic_launched", "destroy_process_group"]


def is_available() -> bool:
    """False: rawdev has no distributed backend (no NCCL, Gloo or MPI)."""
    return False


def is_initialized() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    return False


def init_process_group(*args, **kwargs):
    raise RuntimeError("rawdev has no distributed backend: init_process_group is not available "
                       "(rawdev.distributed.is_available() is False); run the program as one process")


def _not_initialized():
    # PyTorch's wording when no default group exists
    return ValueError("Default process group has not been initialized, please make sure to call init_process_group.")


def get_rank(group=None) -> int:
    raise _not_initialized()


def get_world_size(group=None) -> int:
    raise _not_initialized()


def destroy_process_group(group=None) -> None:
    """PyTorch's answer without a process group: its `assert pg is not None` fails (an AssertionError), since
    there is no default group to destroy; programs call it after their init_process_group branch."""
    raise AssertionError("destroy_process_group(): no process group to destroy (init_process_group was not called)")


# collectives and group queries as PyTorch answers them before init_process_group (rawdev.distributed.collectives)
from .collectives import *  # noqa: E402,F401,F403
from .collectives import __all__ as _collectives_all  # noqa: E402

__all__ += _collectives_all
