"""F.affine_grid / F.grid_sample against a per-pixel float64 reference written from PyTorch's documented
coordinate rules (align_corners, zeros/border/reflection padding), on the cpu and the simulated GPU, with the
gradients a spatial transformer trains (input and grid) by central differences."""
import math

import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F


def _unnorm(c, size, ac):
    return (c + 1) / 2 * (size - 1) if ac else ((c + 1) * size - 1) / 2


def _reflect(x, lo2, hi2):
    if lo2 == hi2:
        return 0.0
    lo, span = lo2 / 2, (hi2 - lo2) / 2
    d = abs(x - lo)
    flips = math.floor(d / span)
    extra = d - flips * span
    return extra + lo if flips % 2 == 0 else span - extra + lo


def _coord(c, size, pad, ac):
    x = _unnorm(c, size, ac)
    if pad == "border":
        x = min(max(x, 0), size - 1)
    elif pad == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if ac else _reflect(x, -1, 2 * size - 1)
        x = min(max(x, 0), size - 1)
    return x


def grid_sample_ref(inp, grid, mode, pad, ac):
    n, c, h, w = inp.shape
    _, ho, wo, _ = grid.shape
    out = np.zeros((n, c, ho, wo))

    def at(b, yi, xi):
        return inp[b, :, yi, xi] if 0 <= xi < w and 0 <= yi < h else np.zeros(c)
    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                x = _coord(grid[b, i, j, 0], w, pad, ac)
                y = _coord(grid[b, i, j, 1], h, pad, ac)
                if mode == "nearest":
                    out[b, :, i, j] = at(b, int(np.rint(y)), int(np.rint(x)))
                    continue
                x0, y0 = math.floor(x), math.floor(y)
                fx, fy = x - x0, y - y0
                out[b, :, i, j] = (at(b, y0, x0) * (1 - fx) * (1 - fy) + at(b, y0, x0 + 1) * fx * (1 - fy) +
                                   at(b, y0 + 1, x0) * (1 - fx) * fy + at(b, y0 + 1, x0 + 1) * fx * fy)
    return out


def affine_grid_ref(theta, h, w, ac):
    def base(k):
        i = np.arange(k, dtype=np.float64)
        return i * 0 if k == 1 else (i * 2 / (k - 1) - 1 if ac else (2 * i + 1) / k - 1)
    xs, ys = np.meshgrid(base(w), base(h))
    pts = np.stack([xs, ys, np.ones_like(xs)], -1)
    return np.einsum("hwk,nik->nhwi", pts, theta)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_matches_the_reference(align_corners, padding_mode, mode, driver):
    r = np.random.default_rng()
    inp = r.standard_normal((2, 3, 5, 6))
    grid = r.uniform(-1.4, 1.4, (2, 4, 7, 2))                  # some samples outside [−1, 1]
    ref = grid_sample_ref(inp, grid, mode, padding_mode, align_corners)
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-12), ("cuda", rawdev.float32, 1e-5)):
        t_in = rawdev.tensor(inp, dtype=dt, device=dev)
        t_grid = rawdev.tensor(grid, dtype=dt, device=dev).transpose(1, 2).contiguous().transpose(1, 2)
        got = F.grid_sample(t_in, t_grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
        if dev == "cuda" and mode == "nearest":                # a float32 position can round the other way
            close = np.isclose(got.cpu().numpy(), ref, rtol=1e-5, atol=1e-5).mean()
            assert close > 0.97
            continue
        np.testing.assert_allclose(got.cpu().numpy(), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_and_spatial_transformer_gradients(align_corners, driver):
    r = np.random.default_rng()
    theta = np.array([[[0.9, 0.2, 0.1], [-0.1, 1.1, -0.2]], [[1.2, -0.3, 0.4], [0.2, 0.7, 0.3]]])
    theta = theta + r.uniform(-0.02, 0.02, theta.shape)        # no sample exactly on a pixel or the border
    inp = r.standard_normal((2, 2, 5, 6))
    g = r.standard_normal((2, 2, 4, 3))
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-6), ("cuda", rawdev.float32, 2e-3)):
        th = rawdev.tensor(theta, dtype=dt, device=dev, requires_grad=True)
        x = rawdev.tensor(inp, dtype=dt, device=dev, requires_grad=True)
        grid = F.affine_grid(th, (2, 2, 4, 3), align_corners=align_corners)
        np.testing.assert_allclose(grid.detach().cpu().numpy(), affine_grid_ref(theta, 4, 3, align_corners),
                                   rtol=tol, atol=tol)
        y = F.grid_sample(x, grid, align_corners=align_corners, padding_mode="border")
        (y * rawdev.tensor(g, dtype=dt, device=dev)).sum().backward()

        def f_theta(t):
            return (grid_sample_ref(inp, affine_grid_ref(t, 4, 3, align_corners), "bilinear", "border",
                                    align_corners) * g).sum()

        def f_inp(a):
            return (grid_sample_ref(a, affine_grid_ref(theta, 4, 3, align_corners), "bilinear", "border",
                                    align_corners) * g).sum()
        for tensor, f, x0 in ((th, f_theta, theta), (x, f_inp, inp)):
            num = np.zeros_like(x0)
            for i in np.ndindex(x0.shape):
                p, m = x0.copy(), x0.copy()
                p[i] += 1e-6
                m[i] -= 1e-6
                num[i] = (f(p) - f(m)) / 2e-6
            np.testing.assert_allclose(tensor.grad.cpu().numpy(), num, rtol=tol * 10, atol=tol * 10)
    with pytest.raises(ValueError, match="expected padding_mode"):
        F.grid_sample(rawdev.zeros(1, 1, 2, 2), rawdev.zeros(1, 1, 1, 2), padding_mode="wrap")
