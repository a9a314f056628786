"""torch.nn.modules.adaptive's classes, as PyTorch's file holds them (defined in rawdev.nn).

Not in rawdev: AdaptiveLogSoftmaxWithLoss."""

__all__ = []
