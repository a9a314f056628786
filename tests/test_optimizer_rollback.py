"""An optimizer step that fails part way (a kernel launch failing, on the simulated GPU): each unit of the step
(one launch) runs entirely or not at all, host step counts included, and retrying the step with the same gradients
completes it, so the result is what a step that never failed gives, bit for bit. Also: a dtype problem in any
group is found before any group is stepped."""
import numpy as np
import pytest
import rawdev
from rawdev import nn, optim, sim
from rawdev.errors import CudaError
from rawdev.runtime import reset_for_tests
from rawdev.sim.driver import R

SEED = 20261204


@pytest.fixture
def fresh():
    reset_for_tests("sim")
    yield
    sim.clear_faults()
    reset_for_tests("sim")


def make(kind):
    """A small model on the device in two param groups (two launches per step), with gradients."""
    rawdev.manual_seed(SEED)
    m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).to("cuda")
    groups = [{"params": m[0].parameters()}, {"params": m[2].parameters(), "lr": 0.02}]
    opt = {"adam": lambda: optim.Adam(groups, lr=0.01), "adamw": lambda: optim.AdamW(groups, lr=0.01, amsgrad=True),
           "sgd": lambda: optim.SGD(groups, lr=0.1, momentum=0.9)}[kind]()
    rng = np.random.default_rng(SEED)
    x = rawdev.tensor(rng.standard_normal((5, 4)).astype(np.float32), device="cuda")
    y = rawdev.tensor(rng.integers(0, 3, 5), device="cuda")

    def grads():
        opt.zero_grad()
        nn.CrossEntropyLoss()(m(x), y).backward()
    return m, opt, grads


def snapshot(m, opt):
    params = [p.detach().cpu().numpy().copy() for p in m.parameters()]
    state = [{k: (v.detach().cpu().numpy().copy() if isinstance(v, rawdev.Tensor) else v)
              for k, v in opt.state[p].items()} for p in m.parameters()]
    return params, state


def assert_same(a, b):
    (pa, sa), (pb, sb) = a, b
    for x, y in zip(pa, pb):
        np.testing.assert_array_equal(x, y)
    assert [sorted(s) for s in sa] == [sorted(s) for s in sb]
    for s, t in zip(sa, sb):
        for k in s:
            np.testing.assert_array_equal(s[k], t[k], err_msg=k)


def launches():
    return sim.stats()["calls"].get("cuLaunchKernel", 0)


def make_loose(kind):
    """Parameters moved one by one (no shared arena): the backend updates them one launch each."""
    rawdev.manual_seed(SEED)
    ps = [nn.Parameter(rawdev.randn(4, 3).cuda()), nn.Parameter(rawdev.randn(3).cuda()),
          nn.Parameter(rawdev.randn(5).cuda())]
    opt = {"adam": lambda: optim.Adam(ps, lr=0.01), "adamw": lambda: optim.AdamW(ps, lr=0.01, amsgrad=True),
           "sgd": lambda: optim.SGD(ps, lr=0.1, momentum=0.9)}[kind]()

    def grads():
        opt.zero_grad()
        sum((p * p).sum() * (i + 1) for i, p in enumerate(ps)).backward()

    class M:
        def parameters(self):
            return iter(ps)
    return M(), opt, grads


@pytest.mark.parametrize("kind", ["adam", "adamw", "sgd"])
@pytest.mark.parametrize("steps_before", [0, 2])
@pytest.mark.parametrize("model", ["groups", "loose"])
@pytest.mark.parametrize("nth", [1, 2])
def test_a_step_failing_at_a_launch_is_completed_by_the_retry(fresh, kind, steps_before, model, nth):
    """Failing at the first launch changes nothing (step counts included); failing at a later one leaves the
    updates that ran, says so, and the retry with the same gradients runs only the rest: the result equals a
    step that never failed, bit for bit."""
    build = make if model == "groups" else make_loose
    ref_m, ref_opt, ref_grads = build(kind)
    for _ in range(steps_before + 1):
        ref_grads()
        ref_opt.step()
    expected = snapshot(ref_m, ref_opt)

    m, opt, grads = build(kind)
    for _ in range(steps_before):
        grads()
        opt.step()
    grads()
    before = snapshot(m, opt)
    n0 = launches()
    sim.inject_fault("cuLaunchKernel", R.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, nth=nth)
    with pytest.raises(CudaError, match="cuLaunchKernel") as err:
        opt.step()
    if nth == 1:
        assert_same(snapshot(m, opt), before)
    else:
        assert launches() - n0 >= 2   # an earlier unit's update did run before the failure
        assert "calling step() again with the same gradients completes this step" in str(err.value.__notes__)
    opt.step()                    # the retry
    assert_same(snapshot(m, opt), expected)


def test_new_gradients_after_a_failed_step_start_a_new_step(fresh):
    """The resume applies only to a retry with the same gradients: after a new backward the step is a full one."""
    m, opt, grads = make("sgd")
    grads()
    sim.inject_fault("cuLaunchKernel", R.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, nth=2)
    with pytest.raises(CudaError):
        opt.step()
    grads()
    n0 = launches()
    opt.step()
    assert launches() - n0 == 2   # both groups stepped


def test_a_dtype_error_in_a_later_group_steps_no_group(fresh):
    p1 = nn.Parameter(rawdev.ones(3, device="cuda"))
    p2 = rawdev.ones(3, dtype=rawdev.int32, device="cuda")   # an integer tensor: no optimizer steps one
    opt = optim.RMSprop([{"params": [p1]}, {"params": [p2]}], lr=0.1)
    p1.grad, p2.grad = rawdev.ones(3, device="cuda"), rawdev.ones(3, dtype=rawdev.int32, device="cuda")
    with pytest.raises(TypeError, match="float32"):
        opt.step()
    assert p1.detach().cpu().numpy().tolist() == [1.0, 1.0, 1.0] and len(opt.state[p1]) == 0
