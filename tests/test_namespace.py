"""The rest of the torch namespace programs touch: accelerator, backends, amp, compile, print options,
deterministic and matmul-precision switches — each with what it really does in rawdev."""
import warnings

import pytest
import rawdev as torch


def test_accelerator_follows_cuda(driver):
    assert torch.accelerator.is_available() is True
    assert torch.accelerator.current_accelerator().type == "cuda"
    assert torch.accelerator.device_count() == torch.cuda.device_count() >= 1
    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
    assert torch.ones(2, device=device).is_cuda


def test_backends_switches():
    assert torch.backends.mps.is_available() is False
    assert torch.backends.cudnn.is_available() is False
    torch.backends.cudnn.benchmark = True
    assert torch.backends.cudnn.benchmark is True
    torch.backends.cudnn.benchmark = False
    assert torch.backends.cuda.matmul.allow_tf32 is False
    torch.set_float32_matmul_precision("high")
    assert torch.backends.cuda.matmul.allow_tf32 is True and torch.get_float32_matmul_precision() == "high"
    torch.set_float32_matmul_precision("highest")
    assert torch.backends.cuda.matmul.allow_tf32 is False
    with pytest.raises(RuntimeError, match="Invalid precision"):
        torch.set_float32_matmul_precision("fast")


def test_compile_returns_the_model_and_works_as_a_decorator():
    m = torch.nn.Linear(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.compile(m) is m

        @torch.compile(mode="reduce-overhead")
        def f(x):
            return x * 2
    assert f(torch.ones(2)).tolist() == [2.0, 2.0]


def test_amp_autocasts_and_scales(driver):
    m = torch.nn.Linear(4, 2).cuda()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch.cuda.amp.GradScaler is deprecated, as in PyTorch
        scaler = torch.cuda.amp.GradScaler()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        y = m(torch.ones(3, 4, device="cuda"))
    assert y.dtype is torch.float16
    before = m.weight.detach().cpu().numpy().copy()
    scaler.scale(y.float().mean()).backward()   # sum: 65536 in the float16 gradient is inf (skipped step)
    assert m.weight.grad.dtype is torch.float32
    scaler.step(opt)
    scaler.update()
    assert (m.weight.detach().cpu().numpy() != before).any() and scaler.get_scale() == 65536.0


def test_print_options():
    t = torch.tensor([1.23456, 2.5])
    torch.set_printoptions(precision=2)
    try:
        assert repr(t) == "tensor([1.23, 2.50])"
        torch.set_printoptions(sci_mode=True)
        assert "e+00" in repr(t)
    finally:
        torch.set_printoptions(profile="default")
    assert repr(t) == "tensor([1.2346, 2.5000])"


def test_deterministic_and_default_device_switches():
    torch.use_deterministic_algorithms(True)
    assert torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(False)
    torch.set_default_device("cpu")
    assert torch.get_default_device().type == "cpu"
    with pytest.raises(NotImplementedError, match="pass device= to the constructor"):
        torch.set_default_device("cuda")


def test_grad_mode_context_managers_are_decorators_too():
    x = torch.ones(2, requires_grad=True)

    @torch.no_grad()
    def f(t):
        return t * 2

    @torch.inference_mode()
    def g(t):
        return t * 3
    assert not f(x).requires_grad and not g(x).requires_grad
    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
