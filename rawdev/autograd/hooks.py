"""Hook handles and tensor hooks (PyTorch's torch.utils.hooks.RemovableHandle, Tensor.register_hook,
Tensor.register_post_accumulate_grad_hook).

A tensor hook lives on the graph node the tensor's gradient arrives at: its grad_fn (for the output it is)
or, for a leaf, its AccumulateGrad. The engine runs a node's tensor hooks on the incoming gradient before
anything reads it (retain_grad, autograd.grad's capture, the node's backward, the leaf's accumulation);
a hook that returns a tensor replaces the gradient.
"""
import weakref
from collections import OrderedDict

__all__ = ["RemovableHandle", "register_hook", "register_post_accumulate_grad_hook"]


def _ref(d):
    try:
        return weakref.ref(d)
    except TypeError:          # a plain dict cannot be weakly referenced
        return lambda: d


class RemovableHandle:
    """A handle which provides the capability to remove a hook (also a context manager that removes it)."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = _ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if extra_dict is None:
            extra_dict = ()
        elif not isinstance(extra_dict, (list, tuple)):
            extra_dict = (extra_dict,)
        self.extra_dict_ref = tuple(_ref(d) for d in extra_dict)

    def remove(self):
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra = ref()
            if extra is not None and self.id in extra:
                del extra[self.id]

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id)

    def __setstate__(self, state):
        self.hooks_dict_ref = _ref(OrderedDict() if state[0] is None else state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_hook(tensor, hook):
    """Tensor.register_hook(hook): hook(grad) -> None or a replacement gradient, each time the tensor's
    gradient is computed (leaf or not). Returns a handle with .remove()."""
    from .function import _edge
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if tensor.grad_fn is not None:
        node, nr = tensor.grad_fn, tensor.__dict__.get("_output_nr", 0)
    else:
        node, nr = _edge(tensor)
    hooks = node._hooks_for(nr)
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def register_post_accumulate_grad_hook(tensor, hook):
    """hook(tensor) after the leaf's .grad was accumulated (by backward, not by autograd.grad)."""
    from .function import _edge
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if tensor.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    node = _edge(tensor)[0]
    if node._post_hooks is None:
        node._post_hooks = OrderedDict()
    handle = RemovableHandle(node._post_hooks)
    node._post_hooks[handle.id] = hook
    return handle
