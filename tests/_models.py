"""Test-local modules (nn.Linear and friends belong to the ops layer; these only hold Parameters)."""
import numpy as np
from rawdev import dtypes
from rawdev.nn import Module, Parameter, Sequential
from rawdev.tensor import ones, randn, zeros


class Lin(Module):
    def __init__(self, fan_in, fan_out, bias=True):
        super().__init__()
        self.in_features, self.out_features = fan_in, fan_out
        self.weight = Parameter(randn(fan_out, fan_in))
        if bias:
            self.bias = Parameter(randn(fan_out))
        else:
            self.register_parameter("bias", None)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"

    def forward(self, x):
        return x


class Act(Module):
    def forward(self, x):
        return x


class BN(Module):
    """BatchNorm-shaped: affine parameters, running stats (persistent) and a non-persistent scratch buffer."""

    def __init__(self, n):
        super().__init__()
        self.weight = Parameter(ones(n))
        self.bias = Parameter(zeros(n))
        self.register_buffer("running_mean", randn(n))
        self.register_buffer("running_var", ones(n))
        self.register_buffer("num_batches_tracked", zeros((), dtype=dtypes.int64))
        self.register_buffer("scratch", randn(n), persistent=False)


def mlp(sizes=(16, 32, 32, 4)):
    """A 3-layer MLP: 6 tensors."""
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        if i:
            layers.append(Act())
        layers.append(Lin(a, b))
    return Sequential(*layers)


def snapshot(module):
    """name -> (device, dtype, bytes) of every parameter, buffer and grad: 'bit-identical' means equal."""
    out = {}
    for name, t in list(module.named_parameters()) + list(module.named_buffers()):
        out[name] = (str(t.device), t.dtype.name, t._storage_copy().tobytes())
    for name, p in module.named_parameters():
        if p.grad is not None:
            out[name + ".grad"] = (str(p.grad.device), p.grad.dtype.name, p.grad._storage_copy().tobytes())
    return out


def rand_np(*shape):
    return np.random.default_rng().standard_normal(shape).astype(np.float32)
