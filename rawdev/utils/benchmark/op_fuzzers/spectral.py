"""`torch.utils.benchmark.op_fuzzers.spectral`: SpectralOpFuzzer, PyTorch's fuzzer of FFT inputs: sizes are
mostly "regular" numbers (products of 2, 3 and 5, the fast FFT lengths) from 16 to 16 Ki."""
import math

from ....dtypes import float64
from ..fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from . import _shapes

__all__ = ["SpectralOpFuzzer"]

MIN_DIM_SIZE = 16
MAX_DIM_SIZE = 16 * 1024


def power_range(upper_bound, base):
    """The powers of `base` up to `upper_bound`.

    Args:
        upper_bound: the largest allowed power.
        base: the base.

    Returns:
        A generator of base**0, base**1, ...
    """
    return (base ** i for i in range(int(math.log(upper_bound, base)) + 1))


# products 2^i 3^j 5^k above MIN_DIM_SIZE and up to MAX_DIM_SIZE, ascending
REGULAR_SIZES = sorted(i * j * k for i in power_range(MAX_DIM_SIZE, 2) for j in power_range(MAX_DIM_SIZE // i, 3)
                       for k in power_range(MAX_DIM_SIZE // (i * j), 5) if i * j * k > MIN_DIM_SIZE)


class SpectralOpFuzzer(Fuzzer):
    """Yields tensor "x" of 1 to 3 dimensions (keyword-only arguments, as PyTorch's).

    Args:
        seed: the Fuzzer's seed.
        dtype: the tensor's dtype.
        cuda: build it on the GPU.
        probability_regular: the chance that each size is a regular number.

    Example:
        >>> for tensors, _, params in SpectralOpFuzzer(seed=0).take(1):
        ...     x = tensors["x"]
    """

    def __init__(self, *, seed: int, dtype=float64, cuda: bool = False, probability_regular: float = 1.0):
        super().__init__(
            parameters=[
                FuzzedParameter("ndim", distribution={1: 0.3, 2: 0.4, 3: 0.3}, strict=True),
                [FuzzedParameter(name=f"k_any_{i}", minval=MIN_DIM_SIZE, maxval=MAX_DIM_SIZE,
                                 distribution="loguniform") for i in range(3)],
                [FuzzedParameter(name=f"k_regular_{i}",
                                 distribution={s: 1. / len(REGULAR_SIZES) for s in REGULAR_SIZES}) for i in range(3)],
                [FuzzedParameter(name=f"k{i}", distribution={ParameterAlias(f"k_regular_{i}"): probability_regular,
                                                             ParameterAlias(f"k_any_{i}"): 1 - probability_regular},
                                 strict=True) for i in range(3)],
                [FuzzedParameter(name=f"step_{i}", distribution=dict(_shapes.STEPS)) for i in range(3)],
            ],
            tensors=[FuzzedTensor(name="x", size=("k0", "k1", "k2"), steps=("step_0", "step_1", "step_2"),
                                  probability_contiguous=0.75, min_elements=_shapes.MIN_ELEMENTS,
                                  max_elements=_shapes.MAX_ELEMENTS,
                                  max_allocation_bytes=_shapes.MAX_ALLOCATION_BYTES, dim_parameter="ndim",
                                  dtype=dtype, cuda=cuda)],
            seed=seed)
