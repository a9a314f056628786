"""Datasets, shaped like torch.utils.data.dataset: Dataset, IterableDataset, TensorDataset, Subset,
ConcatDataset, ChainDataset, StackDataset and random_split (lengths or fractions)."""
from __future__ import annotations

import bisect
import math
import warnings
from collections.abc import Iterator, Sequence, Sized
from typing import TYPE_CHECKING, Any, cast

from ... import random as _random

if TYPE_CHECKING:
    from ...tensor.core import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split"]


class Dataset:
    """A map-style dataset: __getitem__(index) (and usually __len__). `a + b` is ConcatDataset([a, b])."""

    def __getitem__(self, index: Any) -> Any:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: __iter__. In DataLoader workers, each worker iterates its own copy, so
    splitting the stream between workers is the dataset's business (rawdev.utils.data.get_worker_info())."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are tuples of tensors[i] (each tensor indexed along its first dimension)."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = tensors[0].size(0)
        if any(t.size(0) != n for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tuple(tensors)

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """StackDataset(a, b) -> (a[i], b[i]); StackDataset(x=a, y=b) -> {'x': a[i], 'y': b[i]}."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like input/"
                             "output, but both types are given.")
        self.datasets = args or kwargs
        lens = {len(d) for d in (args or kwargs.values())}
        if len(lens) > 1:
            raise ValueError("Size mismatch between datasets")
        self._length = lens.pop() if lens else 0

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """The datasets one after another; `cumulative_sizes[i]` is the end of dataset i."""

    @staticmethod
    def cumsum(sequence):
        out, s = [], 0
        for e in sequence:
            s += len(e)
            out.append(s)
        return out

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[d - 1] if d else 0
        return self.datasets[d][idx - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """dataset[indices[i]] for i in range(len(indices))."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def _accumulate(lengths):
    s = 0
    for n in lengths:
        s += n
        yield s


def random_split(dataset: Dataset, lengths: Sequence[int | float], generator: Any = None) -> list[Subset]:
    """Split into non-overlapping Subsets of the given lengths, or of floor(fraction * len) each (the
    remainder handed out one by one round-robin, as PyTorch), over a permutation drawn from `generator`."""
    lengths = list(lengths)
    n = len(cast(Sized, dataset))   # a map-style dataset to split has a length
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(int(math.floor(n * frac)))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, k in enumerate(sizes):
            if k == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    g = (generator or _random.default_generator).np
    perm = g.permutation(sum(lengths)).tolist()
    return [Subset(dataset, perm[end - k:end]) for k, end in zip(lengths, _accumulate(lengths))]
