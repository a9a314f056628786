"""Covariance statistics, composed from declared ops (both devices and autograd come with them): cov and
corrcoef, with PyTorch's correction, fweights and aweights."""
from .. import dtypes as _dt
from .registry import declare


def cov(input, *, correction=1, fweights=None, aweights=None):  # noqa: A002
    """The covariance matrix of the variables in input's rows (observations in columns).

    Example:
        >>> torch.cov(torch.tensor([[0., 1., 2.], [2., 1., 0.]]))
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if not x.dtype.is_floating_point:
        x = x.to(dtype=_dt.get_default_dtype())
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights.to(dtype=x.dtype)
    if aweights is not None:
        w = aweights.to(dtype=x.dtype) if w is None else w * aweights.to(dtype=x.dtype)
    if w is None:
        avg = x.mean(1, keepdim=True)
        norm = float(n - correction)
        xc = x - avg
        c = (xc @ xc.transpose(0, 1)) / norm
    else:
        wsum = w.sum()
        avg = (x * w).sum(1, keepdim=True) / wsum
        if correction == 0:
            norm = wsum
        elif aweights is None:
            norm = wsum - correction
        else:
            norm = wsum - correction * (w * aweights.to(dtype=x.dtype)).sum() / wsum
        xc = x - avg
        c = ((xc * w) @ xc.transpose(0, 1)) / norm
    return c.reshape(()) if input.ndim < 2 else c


def corrcoef(input):  # noqa: A002
    """Pearson correlation coefficients of input's rows, clipped to [−1, 1].

    Example:
        >>> torch.corrcoef(torch.tensor([[0., 1., 2.], [2., 1., 0.]]))
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal()
    s = d.sqrt()
    return (c / s.unsqueeze(1) / s.unsqueeze(0)).clamp(-1, 1)


declare("cov", cov, family="covariance")
declare("corrcoef", corrcoef, family="covariance")
