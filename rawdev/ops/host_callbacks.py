"""Tensor methods that run a Python callable on each element (apply_, map_): host-only, as PyTorch's are
cpu-only."""
from ..tensor import factory
from .registry import declare


def _host_only(name):
    def check(t):
        if t.is_cuda:
            raise TypeError(f"{name} is only implemented on CPU tensors")
    return check


def apply_(self, callable):  # noqa: A002
    """Replace each element x of a cpu tensor with callable(x) (a Python loop, as PyTorch's)."""
    _host_only("apply_")(self)
    vals = [callable(v) for v in self.reshape(-1).tolist()]
    from ..autograd.grad_mode import no_grad
    with no_grad():
        self.copy_(factory.tensor(vals, dtype=self.dtype).reshape(self.shape))
    return self


def map_(self, tensor, callable):  # noqa: A002
    """self[i] = callable(self[i], tensor[i]) elementwise for cpu tensors (tensor broadcast to self)."""
    _host_only("map_")(self)
    other = tensor.expand_as(self).reshape(-1).tolist()
    vals = [callable(a, b) for a, b in zip(self.reshape(-1).tolist(), other)]
    from ..autograd.grad_mode import no_grad
    with no_grad():
        self.copy_(factory.tensor(vals, dtype=self.dtype).reshape(self.shape))
    return self


declare("apply_", apply_, family="host_callbacks", torch=False)
declare("map_", map_, family="host_callbacks", torch=False)
