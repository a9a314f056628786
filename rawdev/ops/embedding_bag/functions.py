"""embedding_bag: sums, means or maxima of bags of embedding rows without materializing the gathered rows.

Bags come from offsets (1-D input) or are the rows of a 2-D input; the host builds bounds [B + 1] (offsets and
the end) once. cuda: embedding_bag.ptx (one thread per (bag, d); the backward is a scatter-add of the output gradient
into the weight's rows with atomics, the max mode adding into the saved argmax rows); cpu: numpy.
"""
import numpy as np

from ... import dtypes as _dt
from ...autograd.function import Function
from ...tensor.core import Tensor
from ..dispatch import backend, backend_of
from ..registry import declare

_MODES = {"sum": 0, "mean": 1, "max": 2}


class _EmbeddingBag(Function):
    node_name = "EmbeddingBagBackward0"

    @staticmethod
    def forward(ctx, weight, psw, idx, bounds, bag_of, mode, pad):
        B = backend("embedding_bag", weight, idx, psw)
        out, argmax, cnt = B.embedding_bag_fwd(weight, idx, bounds, psw, mode, pad)
        ctx.save_for_backward(weight, psw, idx, argmax, cnt)
        ctx.mode, ctx.pad, ctx.bounds, ctx.bag_of = mode, pad, bounds, bag_of
        return out

    @staticmethod
    def backward(ctx, g):
        weight, psw, idx, argmax, cnt = ctx.saved_tensors
        bounds, bag_of = ctx.bounds, ctx.bag_of
        need = ctx.needs_input_grad
        gw, gpsw = backend_of(g).embedding_bag_bwd(g.contiguous(), weight, idx, bounds, bag_of, psw, argmax, cnt,
                                                   ctx.mode, ctx.pad, need[0], need[1] and psw is not None)
        return gw, gpsw, None, None, None, None, None


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,  # noqa: A002
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Per bag, the sum / mean / max of the weight rows its indices pick: input 1-D with offsets (bag i starts at
    offsets[i]), or 2-D (each row one bag). per_sample_weights (mode='sum') scale each row; padding_idx entries
    are left out (and not counted by 'mean'); an empty bag gives zeros.

    Example:
        >>> F.embedding_bag(torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), weight, torch.tensor([0, 4]), mode="sum")
    """
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if not isinstance(input, Tensor) or input.dtype not in (_dt.int64, _dt.int32):
        got = input.dtype.name if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {got} instead (while checking arguments for embedding_bag)")
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not None, "
                         f"then it must have the same shape as the input ({tuple(input.shape)})")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets).__name__}")
        nb, ln = input.shape
        bounds = np.arange(nb + 1, dtype=np.int64) * ln
        idx = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        off = np.asarray(offsets.detach().cpu()._values(), np.int64)
        n = input.shape[0]
        if off.size and off[0] != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                               f"from position 0. However, got {int(off[0])}")
        if off.size and (np.any(np.diff(off) < 0) or off[-1] > n):
            raise RuntimeError(f"offsets has to be a non-decreasing sequence of positions in [0, {n}]")
        bounds = off if include_last_offset else np.concatenate([off, [n]]).astype(np.int64)
        if include_last_offset and not off.size:
            bounds = np.zeros(1, np.int64)
        idx = input
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    if sparse:
        raise NotImplementedError("embedding_bag(sparse=True): rawdev's autograd makes dense "
                                  "gradients only (it has sparse COO tensors, but no backward produces one); "
                                  "use sparse=False")
    if scale_grad_by_freq:
        raise NotImplementedError("embedding_bag(scale_grad_by_freq=True) is not supported by rawdev yet")
    V = weight.shape[0]
    if padding_idx is not None:
        if not -V <= padding_idx < V:
            raise AssertionError("padding_idx must be within the number of embeddings")
        padding_idx %= V
    pad = -1 if padding_idx is None else int(padding_idx)
    end = int(bounds[-1]) if bounds.size else 0
    if idx.dtype is not _dt.int64:
        idx = idx.to(dtype=_dt.int64)
    idx = idx.narrow(0, 0, end).contiguous() if end != idx.shape[0] else idx.contiguous()
    if per_sample_weights is not None:
        per_sample_weights = per_sample_weights.narrow(0, 0, end) if end != per_sample_weights.shape[0] \
            else per_sample_weights
        per_sample_weights = per_sample_weights.contiguous()
    if max_norm is not None:
        from ..embedding import _renorm_rows_
        _renorm_rows_(weight, idx, max_norm, norm_type)
    from ...tensor.factory import tensor
    nbags = max(len(bounds) - 1, 0)
    bag_of = np.repeat(np.arange(nbags, dtype=np.int64), np.diff(bounds)) if nbags else np.zeros(0, np.int64)
    b_t = tensor(bounds, dtype=_dt.int64, device=weight.device)
    bag_t = tensor(bag_of, dtype=_dt.int64, device=weight.device)
    return _EmbeddingBag.apply(weight, per_sample_weights, idx, b_t, bag_t, _MODES[mode], pad)


declare("embedding_bag", embedding_bag, family="embedding_bag", functional=True, method=False, torch=False)
