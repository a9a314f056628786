"""`torch.functional`: the module PyTorch keeps some tensor functions in (torch/functional.py), each also at
torch's top level: the same rawdev functions under this path. Those of PyTorch's names rawdev lacks
(align_tensors, lu, stft) are missing here as at rawdev's top level. The activations (relu, log_softmax, ...)
are in torch.nn.functional, not here, in PyTorch as in rawdev."""
_NAMES = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors", "cartesian_prod",
          "block_diag", "cdist", "chain_matmul", "einsum", "norm", "meshgrid", "pca_lowrank", "split",
          "svd_lowrank", "tensordot", "unique", "unique_consecutive", "unravel_index"]


def __getattr__(name):
    if name in _NAMES:
        import rawdev
        return getattr(rawdev, name)
    raise AttributeError(f"module 'rawdev.functional' has no attribute '{name}'")


__all__ = list(_NAMES)
