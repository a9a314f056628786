"""optim.LBFGS: the iterates of PyTorch's algorithm (literal numbers from PyTorch 2.13 on the same problem, in
float64), with and without the strong-Wolfe line search, its stopping rules and state; on cuda (the simulated
GPU) a least-squares problem converges to the closed-form solution."""
import numpy as np
import pytest
import rawdev

# PyTorch 2.13, float64 on the cpu: four step() calls on a 4-D Rosenbrock plus a 3x2 least-squares term,
# LBFGS(lr=1, max_iter=15, history_size=5): (losses returned, func_evals, n_iter, x after the 4th step)
PYTORCH = {
    None: (["291", "6.622625457", "4.395715377", "3.541340503"], 60, 60,
           [0.99591631, 0.99211592, 0.98437659, 0.96889138]),
    "strong_wolfe": (["291", "6.734961505", "4.260673116", "3.539269218"], 71, 56,
                     [0.99859811, 0.99711842, 0.99423597, 0.988392]),
}


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_iterates_match_pytorch(line_search_fn):
    x = rawdev.tensor([-1.2, 1.0, -0.5, 0.8], dtype=rawdev.float64, requires_grad=True)
    w = rawdev.tensor([[0.3, -0.2], [0.1, 0.4]], dtype=rawdev.float64, requires_grad=True)
    A = rawdev.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], dtype=rawdev.float64)
    B = rawdev.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0]], dtype=rawdev.float64)
    opt = rawdev.optim.LBFGS([x, w], lr=1, max_iter=15, history_size=5, line_search_fn=line_search_fn)

    def closure():
        opt.zero_grad()
        r = (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum() + ((A @ w - B) ** 2).sum()
        r.backward()
        return r
    losses = [float(opt.step(closure)) for _ in range(4)]
    want_losses, evals, iters, want_x = PYTORCH[line_search_fn]
    np.testing.assert_allclose(losses, [float(v) for v in want_losses], rtol=1e-7)
    assert opt.state[x]["func_evals"] == evals and opt.state[x]["n_iter"] == iters
    np.testing.assert_allclose(x.detach().numpy(), want_x, rtol=1e-7)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_least_squares_converges_on_cuda(line_search_fn, driver):
    rng = np.random.default_rng()
    a, b = rng.standard_normal((40, 6)), rng.standard_normal((40, 3))
    want = np.linalg.lstsq(a, b, rcond=None)[0]
    for dev in ("cpu", "cuda"):
        A, B = (rawdev.tensor(v, dtype=rawdev.float32, device=dev) for v in (a, b))
        w = rawdev.zeros(6, 3, device=dev, requires_grad=True)
        opt = rawdev.optim.LBFGS([w], lr=0.5 if line_search_fn is None else 1, max_iter=50,
                                 line_search_fn=line_search_fn)

        def closure(opt=opt, A=A, B=B, w=w):
            opt.zero_grad()
            loss = ((A @ w - B) ** 2).mean()
            loss.backward()
            return loss
        for _ in range(3):
            opt.step(closure)
        np.testing.assert_allclose(w.detach().cpu().numpy(), want, atol=2e-3)


def test_options_and_errors():
    p = rawdev.zeros(3, requires_grad=True)
    opt = rawdev.optim.LBFGS([p])
    g = opt.param_groups[0]
    assert (g["lr"], g["max_iter"], g["max_eval"], g["tolerance_grad"], g["tolerance_change"], g["history_size"],
            g["line_search_fn"]) == (1, 20, 25, 1e-7, 1e-9, 100, None)
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        rawdev.optim.LBFGS([{"params": [p]}, {"params": [rawdev.zeros(2, requires_grad=True)]}])
    with pytest.raises(ValueError, match="Invalid learning rate"):
        rawdev.optim.LBFGS([p], lr=-1)
    bad = rawdev.optim.LBFGS([p], line_search_fn="armijo")

    def closure():
        bad.zero_grad()
        loss = ((p - 1) ** 2).sum()
        loss.backward()
        return loss
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        bad.step(closure)
    # a zero gradient stops at once: one evaluation, the parameters untouched
    q = rawdev.ones(3, requires_grad=True)
    opt = rawdev.optim.LBFGS([q])

    def flat():
        opt.zero_grad()
        loss = ((q - 1) ** 2).sum()
        loss.backward()
        return loss
    opt.step(flat)
    assert opt.state[q]["func_evals"] == 1 and q.tolist() == [1.0, 1.0, 1.0]
