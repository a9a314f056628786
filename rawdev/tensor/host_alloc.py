"""Host (cpu) allocations with PyTorch's errors instead of numpy's.

numpy refuses a request it cannot represent with "array is too big" (ValueError) and one the system will not give
with MemoryError; PyTorch says "Storage size calculation overflowed with sizes=[...]" for a byte count past int64
and "DefaultCPUAllocator: can't allocate memory: you tried to allocate N bytes. Error code 12 (Cannot allocate
memory)" for one the system refuses. A request larger than the machine's memory and swap together is refused
before numpy is asked (no allocation is attempted), so a mistyped size never makes the process touch swap.
"""
import math
import os

import numpy as np

__all__ = ["check_host_request", "check_host_shape", "host_empty", "host_memory_total"]


def host_memory_total():
    """Physical memory plus swap, in bytes (None where the system does not say)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("SwapTotal:"):
                    total += int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return total


def _cannot(nbytes):
    return RuntimeError(f"DefaultCPUAllocator: can't allocate memory: you tried to allocate {nbytes} bytes. "
                        "Error code 12 (Cannot allocate memory)")


def check_host_request(shape, itemsize):
    """Raise PyTorch's RuntimeError for a cpu tensor of shape that cannot be allocated; return its byte count."""
    numel = math.prod(int(d) for d in shape)
    nbytes = numel * int(itemsize)
    if nbytes >= 1 << 63:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={[int(d) for d in shape]}")
    total = host_memory_total()
    if total is not None and nbytes > total:
        raise _cannot(nbytes)
    return nbytes


def host_empty(shape, np_dtype):
    """np.empty(shape, np_dtype) after check_host_request; numpy's own refusals become PyTorch's errors."""
    nbytes = check_host_request(shape, np.dtype(np_dtype).itemsize)
    try:
        return np.empty(tuple(shape), dtype=np_dtype)
    except MemoryError:
        raise _cannot(nbytes) from None
    except ValueError as e:   # "array is too big": a shape numpy cannot describe (an empty one with a huge dim)
        raise _undescribable(shape, e) from None


def _undescribable(shape, e):
    return RuntimeError(f"rawdev cannot make a cpu tensor of sizes {[int(d) for d in shape]}: numpy, which holds "
                        f"rawdev's cpu tensors, refuses it ({e})")


def check_host_shape(shape, np_dtype):
    """Raise host_empty's RuntimeError if numpy cannot describe an array of shape (only an empty shape with a huge
    dim can pass the byte-count checks and still be refused: a cuda tensor of that shape exists, its cpu copy not)."""
    if 0 in shape:
        try:
            np.empty(tuple(shape), dtype=np_dtype)
        except ValueError as e:
            raise _undescribable(shape, e) from None
