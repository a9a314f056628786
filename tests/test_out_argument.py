"""The out= argument of torch.matmul and torch.mul: the result lands in out (its own storage when shapes match, so
a view of out sees it), float64 numpy references, cpu and the simulated GPU, and PyTorch's errors: autograd
refused, a dtype the result cannot cast to, another device; an out of another shape is resized with PyTorch's
warning when it held elements."""
import numpy as np
import pytest
import rawdev


def _inputs(seed, device):
    r = np.random.default_rng(seed)
    a = r.standard_normal((3, 4))
    b = r.standard_normal((4, 5))
    return a, b, rawdev.tensor(a, dtype=rawdev.float32).to(device), rawdev.tensor(b, dtype=rawdev.float32).to(device)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_matmul_and_mul_write_into_out(device, driver):
    seed = int(np.random.SeedSequence().entropy % 2**32)   # printed on failure
    a, b, ta, tb = _inputs(seed, device)
    out = rawdev.empty(3, 5, device=device)
    view = out[1]
    assert rawdev.matmul(ta, tb, out=out) is out
    ref = a @ b
    assert np.abs(out.cpu().numpy() - ref).max() / np.abs(ref).max() < 1e-5, f"seed {seed}"
    assert np.array_equal(view.cpu().numpy(), out.cpu().numpy()[1])          # out's own storage was written
    out2 = rawdev.empty(4, 3, device=device).t()                              # non-contiguous out
    assert rawdev.mul(ta, ta, out=out2) is out2
    assert np.abs(out2.cpu().numpy() - a * a).max() < 1e-5, f"seed {seed}"


def test_errors_as_pytorch():
    a = rawdev.ones(2, 2)
    with pytest.raises(RuntimeError, match=r"^mul\(\): functions with out=\.\.\. arguments don't support automatic "
                                           r"differentiation, but one of the arguments requires grad\.$"):
        rawdev.mul(rawdev.ones(2, requires_grad=True), 2.0, out=rawdev.empty(2))
    with pytest.raises(RuntimeError, match="^result type Float can't be cast to the desired output type Long$"):
        rawdev.mul(a, a, out=rawdev.zeros(2, 2, dtype=rawdev.int64))
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not list"):
        rawdev.matmul(a, a, out=[0])
    with rawdev.no_grad():   # under no_grad, inputs that require grad are fine (as PyTorch)
        w = rawdev.ones(2, requires_grad=True)
        assert np.array_equal(rawdev.mul(w, 3.0, out=rawdev.empty(2)).numpy(), [3.0, 3.0])


def test_resize_of_another_shape():
    a = rawdev.tensor([[1.0, 2.0], [3.0, 4.0]])
    empty = rawdev.empty(0)
    assert np.array_equal(rawdev.matmul(a, a, out=empty).numpy(), [[7.0, 10.0], [15.0, 22.0]])
    with pytest.warns(UserWarning, match=r"An output with one or more elements was resized since it had shape \[3\]"):
        r = rawdev.mul(a, 2, out=rawdev.zeros(3))
    assert r.shape == (2, 2) and np.array_equal(r.numpy(), [[2.0, 4.0], [6.0, 8.0]])
