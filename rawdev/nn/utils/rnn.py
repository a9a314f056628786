"""nn.utils.rnn.pad_sequence (PyTorch's semantics: stacks variable-length sequences, padded; differentiable)."""
from ...autograd.function import Function

__all__ = ["pad_sequence"]


class _Pad(Function):
    @staticmethod
    def forward(ctx, batch_first, padding_value, left, *seqs):
        from ...tensor.factory import full
        max_len = max(s.shape[0] for s in seqs)
        trailing = tuple(seqs[0].shape[1:])
        shape = (len(seqs), max_len) + trailing if batch_first else (max_len, len(seqs)) + trailing
        out = full(shape, padding_value, dtype=seqs[0].dtype, device=seqs[0].device)
        ctx.lens, ctx.batch_first, ctx.left, ctx.max_len = [s.shape[0] for s in seqs], batch_first, left, max_len
        for i, s in enumerate(seqs):
            n = s.shape[0]
            if n:
                row = out.select(0, i) if batch_first else out.select(1, i)
                row.narrow(0, max_len - n if left else 0, n).copy_(s)
        return out

    @staticmethod
    def backward(ctx, g):
        grads = []
        for i, n in enumerate(ctx.lens):
            row = g.select(0, i) if ctx.batch_first else g.select(1, i)
            grads.append(row.narrow(0, ctx.max_len - n if ctx.left else 0, n).contiguous())
        return (None, None, None, *grads)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Pad a list of (L_i, *) tensors to (T, B, *) (batch_first: (B, T, *)) with padding_value, on the right
    (padding_side="left": on the left)."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    seqs = list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    return _Pad.apply(bool(batch_first), float(padding_value), padding_side == "left", *seqs)
