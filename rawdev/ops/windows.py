"""Window functions (torch.hann_window and family): constants computed in float64 on the host and made into a
tensor of the requested dtype on the requested device, as PyTorch's factories are. periodic=True (the default)
gives the first N points of an N+1-point symmetric window, for use with spectral analysis."""
import numpy as np

from .. import dtypes as _dt
from ..tensor import factory
from .registry import declare


def _window(name, n, periodic, dtype, device, requires_grad, fn):
    dt = _dt.as_dtype(dtype) or _dt.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window length, got window_length={n}")
    if n <= 1:
        w = np.ones(n)
    else:
        m = n + 1 if periodic else n
        w = fn(np.arange(m, dtype=np.float64), m - 1)[:n]
    return factory.tensor(w, dtype=dt, device=device, requires_grad=requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                pin_memory=False):
    """0.5 − 0.5·cos(2πn/(N−1)).

    Example:
        >>> torch.hann_window(4)
        tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, d: 0.5 - 0.5 * np.cos(2 * np.pi * k / d))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """alpha − beta·cos(2πn/(N−1))."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, d: alpha - beta * np.cos(2 * np.pi * k / d))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    """The triangle 1 − |2n/(N−1) − 1|."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, d: 1 - np.abs(2 * k / d - 1))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    """0.42 − 0.5·cos(2πn/(N−1)) + 0.08·cos(4πn/(N−1))."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, d: 0.42 - 0.5 * np.cos(2 * np.pi * k / d) + 0.08 * np.cos(4 * np.pi * k / d))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False, pin_memory=False):
    """I0(beta·sqrt(1 − (2n/(N−1) − 1)²)) / I0(beta), I0 the modified Bessel function of order 0."""
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, d: np.i0(beta * np.sqrt(np.clip(1 - (2 * k / d - 1) ** 2, 0, None))) / np.i0(beta))


for _fn in (hann_window, hamming_window, bartlett_window, blackman_window, kaiser_window):
    declare(_fn.__name__, _fn, family="windows", method=False)
