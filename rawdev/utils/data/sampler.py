"""Samplers, shaped like torch.utils.data.sampler: which indices, in which order. Random ones draw from a
rawdev.Generator (its numpy generator); without one, RandomSampler draws a seed from rawdev's global
generator per epoch and uses a fresh generator seeded with it, as PyTorch."""
import math

import numpy as np

from ... import random as _random
from ...tensor.core import Tensor

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "DistributedSampler"]

_CHUNK = 32   # RandomSampler(replacement=True) draws this many indices at a time, as PyTorch


def _draw_seed(generator=None):
    """An int64 seed drawn from `generator` (default: rawdev's global one), as torch.empty((), dtype=torch.int64)
    .random_(generator=generator).item()."""
    g = (generator or _random.default_generator).np
    return int(g.integers(0, 2 ** 63 - 1, dtype=np.int64, endpoint=True))


class Sampler:
    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation each epoch (replacement=False; num_samples > len gives whole permutations, then
    part of one), or num_samples indices drawn with replacement, lazily in chunks of 32."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement, self._num_samples = data_source, replacement, num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        n = self.num_samples
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={n}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        g = self.generator if self.generator is not None else _random.Generator().manual_seed(_draw_seed())
        rng = g.np
        if self.replacement:
            for _ in range(self.num_samples // _CHUNK):
                yield from rng.integers(0, n, _CHUNK).tolist()
            yield from rng.integers(0, n, self.num_samples % _CHUNK).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        rem = self.num_samples % n
        if rem:
            yield from rng.permutation(n)[:rem].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a random order each epoch."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator

    def __iter__(self):
        rng = (self.generator or _random.default_generator).np
        for i in rng.permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices into weights, index i with probability weights[i] / sum(weights)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = np.asarray(weights.tolist() if isinstance(weights, Tensor) else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights, self.num_samples, self.replacement, self.generator = w, num_samples, replacement, generator

    def __iter__(self):
        w = self.weights
        if (w < 0).any() or not np.isfinite(w).all():
            raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
        if w.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not self.replacement and self.num_samples > np.count_nonzero(w):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        rng = (self.generator or _random.default_generator).np
        return iter(rng.choice(len(w), self.num_samples, replace=self.replacement, p=w / w.sum()).tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of batch_size indices from `sampler`; the last shorter one unless drop_last."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size


class DistributedSampler(Sampler):
    """The indices one of num_replicas processes takes (PyTorch's DistributedSampler): every rank sees the same
    permutation (seeded with seed + epoch, so call set_epoch(epoch) each epoch) and takes every num_replicas-th
    index from position rank; the list is padded by repeating its start (or cut, drop_last=True) to a multiple
    of num_replicas. num_replicas and rank default to the default process group's world size and rank.

    Example:
        >>> s = DistributedSampler(range(10), num_replicas=4, rank=1, shuffle=False)
        >>> list(s)
        [1, 5, 9]
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            from ... import distributed
            if not distributed.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = distributed.get_world_size() if num_replicas is None else num_replicas
            rank = distributed.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        if drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = _random.Generator().manual_seed(self.seed + self.epoch).np.permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """The epoch the next iteration shuffles for (every rank must use the same)."""
        self.epoch = epoch
