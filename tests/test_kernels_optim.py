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
    """torch.optim.Adam (adamw=0) / AdamW (adamw=1), in float64:
    returns (params, exp_avg, exp_avg_sq, max_exp_avg_sq)."""
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
              [bp, bg, bm, bv, bvmax.ptr if bvmax else 0, N, 1 - beta1, beta2, 1 - beta2, eps,
               opt["weight_decay"], 1 - lr * opt["weight_decay"], step_size, bc2_sqrt, opt["amsgrad"],
               opt["maximize"], opt["adamw"]])
    ref_p, ref_m, ref_v, ref_vmax = adam_reference(p0, grads, lr, beta1, beta2, eps, **opt)
    got = g.get(bp, N)
    assert relerr(got - p0, ref_p - p0) < 1e-4
    assert relerr(got, ref_p) < 1e-6
    assert relerr(g.get(bm, N), ref_m) < 1e-5
    assert relerr(g.get(bv, N), ref_v) < 1e-5
    if bvmax:
        assert relerr(g.get(bvmax, N), ref_vmax) < 1e-5


# ---- hand-derived sequences: numbers worked out on paper, so the reference loops above are checked too
HAND_SGD = [
    # p0 = 1, g = 1 every step, lr = 0.1, momentum 0.9: buf 1, 1.9, 2.71 -> p 0.9, 0.71, 0.439
    (dict(momentum=0.9), [1, 1, 1], [0.9, 0.71, 0.439]),
    # nesterov: d = g + 0.9 * buf = 1.9, 2.71, 3.439 -> p 0.81, 0.539, 0.1951
    (dict(momentum=0.9, nesterov=1), [1, 1, 1], [0.81, 0.539, 0.1951]),
    # dampening 0.5 (first step still sets buf = g): buf 1, 1.4, 1.76 -> p 0.9, 0.76, 0.584
    (dict(momentum=0.9, dampening=0.5), [1, 1, 1], [0.9, 0.76, 0.584]),
    # weight_decay 0.5 without momentum: d = g + 0.5p: p 1 -> 1 - 0.1*1.5 = 0.85 -> 0.85 - 0.1*1.425 = 0.7075
    (dict(weight_decay=0.5), [1, 1], [0.85, 0.7075]),
    # maximize: ascend; with momentum 0.9: buf -1, -1.9 -> p 1.1, 1.29
    (dict(momentum=0.9, maximize=1), [1, 1], [1.1, 1.29]),
]


@pytest.mark.parametrize("opt,grads,expected", HAND_SGD, ids=[str(c[0]) for c in HAND_SGD])
def test_sgd_hand_derived(dev, opt, grads, expected):
    opt = {**dict(weight_decay=0.0, momentum=0.0, dampening=0.0, nesterov=0, maximize=0), **opt}
    g, n = Gpu(dev), 37
    bp, bg = g.put(np.ones(n, np.float32)), g.poisoned(n)
    buf = g.poisoned(n) if opt["momentum"] else None
    for t, (gr, want) in enumerate(zip(grads, expected)):
        memory.copy_htod(bg.ptr, np.full(n, gr, np.float32), 4 * n)
        g.run("sgd_step", cdiv(n, 256), 256, [bp, bg, buf.ptr if buf else 0, n, 0.1, opt["weight_decay"],
                                              opt["momentum"], opt["dampening"], opt["nesterov"], opt["maximize"],
                                              int(t == 0)])
        np.testing.assert_allclose(g.get(bp, n), want, rtol=2e-6)
    np.testing.assert_allclose(sgd_reference(np.ones(1, np.float32), [np.float32(x) for x in grads], 0.1, **opt)[0],
                               expected[-1], rtol=1e-12, atol=1e-14)


HAND_ADAM = [
    # Adam, constant g = 1: bias-corrected m_hat = v_hat = 1, so each step moves lr / (1 + eps) = 0.1
    (dict(), (0.9, 0.999), [1, 1, 1], [0.9, 0.8, 0.7]),
    # AdamW, weight_decay 0.1: p <- p (1 - lr wd) - 0.1: 0.99 - 0.1 = 0.89; 0.8811 - 0.1 = 0.7811; 0.673289
    (dict(weight_decay=0.1, adamw=1), (0.9, 0.999), [1, 1, 1], [0.89, 0.7811, 0.673289]),
    # Adam (L2), weight_decay 1: the first step sees g + p = 2, yet m_hat / sqrt(v_hat) = 1 -> 0.9
    (dict(weight_decay=1.0), (0.9, 0.999), [1], [0.9]),
    # betas (0.5, 0.5), g = 2 then 0. Step 1: m = 1, v = 2, m_hat = 2, v_hat = 4 -> p = 1 - 0.1 = 0.9.
    # Step 2: m = 0.5, v = 1, m_hat = 2/3, v_hat = 4/3 -> update 0.1 (2/3)/sqrt(4/3) = 0.1/sqrt(3)
    (dict(), (0.5, 0.5), [2, 0], [0.9, 0.9 - 0.1 / np.sqrt(3)]),
    # amsgrad keeps vmax = 2 at step 2: denominator sqrt(2 / 0.75) -> update 0.1 (2/3) sqrt(3/8) = 0.1/sqrt(6)
    (dict(amsgrad=1), (0.5, 0.5), [2, 0], [0.9, 0.9 - 0.1 / np.sqrt(6)]),
    # maximize: ascend by the same steps
    (dict(maximize=1), (0.9, 0.999), [1, 1], [1.1, 1.2]),
]


@pytest.mark.parametrize("opt,betas,grads,expected", HAND_ADAM, ids=[f"{c[0]}{c[1]}" for c in HAND_ADAM])
def test_adam_hand_derived(dev, opt, betas, grads, expected):
    opt = {**dict(weight_decay=0.0, amsgrad=0, maximize=0, adamw=0), **opt}
    g, n, lr, eps = Gpu(dev), 37, 0.1, 1e-8
    zeros = np.zeros(n, np.float32)
    bp, bg, bm, bv = g.put(np.ones(n, np.float32)), g.poisoned(n), g.put(zeros), g.put(zeros)
    bvmax = g.put(zeros) if opt["amsgrad"] else None
    b1, b2 = betas
    for t, (gr, want) in enumerate(zip(grads, expected), start=1):
        memory.copy_htod(bg.ptr, np.full(n, gr, np.float32), 4 * n)
        g.run("adam_step", cdiv(n, 256), 256,
              [bp, bg, bm, bv, bvmax.ptr if bvmax else 0, n, 1 - b1, b2, 1 - b2, eps, opt["weight_decay"],
               1 - lr * opt["weight_decay"], lr / (1 - b1 ** t), np.sqrt(1 - b2 ** t), opt["amsgrad"],
               opt["maximize"], opt["adamw"]])
        np.testing.assert_allclose(g.get(bp, n), want, rtol=2e-6)
    ref = adam_reference(np.ones(1, np.float32), [np.float32(x) for x in grads], lr, b1, b2, eps, **opt)[0]
    np.testing.assert_allclose(ref, expected[-1], rtol=1e-7)
