"""One fully_shard parameter: the all-gather of its Shard(0) local tensor into the full (plain) tensor the
forward computes with, and, in backward, the reduce-scatter (averaged over the mesh) of the full gradient back
into the local shard's gradient. A dim-0 length the mesh does not divide is chunked as torch.chunk does: each
rank's chunk is zero-padded to the common chunk length for the collectives and trimmed after."""
from ....autograd.function import Function
from ....autograd.grad_mode import no_grad
from ....ops.join import cat
from ... import collectives as C


def _padded(local, rows):
    if local.shape[0] == rows:
        return local.contiguous()
    pad = local.new_zeros((rows - local.shape[0],) + tuple(local.shape[1:]))
    return cat([local, pad]) if local.shape[0] else pad


class ShardedParam:
    """Where one managed parameter lives and how its shard maps into the full tensor."""
    __slots__ = ("module", "name", "dparam", "shape", "rows", "start", "state")

    def __init__(self, module, name, dparam, start, rows, state):
        self.module, self.name, self.dparam = module, name, dparam
        self.shape, self.start, self.rows, self.state = tuple(dparam.shape), start, rows, state


class AllGather(Function):
    """local shard -> full tensor (cast to the compute dtype); backward: the averaged gradient's local shard."""

    @staticmethod
    def forward(ctx, local, sp):
        ctx.sp = sp
        st = sp.state
        src = local.detach()
        if st.param_dtype is not None and src.dtype != st.param_dtype:
            src = src.to(st.param_dtype)
        world = st.world
        if world == 1:
            return src.clone()
        with no_grad():
            buf = _padded(src, sp.rows)
            out = buf.new_empty((sp.rows * world,) + tuple(buf.shape[1:]))
            C.all_gather_into_tensor(out, buf, group=st.group)
        return out[: sp.shape[0]].contiguous()

    @staticmethod
    def backward(ctx, grad):
        return ctx.sp.state.reduce_grad(ctx.sp, grad), None
