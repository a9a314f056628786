"""Who owns the device memory an op allocates: `owner_scope("Linear 0")` names what the layer's ops allocate
inside it ("Linear 0 output"), for the memory tool. Thread-local: each thread's ops are named by its own scope."""
import threading as _threading

_scope = _threading.local()


class owner_scope:
    """Name the device memory that ops allocate inside: `with owner_scope("Linear 0"):` tags the layer's
    output "Linear 0 output" (what it saves for backward is its input: the previous layer's output)."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.prev = getattr(_scope, "name", None)
        _scope.name = self.name

    def __exit__(self, *exc):
        _scope.name = self.prev
        return False


def current_owner(role):
    name = getattr(_scope, "name", None)
    return f"{name} {role}" if name else role


def owner_of(var, role):
    """The memory-tool name of a parameter (from its arena's parts) with a role: "0.weight.grad",
    "exp_avg of 0.weight". The grads (ops/cuda.py's new_grad) and the optimizers' state (optim_steps/cuda.py) are
    named by it."""
    name = None
    parts = getattr(getattr(var._buf, "block", None), "parts", None) or ()
    for off, _n, who in parts:
        if off == var._offset:
            name = who
            break
    if name is None:
        name = getattr(var._buf, "owner", None) or "tensor"
    return f"{name}.grad" if role == "grad" else f"{role} of {name}"
