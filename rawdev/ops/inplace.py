"""The generic in-place form of an op: x.op_(...) computes op(x, ...) and writes the result into x.

Into any layout (a view writes its base), with PyTorch's rules: the result must be castable to x's
dtype; a leaf that requires grad refuses in-place writes under grad mode; a non-leaf takes over the
result's history (x.grad_fn becomes the op's node). The op runs on a copy of x then, so a backward
that reads its input never sees the overwritten values. An op written in place into a view of a tensor
in the graph (`y = bn(x).view(...); y += r`, `h[:, 0].mul_(2)`) is PyTorch's CopySlices: the base takes over
the write of op(view) into the view's places, and the view becomes a view of the new base.
"""
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..tensor.core import Tensor

__all__ = ["apply_inplace", "check_graph_write", "check_inplace_graph", "set_view_writer"]

# op_(view) for a view of a tensor in the graph: rawdev.ops.copy_slices sets it when it loads (it records the
# write on the base with autograd Functions, which this module, imported by the op registry, must not import)
_view_writer = None


def set_view_writer(fn):
    global _view_writer
    _view_writer = fn


def _can_cast(src, dst):
    if src is dst:
        return True
    if dst.is_floating_point:
        return True
    return not src.is_floating_point and (dst.name != "bool" or src.name == "bool")


def check_graph_write(self, value):
    """PyTorch's error for an indexed write into a leaf that requires grad; rawdev's for writes that would need
    CopySlices in the graph."""
    if is_grad_enabled() and (self.requires_grad or isinstance(value, Tensor) and value.requires_grad):
        if self.requires_grad and self.grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        raise NotImplementedError("rawdev's autograd does not record indexed writes (CopySlices): assigning into "
                                  "a tensor that is part of a graph, or a value that requires grad, needs "
                                  "torch.no_grad() or an out-of-place formulation")


def check_inplace_graph(x, others=(), *, through_views=False):
    """Raise PyTorch's errors for an in-place write into x under grad mode; True when the write must be
    recorded in the graph. A view of a tensor in the graph is recorded (True) only for callers that write
    through the base (through_views: apply_inplace); the others refuse it."""
    if not is_grad_enabled():
        return False
    needs = x.requires_grad or any(isinstance(o, Tensor) and o.requires_grad for o in others)
    if not needs:
        return False
    if x.requires_grad and x.grad_fn is None:
        raise RuntimeError(("a view of " if x._base is not None else "") + "a leaf Variable that requires grad is "
                           "being used in an in-place operation.")
    if x._base is not None:
        base = x._base
        if base.requires_grad and base.grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
        if through_views:
            return True
        raise NotImplementedError("rawdev's autograd does not record in-place writes into views of tensors in the "
                                  "graph (PyTorch's CopySlices): write out of place, or under torch.no_grad()")
    return True


def apply_inplace(x, fn, name, args, kwargs):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}")
    from .overlap import assert_no_internal_overlap
    assert_no_internal_overlap(x)   # F.relu(x, inplace=True) and friends come here, not through x.relu_()
    if check_inplace_graph(x, args, through_views=True):
        if x._base is not None:
            if _view_writer is None:
                raise NotImplementedError("rawdev's autograd records in-place ops on views of tensors in the graph "
                                          "through rawdev.ops.copy_slices, which is not loaded")
            return _view_writer(x, fn, args, kwargs)
        out = fn(x.clone(), *args, **kwargs)
        if not _can_cast(out.dtype, x.dtype):
            raise RuntimeError(f"result type {out.dtype._legacy[:-6]} can't be cast to the desired output type "
                               f"{x.dtype._legacy[:-6]}")
        with no_grad():
            x._write(out)
        x.grad_fn, x._requires_grad = out.grad_fn, True
        x.__dict__["_output_nr"] = out.__dict__.get("_output_nr", 0)
        return x
    with no_grad():
        out = fn(x, *args, **kwargs)
        if not _can_cast(out.dtype, x.dtype):
            raise RuntimeError(f"result type {out.dtype._legacy[:-6]} can't be cast to the desired output type "
                               f"{x.dtype._legacy[:-6]}")
        x._write(out)
    return x
