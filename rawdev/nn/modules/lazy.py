"""torch.nn.modules.lazy's classes, as PyTorch's file holds them (defined in rawdev.nn).

Not in rawdev: LazyModuleMixin."""

__all__ = []
