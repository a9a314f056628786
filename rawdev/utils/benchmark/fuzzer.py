"""torch.utils.benchmark's fuzzers: Fuzzer draws parameter sets (FuzzedParameter, ParameterAlias) from a numpy
RandomState seeded as PyTorch seeds it, rejects the sets that break the constraints or a tensor's element and
allocation limits, and builds the FuzzedTensors for each accepted set (strided through `steps`, and with a memory
order made non-contiguous by permuting, copying and permuting back, as PyTorch does). The draws are taken from
the RandomState in PyTorch's order, so a seed gives the same parameters as PyTorch's Fuzzer."""
import functools
import itertools
from typing import Any

import numpy as np

from ... import dtypes as _dt

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]

_DISTRIBUTIONS = ("loguniform", "uniform")


class FuzzedParameter:
    """A parameter the Fuzzer draws for each step.

    Args:
        name: the parameter's name (FuzzedTensors name it in `size`, `steps`, `dim_parameter`).
        minval: lower bound (inclusive) for "uniform" and "loguniform".
        maxval: upper bound (inclusive) for "uniform" and "loguniform".
        distribution: "uniform" (integers when both bounds are ints, else continuous), "loguniform" (uniform in
            log2 space, truncated to an int), or a dict mapping each value (or a ParameterAlias) to its
            probability (which must sum to one; minval and maxval must then be None).
        strict: a strict parameter is drawn once per step and kept while the Fuzzer resamples the others to
            meet the constraints, so rejection does not skew its distribution.

    Example:
        >>> p = FuzzedParameter("n", minval=1, maxval=1024, distribution="loguniform")
        >>> 1 <= p.sample(np.random.RandomState(0)) <= 1024
        True
    """

    def __init__(self, name: str, minval: Any = None, maxval: Any = None, distribution: Any = None,
                 strict: bool = False) -> None:
        self._name = name
        self._minval = minval
        self._maxval = maxval
        self._distribution = self._check_distribution(distribution)
        self.strict = strict

    @property
    def name(self) -> str:
        """The parameter's name."""
        return self._name

    def sample(self, state: np.random.RandomState) -> Any:
        """One draw from `state` (a numpy RandomState).

        Args:
            state: the RandomState to draw from.

        Returns:
            The value: an int, a float, or one of the dict's keys (possibly a ParameterAlias).
        """
        if self._distribution == "loguniform":
            return self._loguniform(state)
        if self._distribution == "uniform":
            return self._uniform(state)
        return self._custom_distribution(state)

    def _check_distribution(self, distribution):
        if not isinstance(distribution, dict):
            if distribution not in _DISTRIBUTIONS:
                raise AssertionError(f"Unknown distribution: {distribution}")
            return distribution
        if any(p < 0 for p in distribution.values()):
            raise AssertionError("Probabilities cannot be negative")
        if abs(sum(distribution.values()) - 1) > 1e-5:
            raise AssertionError("Distribution is not normalized")
        if self._minval is not None:
            raise AssertionError("When passing a custom distribution, 'minval' must be None")
        if self._maxval is not None:
            raise AssertionError("When passing a custom distribution, 'maxval' must be None")
        return distribution

    def _loguniform(self, state):
        low = np.log2(self._minval) if self._minval is not None else None
        high = np.log2(self._maxval) if self._maxval is not None else None
        value = int(2 ** state.uniform(low=low, high=high))
        # the float draw can land a hair outside the bounds once truncated: clamp
        if self._minval is not None and value < self._minval:
            return self._minval
        if self._maxval is not None and value > self._maxval:
            return self._maxval
        return value

    def _uniform(self, state):
        if isinstance(self._minval, int) and isinstance(self._maxval, int):
            return int(state.randint(low=self._minval, high=self._maxval + 1))
        return state.uniform(low=self._minval, high=self._maxval)

    def _custom_distribution(self, state):
        # choose an index, not a key: numpy would turn the keys into numpy scalars (and cannot hold aliases)
        index = state.choice(np.arange(len(self._distribution)), p=tuple(self._distribution.values()))
        return list(self._distribution.keys())[index]


class ParameterAlias:
    """A value of a FuzzedParameter's dict distribution that takes another parameter's value in the same step
    (for example a size that is sometimes 1 and sometimes equal to another size, to test broadcasting). Chains
    of aliases are resolved; a cycle is an error.

    Args:
        alias_to: the name of the parameter whose value to take.

    Example:
        >>> p = FuzzedParameter("y_len", distribution={1: 0.5, ParameterAlias("x_len"): 0.5})
    """

    def __init__(self, alias_to: str) -> None:
        self.alias_to = alias_to

    def __repr__(self) -> str:
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def dtype_size(dtype: Any) -> int:
    """Bytes per element of `dtype`.

    Args:
        dtype: a rawdev dtype.

    Returns:
        The element size in bytes.
    """
    if dtype == _dt.bool:
        return 1
    info = _dt.finfo(dtype) if dtype.is_floating_point else _dt.iinfo(dtype)
    return int(info.bits // 8)


def prod(values: Any, base: int = 1) -> int:
    """The product of `values` times `base` in Python ints (numpy's int64 product can overflow to a negative
    count that would pass the size checks).

    Args:
        values: the integers to multiply.
        base: the starting value.

    Returns:
        The product, an int.
    """
    return functools.reduce(lambda x, y: int(x) * int(y), values, base)


class FuzzedTensor:
    """A tensor the Fuzzer builds for each accepted parameter set.

    Args:
        name: the tensor's key in the dicts `Fuzzer.take` yields.
        size: its sizes: ints, or names of parameters.
        steps: optional strides in elements per dimension (ints or parameter names): a tensor `steps` times
            larger is allocated and sliced with them, so memory access is strided.
        probability_contiguous: the chance that the tensor keeps a contiguous memory order; otherwise its
            dimensions are permuted, copied contiguous and permuted back (before the `steps` slicing).
        min_elements: parameter sets giving fewer elements are rejected.
        max_elements: parameter sets giving more elements are rejected.
        max_allocation_bytes: parameter sets whose allocation (before slicing by `steps`) is larger are rejected.
        dim_parameter: name of a parameter giving the number of dimensions: `size` and `steps` are truncated
            to it (or padded with 1s).
        roll_parameter: accepted for PyTorch's signature; PyTorch's Fuzzer does not use it either.
        dtype: the tensor's dtype.
        cuda: place the tensor on the GPU (built on the cpu, then moved, as PyTorch does).
        tensor_constructor: called as `tensor_constructor(size=..., dtype=..., **params)` instead of the
            default (uniform [0, 1) floats, or integers in [1, 127)) to build the allocation.

    Example:
        >>> x = FuzzedTensor("x", size=("n", 16), min_elements=64, max_elements=4096)
    """

    def __init__(self, name: str, size: Any, steps: Any = None, probability_contiguous: float = 0.5,
                 min_elements: Any = None, max_elements: Any = None, max_allocation_bytes: Any = None,
                 dim_parameter: Any = None, roll_parameter: Any = None, dtype: Any = _dt.float32,
                 cuda: bool = False, tensor_constructor: Any = None) -> None:
        self._name = name
        self._size = size
        self._steps = steps
        self._probability_contiguous = probability_contiguous
        self._min_elements = min_elements
        self._max_elements = max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype = dtype
        self._cuda = cuda
        self._tensor_constructor = tensor_constructor

    @property
    def name(self) -> str:
        """The tensor's name."""
        return self._name

    @staticmethod
    def default_tensor_constructor(size: Any, dtype: Any, **kwargs: Any) -> Any:
        """The allocation when no tensor_constructor is given: uniform [0, 1) for floating dtypes, random
        integers in [1, 127) otherwise, on the cpu.

        Args:
            size: the allocation's sizes.
            dtype: its dtype.
            **kwargs: the step's parameters (unused).

        Returns:
            A new cpu tensor.
        """
        from ...tensor.factory import rand, randint
        if dtype.is_floating_point:
            return rand(tuple(size), dtype=dtype, device="cpu")
        return randint(1, 127, tuple(size), dtype=dtype, device="cpu")

    def _make_tensor(self, params, state):
        size, steps, allocation_size = self._get_size_and_steps(params)
        constructor = self._tensor_constructor or self.default_tensor_constructor
        raw = constructor(size=allocation_size, dtype=self._dtype, **params)
        if self._cuda:
            raw = raw.cuda()
        dim = len(size)
        order = np.arange(dim)
        # the draw is taken whatever the dimension count, so the RandomState advances as PyTorch's does
        if state.rand() > self._probability_contiguous:
            while dim > 1 and np.all(order == np.arange(dim)):
                order = state.permutation(raw.dim())
            raw = raw.permute(tuple(int(i) for i in order)).contiguous()
            raw = raw.permute(tuple(int(i) for i in np.argsort(order)))
        tensor = raw[tuple(slice(0, n * step, step) for n, step in zip(size, steps))]
        properties = {"numel": int(tensor.numel()), "order": order, "steps": steps,
                      "is_contiguous": tensor.is_contiguous(), "dtype": str(self._dtype)}
        return tensor, properties

    def _get_size_and_steps(self, params):
        dim = params[self._dim_parameter] if self._dim_parameter is not None else len(self._size)

        def resolve(values):
            values = tuple(params.get(v, v) for v in values)[:dim]
            return values + (1,) * (dim - len(values))

        size = resolve(self._size)
        steps = resolve(self._steps or ())
        return size, steps, tuple(n * step for n, step in zip(size, steps))

    def satisfies_constraints(self, params: dict) -> bool:
        """Whether `params` give this tensor an element count and allocation within its limits.

        Args:
            params: one parameter set (names to values).

        Returns:
            True when min_elements <= numel <= max_elements and the allocation fits max_allocation_bytes.
        """
        size, _, allocation_size = self._get_size_and_steps(params)
        numel = prod(size)
        if numel < 0:
            raise AssertionError("Computed number of elements is negative")
        allocation_bytes = prod(allocation_size, base=dtype_size(self._dtype))

        def greater(left, right):
            return left is not None and right is not None and left > right

        return not (greater(numel, self._max_elements) or greater(self._min_elements, numel)
                    or greater(allocation_bytes, self._max_allocation_bytes))


class Fuzzer:
    """Generates parameter sets and the tensors they describe, reproducibly from a seed.

    Args:
        parameters: FuzzedParameters (a list may hold lists of them, which are flattened one level).
        tensors: FuzzedTensors (flattened the same way).
        constraints: callables called with the parameter dict; a set is rejected (and redrawn) when one
            returns False.
        seed: seed of the numpy RandomState the draws come from; it also seeds rawdev's generators (through
            rawdev.manual_seed) so the tensors' values repeat. A random seed when None.

    Example:
        >>> fuzzer = Fuzzer(
        ...     parameters=[FuzzedParameter("n", minval=4, maxval=64, distribution="loguniform")],
        ...     tensors=[FuzzedTensor("x", size=("n", "n"))], seed=0)
        >>> for tensors, properties, params in fuzzer.take(2):
        ...     assert tensors["x"].shape == (params["n"], params["n"])
    """

    def __init__(self, parameters: list, tensors: list, constraints: Any = None, seed: Any = None) -> None:
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2 ** 32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = Fuzzer._unpack(parameters, FuzzedParameter)
        self._tensors = Fuzzer._unpack(tensors, FuzzedTensor)
        self._constraints = constraints or ()
        overlap = {p.name for p in self._parameters} & {t.name for t in self._tensors}
        if overlap:
            raise ValueError(f"Duplicate names in parameters and tensors: {overlap}")
        self._rejections = 0
        self._total_generated = 0

    @staticmethod
    def _unpack(values, cls):
        return tuple(itertools.chain.from_iterable([v] if isinstance(v, cls) else v for v in values))

    def take(self, n: int) -> Any:
        """Yield `n` steps, each `(tensors, tensor_properties, params)`: tensors and their properties (numel,
        order, steps, is_contiguous, dtype) by tensor name, and the parameter set. Each call starts again from
        the seed, so it yields the same steps.

        Args:
            n: the number of steps.

        Returns:
            A generator of (dict, dict, dict) triples.
        """
        from ...random import manual_seed
        state = np.random.RandomState(self._seed)
        manual_seed(int(state.randint(low=0, high=2 ** 63, dtype=np.int64)))
        for _ in range(n):
            params = self._generate(state)
            tensors, properties = {}, {}
            for t in self._tensors:
                tensors[t.name], properties[t.name] = t._make_tensor(params, state)
            yield tensors, properties, params

    @property
    def rejection_rate(self) -> float:
        """The fraction of parameter sets drawn so far that were rejected."""
        if not self._total_generated:
            return 0.0
        return self._rejections / self._total_generated

    def _generate(self, state):
        strict = {}
        for _ in range(1000):
            candidate = {}
            for p in self._parameters:
                if p.strict and p.name in strict:
                    candidate[p.name] = strict[p.name]
                else:
                    candidate[p.name] = p.sample(state)
                    if p.strict:
                        strict[p.name] = candidate[p.name]
            candidate = self._resolve_aliases(candidate)
            self._total_generated += 1
            if not all(f(candidate) for f in self._constraints) or \
                    not all(t.satisfies_constraints(candidate) for t in self._tensors):
                self._rejections += 1
                continue
            return candidate
        raise ValueError("Failed to generate a set of valid parameters.")

    @staticmethod
    def _resolve_aliases(params):
        params = dict(params)
        pending = sum(isinstance(v, ParameterAlias) for v in params.values())
        while pending:
            for k in list(params):
                v = params[k]
                if isinstance(v, ParameterAlias):
                    params[k] = params[v.alias_to]
            now = sum(isinstance(v, ParameterAlias) for v in params.values())
            if now == pending:
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            pending = now
        return params

