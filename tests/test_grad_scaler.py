"""rawdev.amp.GradScaler against PyTorch's algorithm: growth after growth_interval clean steps, backoff and a skipped
step on an injected inf/NaN, unscale_ before clipping, state_dict round trips, nested outputs, the disabled
pass-through, and PyTorch's wording for misuse; on the cpu and on cuda (the simulator)."""
import math

import numpy as np
import pytest
import rawdev as torch

SEED = int(np.random.default_rng().integers(2 ** 31))


def setup(device="cpu", **kw):
    g = np.random.default_rng(SEED)
    model = torch.nn.Linear(3, 2).to(device)
    x = torch.tensor(g.standard_normal((4, 3)).astype(np.float32), device=device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return model, x, opt, torch.amp.GradScaler(device, **kw)


def backward(model, x, scaler, poison=None):
    model.zero_grad()
    scaler.scale(model(x).square().mean()).backward()
    if poison is not None:   # an overflow, injected deterministically into one gradient element
        model.weight.grad[0, 1] = poison


def test_growth_after_growth_interval_clean_steps():
    model, x, opt, scaler = setup(init_scale=8.0, growth_interval=3)
    for i in range(1, 7):
        backward(model, x, scaler)
        scaler.step(opt)
        scaler.update()
        grown = 2 ** (i // 3)
        assert scaler.get_scale() == 8.0 * grown, i
        assert scaler.state_dict()["_growth_tracker"] == i % 3


@pytest.mark.parametrize("poison", [math.inf, -math.inf, math.nan])
def test_inf_or_nan_skips_the_step_and_backs_off(poison):
    model, x, opt, scaler = setup(init_scale=1024.0, growth_interval=2)
    backward(model, x, scaler)
    scaler.step(opt)
    scaler.update()                                   # one clean step: tracker 1
    assert scaler.state_dict()["_growth_tracker"] == 1
    before = [p.detach().numpy().copy() for p in model.parameters()]
    backward(model, x, scaler, poison)
    assert scaler.step(opt) is None
    scaler.update()
    assert all(np.array_equal(b, p.detach().numpy()) for b, p in zip(before, model.parameters()))
    assert scaler.get_scale() == 512.0 and scaler.state_dict()["_growth_tracker"] == 0
    backward(model, x, scaler)                        # the next clean step runs
    scaler.step(opt)
    scaler.update()
    assert not np.array_equal(before[0], model.weight.detach().numpy()) and scaler.get_scale() == 512.0


def test_unscale_then_clip_then_step_matches_float64():
    model, x, opt, scaler = setup(init_scale=2.0 ** 10)
    w0, b0 = (p.detach().numpy().astype(np.float64) for p in (model.weight, model.bias))
    xr = x.numpy().astype(np.float64)
    r = 2 * (xr @ w0.T + b0) / 8                      # d mean(y^2) / dy
    gw, gb = r.T @ xr, r.sum(0)
    backward(model, x, scaler)
    assert np.allclose(model.weight.grad.numpy(), gw * 1024, rtol=1e-4)
    scaler.unscale_(opt)
    err = np.linalg.norm(model.weight.grad.numpy() - gw) / np.linalg.norm(gw)
    assert err < 1e-5, f"seed={SEED}"
    total = np.sqrt((gw ** 2).sum() + (gb ** 2).sum())
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=total / 2)
    assert abs(norm.item() - total) / total < 1e-5
    scaler.step(opt)
    scaler.update()
    want = w0 - 0.1 * gw * (total / 2) / (total + 1e-6)
    assert np.allclose(model.weight.detach().numpy(), want, rtol=1e-4, atol=1e-6), f"seed={SEED}"


def test_state_dict_round_trip():
    model, x, opt, scaler = setup(init_scale=64.0, growth_factor=4.0, backoff_factor=0.25, growth_interval=5)
    for poison in (None, math.inf, None, None):
        backward(model, x, scaler, poison)
        scaler.step(opt)
        scaler.update()
    sd = scaler.state_dict()
    assert sd == {"scale": 16.0, "growth_factor": 4.0, "backoff_factor": 0.25, "growth_interval": 5,
                  "_growth_tracker": 2}
    fresh = torch.amp.GradScaler("cpu")
    fresh.load_state_dict(sd)
    assert fresh.state_dict() == sd and fresh.get_scale() == 16.0
    for s in (scaler, fresh):                         # both continue identically: 3 more clean steps grow
        for _ in range(3):
            backward(model, x, s)
            s.step(opt)
            s.update()
    assert scaler.state_dict() == fresh.state_dict() and fresh.get_scale() == 64.0
    with pytest.raises(RuntimeError, match="The source state dict is empty, possibly because it was saved "
                                           "from a disabled instance of GradScaler."):
        fresh.load_state_dict({})


def test_misuse_errors_worded_as_pytorch():
    model, x, opt, scaler = setup()
    with pytest.raises(AssertionError, match=r"Attempted unscale_ but _scale is None.  This may indicate your "
                                             r"script did not use scaler.scale\(loss or outputs\)"):
        scaler.unscale_(opt)
    with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
        scaler.step(opt)
    backward(model, x, scaler)
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"^unscale_\(\) has already been called on this optimizer since the "
                                           r"last update\(\).$"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"^unscale_\(\) is being called after step\(\).$"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"^step\(\) has already been called since the last update\(\).$"):
        scaler.step(opt)
    scaler.update()
    with pytest.raises(AssertionError, match=r"No inf checks were recorded prior to update."):
        scaler.update()
    with pytest.raises(RuntimeError, match="Closure use is not currently supported if GradScaler is enabled."):
        scaler.step(opt, closure=lambda: 0.0)
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        torch.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
        torch.amp.GradScaler("cpu", backoff_factor=1.0)
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale([1.0])
    half = torch.nn.Linear(2, 1).half()
    hopt = torch.optim.SGD(half.parameters(), lr=0.1)
    s2 = torch.amp.GradScaler("cpu", init_scale=2.0)
    s2.scale(half(torch.ones(1, 2, dtype=torch.float16)).sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        s2.unscale_(hopt)


def test_scale_nested_outputs_and_update_new_scale():
    scaler = torch.amp.GradScaler("cpu", init_scale=4.0)
    a, b = torch.tensor([1.0, 2.0]), torch.tensor(3.0)
    out = scaler.scale([a, (b, [a])])
    assert isinstance(out, list) and isinstance(out[1], tuple) and isinstance(out[1][1], list)
    assert out[0].tolist() == [4.0, 8.0] and out[1][0].item() == 12.0 and out[1][1][0].tolist() == [4.0, 8.0]
    assert [t.item() for t in scaler.scale(x for x in (b, b))] == [12.0, 12.0]
    scaler.update(new_scale=32.0)
    assert scaler.get_scale() == 32.0
    scaler.update(torch.tensor(2.0))
    assert scaler.get_scale() == 2.0
    with pytest.raises(AssertionError, match="new_scale should be a float or a 1-element"):
        scaler.update(torch.tensor([1.0, 2.0]))


def test_disabled_scaler_is_a_pass_through():
    model, x, opt, scaler = setup(enabled=False)
    y = model(x).sum()
    assert scaler.scale(y) is y and scaler.get_scale() == 1.0 and not scaler.is_enabled()
    y.backward()
    before = model.weight.detach().numpy().copy()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert not np.array_equal(before, model.weight.detach().numpy())
    assert scaler.state_dict() == {}
    scaler.load_state_dict({})
    s = torch.amp.GradScaler("cpu")
    assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == (2.0, 0.5, 2000)
    s.set_growth_factor(3.0)
    s.set_backoff_factor(0.1)
    s.set_growth_interval(7)
    assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == (3.0, 0.1, 7)
    assert s.get_scale() == 65536.0


def test_cuda_scaler_skips_on_inf_and_grows(driver):
    """On the simulator: the scale and found_inf live on the device; a skipped step leaves the weights, a clean
    one moves them; growth after growth_interval."""
    model, x, opt, scaler = setup("cuda", init_scale=256.0, growth_interval=2)
    before = model.weight.detach().cpu().numpy().copy()
    backward(model, x, scaler, math.inf)
    scaler.step(opt)
    found = scaler._per_optimizer_states[id(opt)]["found_inf_per_device"]
    assert [(d.type, t.device.type, t.item()) for d, t in found.items()] == [("cuda", "cuda", 1.0)]
    scaler.update()
    assert np.array_equal(before, model.weight.detach().cpu().numpy()) and scaler.get_scale() == 128.0
    for _ in range(2):
        backward(model, x, scaler)
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 256.0 and not np.array_equal(before, model.weight.detach().cpu().numpy())
    assert scaler._scale.device.type == "cuda" and scaler._growth_tracker.dtype is torch.int32
