"""`torch.distributed.elastic.multiprocessing.errors.record`, the decorator torchrun scripts put on main()."""
import functools

__all__ = ["record"]


def record(fn=None, error_handler=None):
    """Run `fn` as it is. torchelastic's version writes the exception to an error file for the agent; rawdev
    run reads each rank's exit status and last lines instead, so the traceback a failing rank prints is the report.

    Args:
        fn: the function to wrap (usually main).
        error_handler: accepted for PyTorch's signature.

    Returns:
        The function, wrapped.

    Example:
        >>> @record
        ... def main(): ...
    """
    if fn is None:
        return lambda f: record(f, error_handler)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper
