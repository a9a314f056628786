"""optim.ptx: SGD and Adam/AdamW steps against float64 loops written out here from PyTorch's documented
algorithms (torch.optim.SGD / Adam / AdamW), for several steps of each option combination."""
import itertools

import numpy as np
import pytest

from rawdev.runtime import memory
from test_kernels_util import Gpu, cdiv, relerr

rng = np.random.default_rng(13)
N = 1001   # odd: the grid-stride tail


def sgd_reference(p, grads, lr, weight_decay, momentum, dampening, nesterov, maximize):
    """torch.optim.SGD, in float64: returns (params, momentum buffer) after len(grads) steps."""
    p, buf = p.astype(np.float64), None
    for g in grads:
        d_p = -g.astype(np.float64) if maximize else g.astype(np.float64)
        if weight_decay != 0:
            d_p = d_p + weight_decay * p
        if momentum != 0:
            buf = d_p.copy() if buf is None else momentum * buf + (1 - dampening) * d_p
            d_p = d_p + momentum * buf if nesterov else buf
        p = p - lr * d_p
    return p, buf


SGD_CASES = [dict(weight_decay=wd, momentum=mom, dampening=damp, nesterov=nest, maximize=mx)
             for wd, mom, damp, nest, mx in itertools.product([0.0, 0.01], [0.0, 0.9], [0.0, 0.3], [0, 1], [0, 1])
             if not (nest and (mom == 0 or damp != 0))]   # PyTorch: nesterov needs momentum > 0 and dampening 0


@pytest.mark.parametrize("opt", SGD_CASES, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_sgd(dev, opt):
    g = Gpu(dev)
    lr, steps = 0.1, 3
    p0 = rng.standard_normal(N).astype(np.float32)
    grads = [rng.standard_normal(N).astype(np.float32) for _ in range(steps)]
    bp, bg = g.put(p0), g.poisoned(N)
    buf = g.poisoned(N) if opt["momentum"] else None   # step 1 must not read the buffer
    for t, gr in enumerate(grads):
        memory.copy_htod(bg.ptr, gr, gr.nbytes)
        g.run("sgd_step", cdiv(N, 256), 256,
              [bp, bg, buf.ptr if buf else 0, N, lr, opt["weight_decay"], opt["momentum"], opt["dampening"],
               opt["nesterov"], opt["maximize"], int(t == 0)])
    ref_p, ref_buf = sgd_reference(p0, grads, lr, **opt)
    got = g.get(bp, N)
    assert relerr(got - p0, ref_p - p0) < 1e-5
    assert relerr(got, ref_p) < 1e-6
    if buf:
        assert relerr(g.get(buf, N), ref_buf) < 1e-5


def adam_reference(p, grads, lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, adamw):
    """torch.optim.Adam (adamw=0) / AdamW (adamw=1), in float64: returns (params, exp_avg, exp_avg_sq, max_exp_avg_sq)."""
    p = p.astype(np.float64)
    m, v, vmax = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        g = -g.astype(np.float64) if maximize else g.astype(np.float64)
        if adamw:
            p = p * (1 - lr * weight_decay)
        elif weight_decay != 0:
            g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        bc1, bc2 = 1 - beta1 ** t, 1 - beta2 ** t
        if amsgrad:
            vmax = np.maximum(vmax, v)
            denom = np.sqrt(vmax) / np.sqrt(bc2) + eps
        else:
            denom = np.sqrt(v) / np.sqrt(bc2) + eps
        p = p - (lr / bc1) * m / denom
    return p, m, v, vmax


ADAM_CASES = [dict(weight_decay=wd, amsgrad=ams, maximize=mx, adamw=aw)
              for wd, ams, mx, aw in itertools.product([0.0, 0.05], [0, 1], [0, 1], [0, 1])]


@pytest.mark.parametrize("opt", ADAM_CASES, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_adam(dev, opt):
    g = Gpu(dev)
    lr, beta1, beta2, eps, steps = 0.01, 0.9, 0.999, 1e-8, 4
    p0 = rng.standard_normal(N).astype(np.float32)
    grads = [(rng.standard_normal(N) * (0.1 + t)).astype(np.float32) for t in range(steps)]
    zeros = np.zeros(N, np.float32)   # PyTorch initialises exp_avg / exp_avg_sq / max_exp_avg_sq to zeros
    bp, bg, bm, bv = g.put(p0), g.poisoned(N), g.put(zeros), g.put(zeros)
    bvmax = g.put(zeros) if opt["amsgrad"] else None
    for t, gr in enumerate(grads, start=1):
        memory.copy_htod(bg.ptr, gr, gr.nbytes)
        step_size = lr / (1 - beta1 ** t)
        bc2_sqrt = np.sqrt(1 - beta2 ** t)
        g.run("adam_step", cdiv(N, 256), 256,
              [bp, bg, bm, bv, bvmax.ptr if bvmax else 0, N, lr, beta1, beta2, eps, opt["weight_decay"],
               step_size, bc2_sqrt, opt["amsgrad"], opt["maximize"], opt["adamw"]])
    # The kernel receives float32 betas, so its 1 - beta2 is 1 - float32(0.999) (1.3e-5 below 0.001);
    # the reference runs PyTorch's algorithm with those same hyperparameter values.
    f32 = lambda b: float(np.float32(b))   # noqa: E731
    ref_p, ref_m, ref_v, ref_vmax = adam_reference(p0, grads, lr, f32(beta1), f32(beta2), eps, **opt)
    got = g.get(bp, N)
    assert relerr(got - p0, ref_p - p0) < 1e-4
    assert relerr(got, ref_p) < 1e-6
    assert relerr(g.get(bm, N), ref_m) < 1e-5
    assert relerr(g.get(bv, N), ref_v) < 1e-5
    if bvmax:
        assert relerr(g.get(bvmax, N), ref_vmax) < 1e-5
