"""PyTorch's CopySlices: an in-place write into some places of a tensor in the graph, recorded out of place.

SlicePut is the write (x with value at a region of its layout) and its backward; replay_as_strided re-derives a
view from its base's current history (the view replay that follows a write through another view of the base).
indexing (x[idx] = v) and the generic in-place ops on views (rawdev/ops/inplace.py) use both.
"""
from ..autograd.function import Function, mark_rewritten
from . import inplace
from .shape import make_view, reshape

__all__ = ["SlicePut", "replay_as_strided", "write_op_through_view"]


class SlicePut(Function):
    """x with value written at a basic index (ints, slices, None, ...), out of place: PyTorch's CopySlices.
    The written places take no gradient back to x; value gets the gradient at its places, summed over the
    dims it was broadcast along."""
    node_name = "CopySlices"

    @staticmethod
    def forward(ctx, x, value, region):
        # region(t): the (shape, strides, offset) written, for t laid out as x's contiguous copy
        ctx.region, ctx.vshape = region, tuple(value.shape)
        out = x._contiguous_copy("indexed write output")
        make_view(out, region(out))._write(value)
        return out

    @staticmethod
    def backward(ctx, g):
        from ..autograd.grad_mode import no_grad
        from .shape import sum_to
        with no_grad():
            gx = None
            g = g if g.is_contiguous() and g.storage_offset() == 0 else g._contiguous_copy("indexed write grad")
            if ctx.needs_input_grad[0]:
                gx = g._contiguous_copy("indexed write grad")
                make_view(gx, ctx.region(gx)).fill_(0)
            gv = None
            if ctx.needs_input_grad[1]:
                sel = make_view(g, ctx.region(g))
                lead = len(ctx.vshape) - sel.ndim
                sel = reshape(sel, (1,) * lead + tuple(sel.shape)) if lead > 0 else sel
                gv = sum_to(sel, ctx.vshape).contiguous()
        return gx, gv, None



def replay_as_strided(base, view):
    """A view of base with view's sizes, strides and offset, recorded from base's current history."""
    from .slice_views import as_strided
    return as_strided(base, tuple(view.shape), tuple(view.stride()), view.storage_offset())


def write_op_through_view(x, fn, args, kwargs):
    """op_(view) for a view of a tensor in the graph: compute op(view) out of place (its history runs through
    the view into the base's old history), write it into the base's copy at the view's places (CopySlices: those
    places take no gradient back to the old base), and make x a view of the new base again."""
    from .inplace import _can_cast, apply_inplace
    from .slice_views import as_strided
    base = x._base
    if not (base.is_contiguous() and base.storage_offset() == 0):
        raise NotImplementedError("rawdev records an in-place op on a view of a tensor in the graph (PyTorch's "
                                  "CopySlices) when the viewed tensor is contiguous; write out of place, or under "
                                  "torch.no_grad()")
    out = fn(x.clone(), *args, **kwargs)
    if not _can_cast(out.dtype, x.dtype):
        raise RuntimeError(f"result type {out.dtype._legacy[:-6]} can't be cast to the desired output type "
                           f"{x.dtype._legacy[:-6]}")
    region = (tuple(x.shape), tuple(x.stride()), x.storage_offset())
    apply_inplace(base, lambda b, val: SlicePut.apply(b, val, lambda t: region), "copy_", (out,), {})
    fresh = as_strided(base, region[0], region[1], region[2])
    x.grad_fn, x._requires_grad = fresh.grad_fn, True
    x.__dict__["_output_nr"] = 0
    mark_rewritten(base, x, replay_as_strided)
    return x


inplace.set_view_writer(write_op_through_view)
