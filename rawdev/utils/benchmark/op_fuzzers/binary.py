"""`torch.utils.benchmark.op_fuzzers.binary`: BinaryOpFuzzer, PyTorch's fuzzer of two operands x and y of 1 to 3
dimensions, y sometimes with singleton dimensions (to test broadcasting), both sometimes strided or
non-contiguous."""
from ....dtypes import float32
from ..fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from . import _shapes

__all__ = ["BinaryOpFuzzer"]


class BinaryOpFuzzer(Fuzzer):
    """Yields tensors "x" and "y" (and the parameters, among them "random_value") as PyTorch's BinaryOpFuzzer.

    Args:
        seed: the Fuzzer's seed.
        dtype: the tensors' dtype.
        cuda: build them on the GPU.

    Example:
        >>> for tensors, _, _ in BinaryOpFuzzer(seed=0).take(1):
        ...     z = tensors["x"] + tensors["y"]
    """

    def __init__(self, seed, dtype=float32, cuda=False):
        steps = [FuzzedParameter(name=f"{name}_step_{i}", distribution=dict(_shapes.STEPS))
                 for i in range(3) for name in ("x", "y")]
        y_sizes = [FuzzedParameter(name=f"y_k{i}", distribution={ParameterAlias(f"k{i}"): 0.8, 1: 0.2}, strict=True)
                   for i in range(3)]
        # y is sliced with x's steps, as in PyTorch (its own y_step_* are drawn but unused)
        common = dict(steps=("x_step_0", "x_step_1", "x_step_2"), probability_contiguous=0.75,
                      max_allocation_bytes=_shapes.MAX_ALLOCATION_BYTES, dim_parameter="dim", dtype=dtype, cuda=cuda)
        super().__init__(
            parameters=[*_shapes.dimension_parameters(), y_sizes, steps, _shapes.random_value()],
            tensors=[FuzzedTensor(name="x", size=("k0", "k1", "k2"), min_elements=_shapes.MIN_ELEMENTS,
                                  max_elements=_shapes.MAX_ELEMENTS, **common),
                     FuzzedTensor(name="y", size=("y_k0", "y_k1", "y_k2"), **common)],
            seed=seed)
