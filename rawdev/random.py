"""rawdev's random state, as PyTorch's: a cpu generator (numpy's PCG64) and one Philox generator per cuda
device; `manual_seed` seeds them all.

cpu tensors draw from the cpu generator on the host. cuda tensors draw on the device from the Philox
counter scheme of ptx/src/random.cu (the dropout kernel's): a cuda generator is (seed, offset) and every
draw uses (seed, offset) and then advances offset, so nothing crosses the bus and a seed replays the same
numbers. The two streams differ, as in PyTorch: a seed makes each device reproducible, not equal.

The device fills (`fill_uniform`, `fill_normal`, ...) write a contiguous cuda tensor in one launch each.
"""

import numpy as np

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state", "cuda_generator", "manual_seed_cuda", "manual_seed_all"]

_DEFAULT_SEED = 67280421310721   # PyTorch's


def _wrap_seed(seed):
    seed = int(seed)
    if seed < 0:
        seed &= 0xFFFF_FFFF_FFFF_FFFF  # PyTorch takes negative seeds modulo 2**64
    if seed >= 2 ** 64:
        raise RuntimeError("Overflow when unpacking long")
    return seed


class Generator:
    """Generator(device='cpu'): a cpu generator (`.np` is the numpy Generator the cpu constructors draw from)
    or, with device='cuda[:i]', a Philox (seed, offset) generator for device draws. `Generator(5)` (an int)
    is a cpu generator seeded with 5."""

    def __init__(self, device="cpu", *, seed=None):
        from .device import as_device
        if isinstance(device, int) and not isinstance(device, bool):
            device, seed = "cpu", device
        dev = as_device(device)
        if dev.type == "cuda" and dev.index is None:
            from .device import current_cuda_index
            dev = type(dev)("cuda", current_cuda_index())
        self.device = dev
        self.manual_seed(_DEFAULT_SEED if seed is None else seed)

    def manual_seed(self, seed):
        seed = _wrap_seed(seed)
        self._seed = seed
        if self.device.type == "cpu":
            self.np = np.random.Generator(np.random.PCG64(seed))
        else:
            self._offset = 0
        return self

    def seed(self):
        """Reseed from OS entropy; return the new seed."""
        s = int(np.random.SeedSequence().entropy) & 0xFFFF_FFFF_FFFF_FFFF
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        if self.device.type == "cpu":
            return self.np.bit_generator.state
        from .tensor.core import Tensor
        return Tensor._make_cpu(np.array([self._seed, self._offset], dtype=np.uint64).view(np.uint8).copy())

    def set_state(self, state):
        if self.device.type == "cpu":
            self.np.bit_generator.state = state
        else:
            raw = np.asarray(state.numpy() if hasattr(state, "numpy") else state, dtype=np.uint8)
            if raw.size != 16:
                raise RuntimeError(f"Expected a cuda generator state of 16 bytes, got {raw.size}")
            self._seed, self._offset = (int(v) for v in raw.view(np.uint64))
        return self

    def philox(self):
        """(seed, offset) for one device draw; the next draw gets the next offset."""
        if self.device.type != "cuda":
            raise RuntimeError("Expected a 'cuda' device type for generator but found 'cpu'")
        out = (self._seed, self._offset)
        self._offset += 1
        return out

    def __repr__(self):
        return f"<rawdev.Generator object at 0x{id(self):x}>"


default_generator = Generator()

_cuda_generators: dict = {}  # device index -> Generator, made on first use
_cuda_seed = [_DEFAULT_SEED]


def cuda_generator(index=None):
    """The default generator of cuda device `index` (the current device when None)."""
    if index is None:
        from .device import current_cuda_index
        index = current_cuda_index()
    g = _cuda_generators.get(index)
    if g is None:
        g = _cuda_generators[index] = Generator(f"cuda:{index}", seed=_cuda_seed[0])
    return g


def generator_for(device, generator=None):
    """The generator a draw on `device` uses: `generator` (checked against the device type) or the default."""
    if generator is None:
        return default_generator if device.type == "cpu" else cuda_generator(device.index or 0)
    if generator.device.type != device.type:
        raise RuntimeError(f"Expected a '{device.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator


def manual_seed(seed):
    """Seed the cpu generator and every cuda device's; returns the cpu one (as torch.manual_seed)."""
    seed = _wrap_seed(seed)
    manual_seed_all(seed)
    return default_generator.manual_seed(seed)


def manual_seed_cuda(seed, index=None):
    """rawdev.cuda.manual_seed: seed the current (or given) cuda device's generator."""
    cuda_generator(index).manual_seed(seed)


def manual_seed_all(seed):
    """rawdev.cuda.manual_seed_all: seed every cuda device's generator (also those not made yet)."""
    seed = _wrap_seed(seed)
    _cuda_seed[0] = seed
    for g in _cuda_generators.values():
        g.manual_seed(seed)


def seed():
    s = default_generator.seed()
    manual_seed_all(s)
    return s


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


# ------------------------------------------------------------------ device fills (ptx/src/random.cu)
_BLOCK, _MAX_GRID = 256, 65535


def _launch(t, name, args, work):
    """One grid-stride launch of a random.cu kernel over `work` items on t's device's compute stream."""
    from .runtime import kernels
    from .tensor.cuda_io import runtime_device
    if work <= 0:
        return
    rdev = runtime_device(t.device)
    kernels.get_kernel(rdev, name).launch(min((work + _BLOCK - 1) // _BLOCK, _MAX_GRID), _BLOCK, args,
                                          stream=rdev.compute_stream)


_FLOAT_KERNEL = {"float32": "f32", "float64": "f64"}


def _suffix(t, what):
    s = _FLOAT_KERNEL.get(t.dtype.name)
    if s is None or not t.is_contiguous():
        raise TypeError(f"{what}: device fills write contiguous float32/float64 tensors, got {t.dtype}")
    return s


def fill_uniform(t, lo, hi, gen):
    s = _suffix(t, "uniform_")
    n = t.numel()
    _launch(t, f"rand_uniform_{s}", [t.data_ptr(), n, float(lo), float(hi), *gen.philox()],
            (n + 3) // 4 if s == "f32" else (n + 1) // 2)


def fill_normal(t, mean, std, gen):
    s = _suffix(t, "normal_")
    n = t.numel()
    _launch(t, f"rand_normal_{s}", [t.data_ptr(), n, float(mean), float(std), *gen.philox()],
            (n + 3) // 4 if s == "f32" else (n + 1) // 2)


def fill_bernoulli(t, p, gen, prob=None):
    """t (float32) = 1 with probability p (or prob[i], a contiguous float32 tensor of t's size)."""
    n = t.numel()
    _launch(t, "rand_bernoulli_f32", [t.data_ptr(), prob.data_ptr() if prob is not None else 0, n, float(p),
                                      *gen.philox()], (n + 3) // 4)


def fill_exponential(t, lambd, gen):
    n = t.numel()
    _launch(t, "rand_exponential_f32", [t.data_ptr(), n, float(lambd), *gen.philox()], (n + 3) // 4)


_INT_KERNEL = {"int64": "i64", "int32": "i32", "float32": "f32", "float64": "f64"}


def fill_integers(t, low, high, gen):
    """t = integers uniform in [low, high) (t int64, int32, float32 or float64, contiguous)."""
    n = t.numel()
    _launch(t, f"rand_int_{_INT_KERNEL[t.dtype.name]}", [t.data_ptr(), n, int(low), int(high - low), *gen.philox()],
            (n + 1) // 2)


def multinomial_cdf(cdf, w, rows, C):
    _launch(cdf, "multinomial_cdf_f32", [cdf.data_ptr(), w.data_ptr(), rows, C], rows)


def multinomial_draw(out, cdf, rows, C, S, gen):
    _launch(out, "multinomial_draw", [out.data_ptr(), cdf.data_ptr(), rows, C, S, *gen.philox()],
            (rows * S + 3) // 4)


def race_keys(keys, w, n, gen):
    """keys (uint64 storage, n elements) for sampling without replacement by weights w (None: uniform)."""
    _launch(keys, "multinomial_keys_f32", [keys.data_ptr(), w.data_ptr() if w is not None else 0, n,
                                           *gen.philox()], (n + 1) // 2)


def rank_select(out, keys, rows, C, S):
    _launch(out, "rank_select_u64", [out.data_ptr(), keys.data_ptr(), rows, C, S], rows * C)
