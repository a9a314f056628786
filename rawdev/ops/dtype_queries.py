"""Questions about a tensor's dtype (and size) that need no kernel, composed from declared ops: result_type,
promote_types, can_cast, is_floating_point, is_signed, is_nonzero, isreal, numel, type_as, and the complex-number
queries a real-only library answers trivially (conj, resolve_conj, resolve_neg, real, is_complex, is_conj)."""
from .. import dtypes as _dt
from ..tensor import factory
from ..tensor.core import Tensor
from .promotion import _result_dt, _scalar_dtype
from .registry import declare


def _dtype_of(x):
    if isinstance(x, Tensor):
        return x
    from ..tensor.factory import tensor
    return tensor(x)


def result_type(tensor, other):
    """The dtype an arithmetic op on the two operands gives (tensors or Python numbers).

    Example:
        >>> torch.result_type(torch.tensor([1, 2]), 1.0)
        torch.float32
    """
    if isinstance(tensor, Tensor) and isinstance(other, Tensor):
        return _result_dt(tensor, other)
    if isinstance(tensor, Tensor):
        return _result_dt(tensor, _dtype_of(other).to(dtype=_scalar_dtype(other, tensor)))
    if isinstance(other, Tensor):
        return _result_dt(_dtype_of(tensor).to(dtype=_scalar_dtype(tensor, other)), other)
    return _result_dt(_dtype_of(tensor), _dtype_of(other))


def promote_types(type1, type2):
    """The smallest dtype both dtypes convert to without losing their kind.

    Example:
        >>> torch.promote_types(torch.int32, torch.float32)
        torch.float32
    """
    from ..tensor.factory import empty
    return _result_dt(empty((1,), dtype=type1), empty((1,), dtype=type2))


def _kind(d):
    return 0 if d is _dt.bool else (2 if d.is_floating_point else 1)


def can_cast(from_, to):
    """Whether PyTorch's casting rules allow from_ → to implicitly (no lower kind: float to an integer, or a
    number to bool, is refused).

    Example:
        >>> torch.can_cast(torch.float32, torch.int32)
        False
    """
    return _kind(from_) <= _kind(to)


def is_floating_point(input):  # noqa: A002
    """Whether input's dtype is a floating-point dtype."""
    return input.dtype.is_floating_point


def is_nonzero(input):  # noqa: A002
    """The truth of a one-element tensor (RuntimeError for any other size, as PyTorch)."""
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def is_signed(input):  # noqa: A002
    """Whether input's dtype can hold negative values (False for uint8 and bool)."""
    return input.dtype.is_signed


def isreal(input):  # noqa: A002
    """True everywhere for rawdev's real dtypes (PyTorch: whether each element has a zero imaginary part)."""
    return factory.ones(input.shape, dtype=_dt.bool, device=input.device)


def conj(input):  # noqa: A002
    """The complex conjugate: input itself (rawdev's tensors are real)."""
    return input


def resolve_conj(input):  # noqa: A002
    """input itself (no lazy conjugation on real tensors)."""
    return input


def resolve_neg(input):  # noqa: A002
    """input itself (no lazy negation in rawdev)."""
    return input


def real(input):  # noqa: A002
    """The real part: input itself."""
    return input


def is_complex(input):  # noqa: A002
    """False: rawdev has no complex dtypes."""
    return False


def is_conj(input):  # noqa: A002
    """False: rawdev never conjugates lazily."""
    return False


def numel(input):  # noqa: A002
    """The number of elements of input."""
    return input.numel()


def type_as(input, other):  # noqa: A002
    """input converted to other's dtype."""
    return input.to(dtype=other.dtype)


declare("result_type", result_type, family="dtype_queries", method=False)
declare("promote_types", promote_types, family="dtype_queries", method=False)
declare("can_cast", can_cast, family="dtype_queries", method=False)
declare("is_floating_point", is_floating_point, family="dtype_queries", method=False)
declare("is_nonzero", is_nonzero, family="dtype_queries")
declare("is_signed", is_signed, family="dtype_queries", torch=False)
declare("isreal", isreal, family="dtype_queries")
declare("real", real, family="dtype_queries", method=False)        # Tensor.real is a property (rawdev/ops/methods.py)
declare("numel", numel, family="dtype_queries", method=False)
declare("type_as", type_as, family="dtype_queries", torch=False)
declare("conj", conj, family="dtype_queries")
declare("resolve_conj", resolve_conj, family="dtype_queries")
declare("resolve_neg", resolve_neg, family="dtype_queries")
declare("is_complex", is_complex, family="dtype_queries")
declare("is_conj", is_conj, family="dtype_queries")
