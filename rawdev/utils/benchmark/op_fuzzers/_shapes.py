"""The size parameters PyTorch's binary and unary op fuzzers share: each dimension is, with probability 0.8, a
loguniform integer in [16, 16 Mi] and otherwise a power of two in that range (powers of two matter most to
kernels, so they get extra weight)."""
from ..fuzzer import FuzzedParameter, ParameterAlias

MIN_DIM_SIZE = 16
MAX_DIM_SIZE = 16 * 1024 ** 2
POW_TWO_SIZES = tuple(2 ** i for i in range(MIN_DIM_SIZE.bit_length() - 1, MAX_DIM_SIZE.bit_length()))
STEPS = {1: 0.8, 2: 0.06, 4: 0.06, 8: 0.04, 16: 0.04}
# PyTorch's element and allocation limits of the fuzzed operands
MIN_ELEMENTS = 4 * 1024
MAX_ELEMENTS = 32 * 1024 ** 2
MAX_ALLOCATION_BYTES = 2 * 1024 ** 3


def dimension_parameters():
    """The `dim` parameter (1, 2 or 3 dimensions) and the sizes k0, k1, k2 with the draws they alias.

    Returns:
        A list of FuzzedParameters and lists of them, in PyTorch's draw order.
    """
    return [
        FuzzedParameter("dim", distribution={1: 0.3, 2: 0.4, 3: 0.3}, strict=True),
        [FuzzedParameter(name=f"k_any_{i}", minval=MIN_DIM_SIZE, maxval=MAX_DIM_SIZE, distribution="loguniform")
         for i in range(3)],
        [FuzzedParameter(name=f"k_pow2_{i}", distribution={s: 1. / len(POW_TWO_SIZES) for s in POW_TWO_SIZES})
         for i in range(3)],
        [FuzzedParameter(name=f"k{i}", distribution={ParameterAlias(f"k_any_{i}"): 0.8,
                                                     ParameterAlias(f"k_pow2_{i}"): 0.2}, strict=True)
         for i in range(3)],
    ]


def random_value():
    """PyTorch's `random_value` parameter: repeatable entropy for the caller.

    Returns:
        A FuzzedParameter uniform over [0, 2**32 - 1].
    """
    return FuzzedParameter(name="random_value", minval=0, maxval=2 ** 32 - 1, distribution="uniform")
