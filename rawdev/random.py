"""rawdev's random state: one numpy Generator, reseeded by manual_seed (like torch.manual_seed).

Random tensors are always drawn on the host and then placed, so a seed gives the same values on cpu,
on the simulator and on a real GPU.
"""

import numpy as np

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state"]


class Generator:
    """Wraps numpy's PCG64 Generator; `.np` is the numpy Generator the constructors draw from."""

    def __init__(self, seed=None):
        self.manual_seed(67280421310721 if seed is None else seed)  # PyTorch's default seed

    def manual_seed(self, seed):
        seed = int(seed)
        if seed < 0:
            seed &= 0xFFFF_FFFF_FFFF_FFFF  # PyTorch takes negative seeds modulo 2**64
        self._seed = seed
        self.np = np.random.Generator(np.random.PCG64(seed))
        return self

    def seed(self):
        """Reseed from OS entropy; return the new seed."""
        s = int(np.random.SeedSequence().entropy) & 0xFFFF_FFFF_FFFF_FFFF
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return self.np.bit_generator.state

    def set_state(self, state):
        self.np.bit_generator.state = state
        return self


default_generator = Generator()


def manual_seed(seed):
    """Seed rawdev's default generator; returns it (as torch.manual_seed returns a Generator)."""
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)
