"""An op written in place into a view of a tensor in the graph is PyTorch's CopySlices: `h[:, 0].mul_(3)`,
`y.view(12)[2:5].add_(v)`, and the residual `out += identity` of a ResNet block whose `out` is a view — gradients
equal the out-of-place formulation's (float64 references), on cpu and cuda."""
import numpy as np
import pytest
import rawdev

from _refs import rng


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_scaling_a_column_view_in_place(driver, device):
    w64 = rng().standard_normal((3, 4))
    w = rawdev.tensor(w64, dtype=rawdev.float32, device=device, requires_grad=True)
    h = w * 1.5
    h[:, 0].mul_(3)
    assert h.grad_fn is not None and h[:, 0]._base is h
    (h * h).sum().backward()
    scale = np.full((3, 4), 1.5)
    scale[:, 0] *= 3
    np.testing.assert_allclose(w.grad.cpu().numpy(), 2 * scale * scale * w64, rtol=1e-5)
    np.testing.assert_allclose(h.detach().cpu().numpy(), scale * w64, rtol=1e-6)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_adding_a_graph_value_into_a_flat_view(driver, device):
    g = rng()
    w64, v64 = g.standard_normal((3, 4)) * 0.3, g.standard_normal(3) * 0.3
    w = rawdev.tensor(w64, dtype=rawdev.float32, device=device, requires_grad=True)
    v = rawdev.tensor(v64, dtype=rawdev.float32, device=device, requires_grad=True)
    flat = (w * 2).view(12)
    flat[2:5].add_(v * 5)
    flat.exp().sum().backward()
    h = (2 * w64).reshape(12)
    h[2:5] += 5 * v64
    np.testing.assert_allclose(w.grad.cpu().numpy(), (2 * np.exp(h)).reshape(3, 4), rtol=1e-5)
    np.testing.assert_allclose(v.grad.cpu().numpy(), 5 * np.exp(h[2:5]), rtol=1e-5)


class _Block(rawdev.nn.Module):
    """A ResNet BasicBlock as torchvision writes it: the residual added in place."""

    def __init__(self):
        super().__init__()
        nn = rawdev.nn
        self.c1, self.b1 = nn.Conv2d(3, 3, 3, padding=1, bias=False), nn.BatchNorm2d(3)
        self.c2, self.b2 = nn.Conv2d(3, 3, 3, padding=1, bias=False), nn.BatchNorm2d(3)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x, in_place=True):
        identity = x
        out = self.relu(self.b1(self.c1(x)))
        out = self.b2(self.c2(out))
        if in_place:
            out += identity
        else:
            out = out + identity
        return self.relu(out)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_resnet_block_residual_in_place_equals_out_of_place(driver, device):
    rawdev.manual_seed(0)
    block = _Block().to(device)
    x = rawdev.tensor(rng().standard_normal((2, 3, 5, 5)).astype(np.float32), device=device, requires_grad=True)
    grads = []
    for in_place in (True, False):
        block.zero_grad(set_to_none=True)
        x.grad = None
        block(x, in_place=in_place).square().sum().backward()
        grads.append([x.grad.cpu().numpy()] + [p.grad.cpu().numpy() for p in block.parameters()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_views_of_leaves_and_advanced_writes_keep_their_errors():
    leaf = rawdev.ones(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        leaf[:, 0].mul_(2)
    h = leaf * 1.0
    with pytest.raises(NotImplementedError, match="CopySlices"):
        h[:, 0][rawdev.tensor([0, 1])] = rawdev.ones(2, requires_grad=True)   # advanced index into a view


def test_other_views_of_a_rewritten_base_replay_their_history():
    # PyTorch's view replay: `flat` was made before the write through `flat[1:3]`; its gradient must see the write
    w = rawdev.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    v = rawdev.tensor([10.0, 20.0], requires_grad=True)
    base = w * 1.0
    flat = base.view(2, 2)
    base[1:3].mul_(v)
    flat.backward(rawdev.ones(2, 2))          # a stale view as the root of backward
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 10.0, 20.0, 1.0])
    np.testing.assert_array_equal(v.grad.numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(flat.detach().numpy(), [[1.0, 20.0], [60.0, 4.0]])
