"""rawdev.jit accepts TorchScript entry points (eager: functions come back unchanged) and rawdev.special maps
torch.special's names onto rawdev's ops, with values against float64 references on cpu and cuda."""
import math
import warnings

import numpy as np
import pytest
import rawdev

RNG = np.random.default_rng()


def test_script_and_trace_return_what_they_get():
    def f(x):
        return x * 2 + 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = rawdev.jit.script(f)
        m = rawdev.nn.Linear(2, 3)
        assert g is f and rawdev.jit.trace(m, rawdev.ones(1, 2)) is m
    assert rawdev.jit.ignore(f) is f and rawdev.jit.ignore(drop=True)(f) is f and rawdev.jit.unused(f) is f
    assert not rawdev.jit.is_scripting() and not rawdev.jit.is_tracing()
    assert rawdev.jit.wait(rawdev.jit.fork(f, 3)) == 7
    with pytest.raises(NotImplementedError, match="state_dict"):
        rawdev.jit.save(m, "x.pt")


def test_special_names_are_the_ops(driver):
    x = RNG.uniform(-3, 3, 50)
    for dev in ("cpu", "cuda"):
        t = rawdev.tensor(x, dtype=rawdev.float32, device=dev)
        np.testing.assert_allclose(rawdev.special.expit(t).cpu().numpy(), 1 / (1 + np.exp(-x)), rtol=1e-5)
        ndtr = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
        np.testing.assert_allclose(rawdev.special.ndtr(t).cpu().numpy(), ndtr, rtol=1e-5, atol=1e-7)
        p = np.abs(x) / 3
        p[:3] = 0.0
        ent = np.where(p == 0, 0.0, -p * np.log(np.where(p == 0, 1, p)))
        np.testing.assert_allclose(rawdev.special.entr(rawdev.tensor(p, dtype=rawdev.float32, device=dev)).cpu()
                                   .numpy(), ent, rtol=1e-5, atol=1e-7)
        assert rawdev.special.entr(rawdev.tensor([-1.0], device=dev)).item() == -math.inf
        assert rawdev.special.softmax is rawdev.softmax
    assert "expit" in dir(rawdev.special)
