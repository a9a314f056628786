"""`torch.distributed.pipeline.sync.Pipe`: GPipe pipeline parallelism in one process.

An ``nn.Sequential`` whose children live on devices (``cuda:0``, ``cuda:1``; several simulated devices with
``RAWDEV_SIM_DEVICES``) is cut into partitions of consecutive children on one device. ``forward`` splits the
mini-batch into ``chunks`` micro-batches along dim 0, runs each through every partition (its activations moved to
the partition's device; recomputed in backward per the ``checkpoint`` mode, as GPipe trades memory), and
concatenates the outputs on the last device. As PyTorch's, it returns an RRef (so RPC must be initialized) whose
``local_value()`` is the output. rawdev runs the micro-batches one after another on the host (each partition's
kernels on its device's stream): the values and gradients are those of the schedule; the overlap between devices
is not modelled. ``deferred_batch_norm=True`` is refused.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...nn.module import Module

__all__ = ["Pipe"]

_MODES = ("always", "except_last", "never")


class Pipe(Module):
    """A sequential model run as a pipeline of micro-batches over its devices.

    Args:
        module: an nn.Sequential whose children each have their parameters and buffers on one device.
        chunks: the number of micro-batches a mini-batch is split into (along dim 0).
        checkpoint: "except_last" (default: every micro-batch but the last recomputes its activations in
            backward), "always" or "never".
        deferred_batch_norm: PyTorch's batch-norm statistics over the whole mini-batch; refused when True.

    Example:
        >>> model = Pipe(nn.Sequential(block0.cuda(0), block1.cuda(1)), chunks=8)
        >>> out = model(x.cuda(0)).local_value()
    """

    def __init__(self, module: Any, chunks: int = 1, checkpoint: str = "except_last",
                 deferred_batch_norm: bool = False) -> None:
        super().__init__()
        from ...nn import Sequential
        from ..rpc import state
        try:
            state.agent()
        except RuntimeError:
            raise RuntimeError("Please initialize RPC framework for Pipe using torch.distributed.rpc.init_rpc") \
                from None
        if not isinstance(module, Sequential):
            raise TypeError("module must be nn.Sequential to be partitioned")
        if not isinstance(chunks, int) or isinstance(chunks, bool) or chunks <= 0:
            raise ValueError("number of chunks must be positive integer")
        if checkpoint not in _MODES:
            raise ValueError("checkpoint is not one of 'always', 'except_last', or 'never'")
        if deferred_batch_norm:
            raise NotImplementedError("Pipe(deferred_batch_norm=True) is not supported by rawdev: batch norm layers "
                                      "see each micro-batch, as with deferred_batch_norm=False")
        self.chunks, self.checkpoint = chunks, checkpoint
        self.module = module
        groups: list[list[Any]] = []
        devices: list[Any] = []
        for child in module.children():
            dev = _device_of(child)
            if groups and (dev is None or dev == devices[-1]):
                groups[-1].append(child)
            else:
                groups.append([child])
                devices.append(dev if dev is not None else _default_device())
        self.devices = devices
        from ...nn import ModuleList
        self.partitions = ModuleList([Sequential(*g) for g in groups])

    def __len__(self) -> int:
        return len(self.module)

    def __getitem__(self, index: int) -> Any:
        return self.module[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.module)

    def forward(self, *inputs: Any) -> Any:
        """Run the mini-batch as micro-batches through the partitions.

        Args:
            *inputs: tensors (or one tuple of tensors) with the batch along dim 0, on the first device.

        Returns:
            An RRef of the output (concatenated on the last device): ``.local_value()``.
        """
        from ...tensor import Tensor
        from ..rpc import RRef
        if len(inputs) == 1 and isinstance(inputs[0], tuple):
            inputs = inputs[0]
        for t in inputs:
            if isinstance(t, Tensor) and t.device != self.devices[0]:
                raise ValueError(f"All inputs should be on the same device as the first partition "
                                 f"({self.devices[0]}), but got an input on {t.device}")
        micro = _scatter(inputs, self.chunks)
        outs = [self._run(m, i, len(micro)) for i, m in enumerate(micro)]
        return RRef(_gather(outs))

    def _run(self, batch: tuple[Any, ...], index: int, count: int) -> Any:
        from ...utils.checkpoint import checkpoint as _checkpoint
        recompute = self.checkpoint == "always" or (self.checkpoint == "except_last" and index < count - 1)
        from ...autograd.grad_mode import is_grad_enabled
        x: Any = batch
        for part, dev in zip(self.partitions, self.devices):
            x = tuple(t.to(dev) if hasattr(t, "to") else t for t in x)
            if recompute and is_grad_enabled():
                y = _checkpoint(part, *x, use_reentrant=False)
            else:
                y = part(*x)
            x = y if isinstance(y, tuple) else (y,)
        return x[0] if len(x) == 1 else x


def _device_of(m: Any) -> Any:
    devs = {t.device for t in list(m.parameters()) + list(m.buffers())}
    if len(devs) > 1:
        raise ValueError(f"Module {type(m).__name__} has parameters on different devices {sorted(map(str, devs))}: "
                         f"each child of the Sequential must be on one device")
    return next(iter(devs)) if devs else None


def _default_device() -> Any:
    from ...device import as_device
    return as_device("cpu")


def _scatter(inputs: tuple[Any, ...], chunks: int) -> list[tuple[Any, ...]]:
    from ...tensor import Tensor
    tensors = [t for t in inputs if isinstance(t, Tensor)]
    if not tensors:
        raise TypeError("Pipe expects at least one tensor input")
    n = min(chunks, tensors[0].shape[0])
    split = [t.chunk(n, 0) if isinstance(t, Tensor) else [t] * n for t in inputs]
    count = min(len(s) for s in split)
    return [tuple(s[i] for s in split) for i in range(count)]


def _gather(outs: list[Any]) -> Any:
    from ...ops import join
    if isinstance(outs[0], tuple):
        return tuple(join.cat([o[k] for o in outs], 0) for k in range(len(outs[0])))
    return join.cat(outs, 0)
