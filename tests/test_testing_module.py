"""rawdev.testing.assert_close / make_tensor: PyTorch's tolerances, checks and failure messages."""
import re

import numpy as np
import pytest
import rawdev
from rawdev.testing import assert_close, make_tensor


def test_close_within_default_tolerances_passes():
    x = rawdev.tensor(np.random.default_rng().standard_normal(50), dtype=rawdev.float32)
    assert_close(x, x * (1 + 1e-7))
    assert_close([x, {"a": x}], [x.clone(), {"a": x.clone()}])
    assert_close(rawdev.tensor([float("nan")]), rawdev.tensor([float("nan")]), equal_nan=True)
    assert_close(rawdev.tensor([float("inf"), 1.0]), rawdev.tensor([float("inf"), 1.0]))
    assert_close(1.0, 1.0 + 1e-9)
    assert_close(rawdev.tensor([1.0]), rawdev.tensor([1.0], dtype=rawdev.float64), check_dtype=False)


@pytest.mark.parametrize("actual,expected,pattern", [
    (rawdev.tensor([1.0, 2.0, 3.0]), rawdev.tensor([1.0, 2.5, 3.0]),
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
     "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.2 at index (1,) (up to 1.3e-06 allowed)"),
    (rawdev.tensor([1, 2]), rawdev.tensor([1, 3]),
     "Tensor-likes are not equal!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 1 at index (1,)\n"),
    (rawdev.tensor([1.0]), rawdev.tensor([1.0], dtype=rawdev.float64),
     "The values for attribute 'dtype' do not match: rawdev.float32 != rawdev.float64."),
    (rawdev.zeros(2), rawdev.zeros(3), "The values for attribute 'shape' do not match"),
    (1.0, 1.1, "Scalars are not close!\n\nExpected 1.1 but got 1.0."),
    (rawdev.tensor([float("nan")]), rawdev.tensor([float("nan")]), "Tensor-likes are not close!"),
])
def test_failures_say_what_pytorch_says(actual, expected, pattern):
    with pytest.raises(AssertionError) as e:
        assert_close(actual, expected)
    assert str(e.value).startswith(pattern) or re.match(re.escape(pattern), str(e.value))


def test_device_mismatch_and_custom_message(driver):
    with pytest.raises(AssertionError, match="attribute 'device' do not match: cuda:0 != cpu"):
        assert_close(rawdev.ones(2).cuda(), rawdev.ones(2))
    assert_close(rawdev.ones(2).cuda(), rawdev.ones(2), check_device=False)
    with pytest.raises(AssertionError, match="^mine$"):
        assert_close(rawdev.ones(2), rawdev.zeros(2), msg="mine")
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
        assert_close(rawdev.ones(1), rawdev.ones(1), rtol=1e-3)


def test_make_tensor(driver):
    rawdev.manual_seed(3)
    a = make_tensor(4, 5, dtype=rawdev.float32, device="cuda", low=-2, high=2, noncontiguous=True)
    assert a.is_cuda and not a.is_contiguous() and tuple(a.shape) == (4, 5)
    v = a.cpu().numpy()
    assert (v >= -2).all() and (v < 2).all() and v.std() > 0.5
    i = make_tensor((3, 3), dtype=rawdev.int64, device="cpu", exclude_zero=True)
    assert i.dtype is rawdev.int64 and (i.numpy() != 0).all()
    rawdev.manual_seed(3)
    assert make_tensor(4, 5, dtype=rawdev.float32, device="cpu", low=-2, high=2).tolist() == a.cpu().tolist()
    assert make_tensor(2, dtype=rawdev.float64, device="cpu", requires_grad=True).requires_grad
