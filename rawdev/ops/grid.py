"""F.affine_grid and F.grid_sample (2-D), composed from declared ops: the sampling positions are unnormalized
from [−1, 1] as PyTorch's (align_corners decides whether ±1 are the corner pixels' centres or their outer
edges), padded by 'zeros', 'border' or 'reflection', and read with four gathers (bilinear) or one (nearest).
Gradients reach the input through the gathers and the grid through the bilinear weights — what a spatial
transformer network trains."""
from .. import dtypes as _dt
from .registry import declare
from .select.functions import where as _where


def _base_coords(n, align_corners, like):
    from ..tensor.factory import arange
    i = arange(n, device=like.device).to(dtype=like.dtype)
    if n == 1:
        return i * 0
    if align_corners:
        return i * (2.0 / (n - 1)) - 1.0
    return (2.0 * i + 1.0) / n - 1.0


def affine_grid(theta, size, align_corners=None):
    """The sampling grid [N, H, W, 2] (x, y in [−1, 1]) of the 2-D affine maps theta [N, 2, 3] for an output of
    size (N, C, H, W).

    Example:
        >>> F.affine_grid(torch.tensor([[[1., 0., 0.], [0., 1., 0.]]]), (1, 1, 2, 2), align_corners=False)[0, 0]
        tensor([[-0.5000, -0.5000],
                [ 0.5000, -0.5000]])
    """
    align_corners = bool(align_corners)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) != 4:
        raise NotImplementedError("affine_grid only supports 4D sizes (2-D sampling), for 2D affine "
                                  f"transformations. Got size {list(size)}.")
    if theta.ndim != 3 or tuple(theta.shape[-2:]) != (2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {list(size)}. "
                         f"Got {list(theta.shape)}.")
    n, _, h, w = size
    if theta.shape[0] != n:
        raise ValueError(f"Expected a batch of {n} affine matrices, got {theta.shape[0]}")
    from .join import stack
    xs = _base_coords(w, align_corners, theta).reshape(1, w).expand(h, w)
    ys = _base_coords(h, align_corners, theta).reshape(h, 1).expand(h, w)
    base = stack([xs, ys, xs * 0 + 1], -1).reshape(1, h * w, 3)            # [1, H·W, 3]
    grid = base @ theta.transpose(1, 2)                                    # [N, H·W, 2]
    return grid.reshape(n, h, w, 2)


def _unnormalize(c, size, align_corners):
    return (c + 1) * ((size - 1) / 2.0) if align_corners else ((c + 1) * size - 1) / 2.0


def _reflect(c, low2, high2):
    """PyTorch's reflect_coordinates: fold c into [low2/2, high2/2] by mirroring at the ends."""
    if low2 == high2:
        return c * 0
    lo = low2 / 2.0
    span = (high2 - low2) / 2.0
    d = (c - lo).abs()
    flips = (d / span).floor()
    extra = d - flips * span
    return _where((flips % 2) == 0, extra + lo, span - extra + lo)


def _source(c, size, padding_mode, align_corners):
    x = _unnormalize(c, size, align_corners)
    if padding_mode == "border":
        x = x.clamp(0, size - 1)
    elif padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        x = x.clamp(0, size - 1)
    return x


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):  # noqa: A002
    """Sample input [N, C, H, W] at grid [N, Ho, Wo, 2] ((x, y) in [−1, 1]) -> [N, C, Ho, Wo].

    Args:
        mode: 'bilinear' or 'nearest'.
        padding_mode: 'zeros' (outside reads 0), 'border' (clamped) or 'reflection' (mirrored).
        align_corners: whether ±1 are the centres (True) or the outer edges (False, default) of the corner pixels.

    Example:
        >>> x = torch.arange(4.).reshape(1, 1, 2, 2)
        >>> F.grid_sample(x, torch.zeros(1, 1, 1, 2), align_corners=False)
        tensor([[[[1.5000]]]])
    """
    align_corners = bool(align_corners)
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError(f"grid_sample: mode '{mode}' is not supported by rawdev (bilinear, nearest)")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if input.ndim != 4:
        raise NotImplementedError("grid_sample: rawdev samples 4-D inputs (2-D grids) only")
    if grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid to have size 2 in last dimension and the batch size of "
                           f"input, but got grid with sizes {list(grid.shape)}")
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    g = grid.to(dtype=input.dtype) if grid.dtype is not input.dtype else grid
    x = _source(g[..., 0], w, padding_mode, align_corners).reshape(n, 1, ho * wo)
    y = _source(g[..., 1], h, padding_mode, align_corners).reshape(n, 1, ho * wo)
    flat = input.reshape(n, c, h * w)

    def read(xi, yi):
        """input at integer positions (xi, yi) [N, 1, P], 0 outside."""
        inside = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
        idx = (yi.clamp(0, h - 1) * w + xi.clamp(0, w - 1)).to(dtype=_dt.int64)
        vals = flat.gather(2, idx.expand(n, c, ho * wo))
        return vals * inside.to(dtype=input.dtype)

    if mode == "nearest":
        out = read(x.detach().round(), y.detach().round())           # half to even, as PyTorch's nearbyint
    else:
        x0, y0 = x.detach().floor(), y.detach().floor()
        wx1, wy1 = x - x0, y - y0
        wx0, wy0 = 1 - wx1, 1 - wy1
        out = (read(x0, y0) * (wx0 * wy0) + read(x0 + 1, y0) * (wx1 * wy0) +
               read(x0, y0 + 1) * (wx0 * wy1) + read(x0 + 1, y0 + 1) * (wx1 * wy1))
    return out.reshape(n, c, ho, wo)


declare("affine_grid", affine_grid, family="grid", functional=True, torch=False, method=False)
declare("grid_sample", grid_sample, family="grid", functional=True, torch=False, method=False)
