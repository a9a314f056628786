"""Values into numpy arrays (rawdev tensors on any device, numpy arrays, Python numbers) and images into HWC
layout, as PyTorch's tensorboard writer converts them before building protobufs."""
from typing import Any

import numpy as np

from ... import dtypes


def make_np(x: Any) -> np.ndarray:
    """A numpy array of x: a rawdev Tensor (cpu or cuda, detached), a numpy array, or a Python/numpy scalar
    (as a one-element array).

    Args:
        x: the value.

    Returns:
        numpy.ndarray.

    Example:
        >>> make_np(3.0)
        array([3.])
    """
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    from ...tensor import Tensor
    if isinstance(x, Tensor):
        t = x.detach().cpu()
        if t.dtype == dtypes.bfloat16:   # numpy has no bfloat16: PyTorch goes through float16 too
            t = t.to(dtypes.float16)
        return t.numpy()
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")


def make_grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """Tile an N,C,H,W batch (C 1 or 3) into one 3,H*rows,W*cols image, row by row.

    Args:
        images: N,C,H,W array.
        ncols: most images per row.

    Returns:
        numpy.ndarray of shape (3, H*rows, W*cols), images' dtype.

    Example:
        >>> make_grid(np.zeros((3, 1, 2, 2))).shape
        (3, 2, 6)
    """
    if images.shape[1] == 1:
        images = np.concatenate([images, images, images], 1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("make_grid expects N1HW or N3HW images")
    n, _, h, w = images.shape
    ncols = min(n, ncols)
    nrows = int(np.ceil(float(n) / ncols))
    canvas = np.zeros((3, h * nrows, w * ncols), dtype=images.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = images[i]
    return canvas


def convert_to_HWC(tensor: np.ndarray, input_format: str) -> np.ndarray:  # noqa: N802  (PyTorch's name)
    """An image array in input_format (NCHW, CHW, HWC, HW, ... any letter order) as HWC with 3 channels (a
    batch tiled into a grid, one channel repeated).

    Args:
        tensor: the image array.
        input_format: one letter per dimension of tensor.

    Returns:
        numpy.ndarray, H x W x C.

    Example:
        >>> convert_to_HWC(np.zeros((3, 4, 5)), "CHW").shape
        (4, 5, 3)
    """
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shordhand twice. input_format: {input_format}")
    if len(tensor.shape) != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different. tensor shape: {tensor.shape}, "
                             f"input_format: {input_format}")
    fmt = input_format.upper()
    if len(fmt) == 4:
        nchw = tensor.transpose([fmt.find(c) for c in "NCHW"])
        return make_grid(nchw).transpose(1, 2, 0)
    if len(fmt) == 3:
        hwc = tensor.transpose([fmt.find(c) for c in "HWC"])
        if hwc.shape[2] == 1:
            hwc = np.concatenate([hwc, hwc, hwc], 2)
        return hwc
    if len(fmt) == 2:
        hw = tensor.transpose([fmt.find(c) for c in "HW"])
        return np.stack([hw, hw, hw], 2)
    raise AssertionError(f"input_format must have 2, 3 or 4 dimensions, got {input_format}")
