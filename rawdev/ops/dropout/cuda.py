"""The cuda path of the dropout family (dropout.ptx): y = keep ? x/(1-p) : 0 with keep from Philox(seed, 0), the
seed drawn from rawdev's generator (so checkpoint's RNG restore recomputes the same mask), in float32 or
float16/bfloat16 storage; and the channel-wise/alpha masks, the same kernel run over ones (float32 only)."""
from ... import dtypes as _dt
from ..cuda_launch import _ew, _low, _rdev, _storage, empty, full

__all__ = ["dropout", "dropout_bwd", "dropout_keep"]


def dropout(x, p, generator):
    """y = keep ? x/(1-p) : 0 with keep from Philox(seed, 0); the seed is drawn from rawdev's generator (so
    checkpoint's RNG restore recomputes the same mask). Returns (y, saved uint8 mask)."""
    sfx = _storage("dropout", x)
    rdev, n = _rdev(x), x.numel()
    seed = int(generator.np.integers(0, 2 ** 63))
    y = empty(x.shape, x.dtype, x.device, "dropout output")
    mask = empty(x.shape, _dt.uint8, x.device, "dropout mask")
    _ew(rdev, "dropout_fwd" + sfx, [y.data_ptr(), mask.data_ptr(), x.data_ptr(), n, float(p), 1.0 / (1.0 - p), seed, 0],
        n, "dropout")
    return y, mask


def dropout_bwd(g, mask, p):
    sfx = _storage("dropout backward", g)
    gx = empty(g.shape, g.dtype, g.device, "dropout grad")
    n = g.numel()
    _ew(_rdev(g), "dropout_bwd" + sfx, [gx.data_ptr(), g.data_ptr(), mask.data_ptr(), n, 1.0 / (1.0 - p)], n,
        "dropout backward")
    return gx


def dropout_keep(shape, p, scale, dt, dev, generator):
    """A [shape] tensor of dtype dt on dev: scale where an element is kept (probability 1 - p), 0 elsewhere: the
    dropout_fwd kernel (Philox, seed drawn from the generator) run over ones, no mask saved. It takes the dtype and
    device rather than a tensor so that the dense-operand and 16-bit widening wrappers of the cuda backend leave
    it as it is (a float16 input is refused, as the float32-only kernel form has always done)."""
    if dt is not _dt.float32:   # cuda_launch._f32's refusal, for a dtype rather than a tensor
        raise TypeError(f"dropout on cuda supports float32 tensors (the shipped kernels are f32), got {dt}")
    ones = full(shape, 1.0, dt, dev, "dropout ones")
    y = empty(shape, dt, dev, "dropout mask")
    n = y.numel()
    seed = int(generator.np.integers(0, 2 ** 63))
    _ew(_rdev(dev), "dropout_fwd", [y.data_ptr(), 0, ones.data_ptr(), n, float(p), float(scale), seed, 0], n,
        "dropout")
    return y


def _native_low(x, *args, **kwargs):
    """opmath passes a float16/bfloat16 x unwidened: the kernels have 16-bit storage forms."""
    return _low(x) is not None


dropout.native_low = _native_low  # type: ignore[attr-defined]
dropout_bwd.native_low = _native_low  # type: ignore[attr-defined]
