"""In-place view ops (t_, transpose_, squeeze_, unsqueeze_), get_device, H/mH, pin_memory/is_pinned."""
import numpy as np
import pytest
import rawdev


def test_in_place_views_and_their_gradient(driver):
    for dev in ("cpu", "cuda"):
        c = rawdev.arange(6.0, device=dev).reshape(2, 1, 3)
        storage = c.data_ptr()
        c.squeeze_()
        assert tuple(c.shape) == (2, 3)
        c.unsqueeze_(0)
        assert tuple(c.shape) == (1, 2, 3)
        c.transpose_(1, 2)
        assert tuple(c.shape) == (1, 3, 2) and not c.is_contiguous() and c.data_ptr() == storage
        np.testing.assert_array_equal(c.cpu().numpy(), np.arange(6.0).reshape(1, 2, 3).transpose(0, 2, 1))
        b = rawdev.ones(2, 3, device=dev, requires_grad=True)
        y = b * rawdev.arange(6.0, device=dev).reshape(2, 3)
        y.t_()
        assert tuple(y.shape) == (3, 2) and y.grad_fn is not None
        (y * rawdev.tensor([[1.0, 10.0]] * 3, device=dev)).sum().backward()
        np.testing.assert_array_equal(b.grad.cpu().numpy(), np.arange(6.0).reshape(2, 3) * [[1.0], [10.0]])
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            b.t_()
        assert rawdev.ones(2, device=dev).get_device() == (0 if dev == "cuda" else -1)
    x = rawdev.ones(2, 3)
    assert tuple(x.H.shape) == (3, 2) and tuple(x.mH.shape) == (3, 2)


def test_pin_memory(driver):
    t = rawdev.arange(6.0).reshape(2, 3).t()
    assert not t.is_pinned()
    p = t.pin_memory()
    assert p.is_pinned() and p.tolist() == t.tolist() and not t.is_pinned()
    assert p.cuda(non_blocking=True).cpu().tolist() == t.tolist()
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        rawdev.ones(2, device="cuda").pin_memory()
