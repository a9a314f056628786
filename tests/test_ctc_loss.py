"""F.ctc_loss / nn.CTCLoss against a brute-force sum over every alignment (all C^T label paths, collapsed), on
the cpu and the simulated GPU, both target layouts, the reductions, infeasible targets and gradients."""
import itertools
import math

import numpy as np
import pytest
import rawdev
import rawdev.nn.functional as F
from rawdev import nn
from rawdev.autograd import gradcheck


def _collapse(path, blank):
    out, prev = [], None
    for c in path:
        if c != prev and c != blank:
            out.append(c)
        prev = c
    return out


def ctc_brute(logp, target, blank=0):
    """−log Σ over label paths that collapse to target of Π p(path) (logp: [T, C])."""
    t_len, c = logp.shape
    total = 0.0
    for path in itertools.product(range(c), repeat=t_len):
        if _collapse(path, blank) == list(target):
            total += math.exp(sum(logp[t, k] for t, k in enumerate(path)))
    return -math.log(total) if total > 0 else math.inf


def test_ctc_matches_brute_force(driver):
    r = np.random.default_rng()
    x = r.standard_normal((5, 3, 4))
    logp = x - np.log(np.exp(x).sum(-1, keepdims=True))
    targets = [[1, 2], [3, 3], [2]]
    in_lens, tg_lens = [5, 4, 5], [2, 2, 1]
    ref = np.array([ctc_brute(logp[:in_lens[i], i], targets[i]) for i in range(3)])
    padded = [[1, 2], [3, 3], [2, 0]]
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-10), ("cuda", rawdev.float32, 1e-5)):
        lp = rawdev.tensor(logp, dtype=dt, device=dev)
        for tg in (rawdev.tensor(padded, device=dev), rawdev.tensor([1, 2, 3, 3, 2], device=dev)):
            got = F.ctc_loss(lp, tg, rawdev.tensor(in_lens), rawdev.tensor(tg_lens), reduction="none")
            np.testing.assert_allclose(got.cpu().numpy(), ref, rtol=tol)
        mean = F.ctc_loss(lp, rawdev.tensor(padded, device=dev), in_lens, tg_lens)
        assert mean.item() == pytest.approx(float(np.mean(ref / np.array(tg_lens))), rel=tol * 10)
        s = nn.CTCLoss(reduction="sum")(lp, rawdev.tensor(padded, device=dev), in_lens, tg_lens)
        assert s.item() == pytest.approx(float(ref.sum()), rel=tol * 10)
    # a target longer than its input can emit: inf, or 0 with zero_infinity
    lp = rawdev.tensor(logp, dtype=rawdev.float64)
    bad = F.ctc_loss(lp, rawdev.tensor([[1, 1, 1, 1]] * 3), [2, 5, 5], [4, 1, 0], reduction="none")
    assert math.isinf(bad[0].item())
    assert bad[1].item() == pytest.approx(ctc_brute(logp[:, 1], [1]), rel=1e-10)
    assert bad[2].item() == pytest.approx(ctc_brute(logp[:, 2], []), rel=1e-10)
    z = F.ctc_loss(lp, rawdev.tensor([[1, 1, 1, 1]] * 3), [2, 5, 5], [4, 1, 0], reduction="none", zero_infinity=True)
    assert z[0].item() == 0.0


def test_ctc_gradients():
    x = rawdev.tensor(np.random.default_rng().standard_normal((6, 2, 4)), dtype=rawdev.float64, requires_grad=True)

    def loss(t):
        return F.ctc_loss(t.log_softmax(2), rawdev.tensor([[1, 3, 3], [2, 0, 0]]), [6, 5], [3, 1], reduction="none")
    assert gradcheck(loss, (x,), atol=1e-6, rtol=1e-4)
