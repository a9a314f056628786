"""nn.utils.rnn: variable-length batches as PyTorch keeps them. pad_sequence stacks sequences with padding;
PackedSequence holds them time-major without padding (data [sum of lengths, *] and batch_sizes[t], the number
of sequences still running at step t, longest first) for RNN/LSTM/GRU to skip the padding; pack_padded_sequence,
pad_packed_sequence, pack_sequence, unpack_sequence and unpad_sequence convert between the forms. Everything is
differentiable and stays on the data's device; batch_sizes and lengths are cpu int64 tensors, as PyTorch's."""
import collections

from ... import dtypes as _dt
from ...autograd.function import Function
from ...tensor.core import Tensor

__all__ = ["pad_sequence", "PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pack_sequence",
           "unpack_sequence", "unpad_sequence", "invert_permutation"]


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


def invert_permutation(permutation):
    """The inverse of an index permutation (None stays None)."""
    if permutation is None:
        return None
    from ...tensor.factory import arange, empty_like
    out = empty_like(permutation)
    out.scatter_(0, permutation, arange(permutation.numel(), device=permutation.device))
    return out


class PackedSequence(collections.namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices",
                                                                 "unsorted_indices"])):
    """A batch of variable-length sequences, packed time-major: data[offset_t : offset_t + batch_sizes[t]] are the
    step-t elements of the batch_sizes[t] longest sequences (in sorted_indices order when the batch was
    reordered). Build it with pack_padded_sequence or pack_sequence, not directly.

    Example:
        >>> p = pack_sequence([torch.tensor([1, 2, 3]), torch.tensor([4])])
        >>> p.data, p.batch_sizes
        (tensor([1, 4, 2, 3]), tensor([2, 1, 1]))
    """
    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            raise TypeError("PackedSequence needs batch_sizes: build one with pack_padded_sequence or pack_sequence")
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn. "
                             "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """The same sequence with data (and the index tensors, to data's device) converted as Tensor.to."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        def move(t):
            return None if t is None else t.to(device=data.device)
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cuda(self, *args, **kwargs):
        return self.to(*(args or ("cuda",)), **kwargs)

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=_dt.float64)

    def float(self):
        return self.to(dtype=_dt.float32)

    def half(self):
        return self.to(dtype=_dt.float16)

    def long(self):
        return self.to(dtype=_dt.int64)

    def int(self):
        return self.to(dtype=_dt.int32)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return self.data.is_pinned()


def _lengths_list(lengths):
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise RuntimeError("'lengths' argument should be a 1D CPU int64 tensor")
        return [int(v) for v in lengths.detach().cpu().tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):  # noqa: A002
    """Pack a padded batch [T, B, *] ([B, T, *] with batch_first) whose sequence b has lengths[b] valid steps.

    Args:
        input: the padded batch.
        lengths: the valid length of each sequence (a list or a 1-D tensor; read on the host, as PyTorch's).
        batch_first: whether input is [B, T, *].
        enforce_sorted: lengths must then be in decreasing order; False sorts the batch (and records how).

    Returns:
        A PackedSequence.

    Example:
        >>> pack_padded_sequence(torch.tensor([[1, 4], [2, 0], [3, 0]]), [3, 1]).data
        tensor([1, 4, 2, 3])
    """
    from ...ops.join import cat
    from ...tensor.factory import tensor
    lens = _lengths_list(lengths)
    if any(n <= 0 for n in lens):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    x = input.transpose(0, 1) if batch_first else input
    if len(lens) != x.shape[1]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
                           f"(batch_size={x.shape[1]})")
    if enforce_sorted:
        if any(lens[i] < lens[i + 1] for i in range(len(lens) - 1)):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = sorted(range(len(lens)), key=lambda i: -lens[i])          # stable, as PyTorch's sort
        sorted_indices = tensor(order, dtype=_dt.int64, device=x.device)
        x = x.index_select(1, sorted_indices)
        lens = [lens[i] for i in order]
    if lens[0] > x.shape[0]:
        raise RuntimeError(f"Expected sequence length to be at most {x.shape[0]}, but got {lens[0]}")
    batch_sizes = [sum(1 for n in lens if n > t) for t in range(lens[0])]
    data = cat([x[t, :bs] for t, bs in enumerate(batch_sizes)], 0)
    return PackedSequence(data, tensor(batch_sizes, dtype=_dt.int64), sorted_indices, None)


def _unpack_sorted(sequence, padding_value, total):
    """(padded [T, B, *] in the packed (sorted) order, lengths in that order) of a PackedSequence."""
    from ...ops.join import cat, stack
    sizes = [int(v) for v in sequence.batch_sizes.tolist()]
    b = sizes[0]
    data = sequence.data
    trailing = tuple(data.shape[1:])
    rows, off = [], 0
    for bs in sizes:
        step = data.narrow(0, off, bs)
        if bs < b:
            pad = data.new_full((b - bs,) + trailing, padding_value)
            step = cat([step, pad], 0)
        rows.append(step)
        off += bs
    for _ in range(total - len(sizes)):
        rows.append(data.new_full((b,) + trailing, padding_value))
    lengths = [sum(1 for bs in sizes if bs > i) for i in range(b)]
    return stack(rows, 0), lengths


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo pack_padded_sequence: (padded [T, B, *] or [B, T, *], lengths as a cpu int64 tensor), the batch in its
    original order; total_length pads T further (for DataParallel-style fixed shapes).

    Example:
        >>> p = pack_sequence([torch.tensor([1, 2]), torch.tensor([3])])
        >>> pad_packed_sequence(p, batch_first=True)
        (tensor([[1, 2],
                [3, 0]]), tensor([2, 1]))
    """
    from ...tensor.factory import tensor
    steps = sequence.batch_sizes.shape[0]
    if total_length is not None and total_length < steps:
        raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but got "
                         f"total_length={total_length} and max sequence length being {steps}")
    padded, lengths = _unpack_sorted(sequence, padding_value, total_length or steps)
    lens = tensor(lengths, dtype=_dt.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lens = lens.index_select(0, sequence.unsorted_indices.cpu())
    return (padded.transpose(0, 1) if batch_first else padded), lens


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of [L_i, *] tensors (longest first unless enforce_sorted=False).

    Example:
        >>> pack_sequence([torch.tensor([1, 2, 3]), torch.tensor([4, 5])]).batch_sizes
        tensor([2, 2, 1])
    """
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of [L_i, *] sequences in a padded batch (views)."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, :n] for i, n in enumerate(_lengths_list(lengths))]


def unpack_sequence(packed_sequences):
    """The list of [L_i, *] sequences of a PackedSequence, in the original order.

    Example:
        >>> [s.tolist() for s in unpack_sequence(pack_sequence([torch.tensor([1, 2]), torch.tensor([3])]))]
        [[1, 2], [3]]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
