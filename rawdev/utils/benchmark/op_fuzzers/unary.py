"""`torch.utils.benchmark.op_fuzzers.unary`: UnaryOpFuzzer, PyTorch's fuzzer of one operand x of 1 to 3
dimensions, sometimes strided or non-contiguous."""
from ....dtypes import float32
from ..fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer
from . import _shapes

__all__ = ["UnaryOpFuzzer"]


class UnaryOpFuzzer(Fuzzer):
    """Yields tensor "x" (and the parameters, among them "random_value") as PyTorch's UnaryOpFuzzer.

    Args:
        seed: the Fuzzer's seed.
        dtype: the tensor's dtype.
        cuda: build it on the GPU.

    Example:
        >>> for tensors, _, _ in UnaryOpFuzzer(seed=0).take(1):
        ...     y = tensors["x"].exp()
    """

    def __init__(self, seed, dtype=float32, cuda=False):
        steps = [FuzzedParameter(name=f"x_step_{i}", distribution=dict(_shapes.STEPS)) for i in range(3)]
        super().__init__(
            parameters=[*_shapes.dimension_parameters(), steps, _shapes.random_value()],
            tensors=[FuzzedTensor(name="x", size=("k0", "k1", "k2"), steps=("x_step_0", "x_step_1", "x_step_2"),
                                  probability_contiguous=0.75, min_elements=_shapes.MIN_ELEMENTS,
                                  max_elements=_shapes.MAX_ELEMENTS,
                                  max_allocation_bytes=_shapes.MAX_ALLOCATION_BYTES, dim_parameter="dim",
                                  dtype=dtype, cuda=cuda)],
            seed=seed)
