"""One FSDP unit's flat parameter: the parameters it manages (those of its module not inside a nested unit or an
ignored module), flattened into one 1-D tensor padded to a multiple of the world size, of which each rank keeps
its own contiguous shard; and the autograd Function that gathers the full flat parameter in forward and
reduce-scatters its gradient in backward."""
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...nn import Parameter
from ...ops.join import cat
from .. import collectives as C


class ParamInfo:
    """One original parameter of a unit: its name inside the unit, where it lives (every (module, attribute) that
    shares it), its shape and its place [offset, offset + numel) in the flat parameter."""
    __slots__ = ("fqn", "owners", "shape", "numel", "offset", "requires_grad")

    def __init__(self, fqn, owners, shape, numel, offset, requires_grad):
        self.fqn, self.owners, self.shape, self.numel, self.offset = fqn, owners, shape, numel, offset
        self.requires_grad = requires_grad


def collect(root, is_unit, ignored_modules, ignored_params):
    """The parameters `root` manages, in named_parameters order (a parameter shared by several modules once,
    with every owner): a list of (fqn, [(module, name), ...], param)."""
    found, by_id = [], {}

    def visit(prefix, mod):
        for name, p in mod._parameters.items():
            if p is None or id(p) in ignored_params:
                continue
            if id(p) in by_id:
                by_id[id(p)][1].append((mod, name))
                continue
            entry = (prefix + name, [(mod, name)], p)
            by_id[id(p)] = entry
            found.append(entry)
        for cname, child in mod._modules.items():
            if child is None or is_unit(child) or id(child) in ignored_modules:
                continue
            visit(prefix + cname + ".", child)

    visit("", root)
    return found


def flatten(entries, world):
    """(the padded full flat tensor, [ParamInfo]) of the collected parameters; every one must share dtype and
    requires_grad (the flat parameter has one of each)."""
    dtypes = {p.dtype for _, _, p in entries}
    if len(dtypes) > 1:
        raise ValueError(f"Must flatten tensors with uniform dtype but got {sorted(str(d) for d in dtypes)}")
    if len({p.requires_grad for _, _, p in entries}) > 1:
        raise ValueError("Must flatten tensors with uniform requires_grad when use_orig_params=False")
    infos, off = [], 0
    for fqn, owners, p in entries:
        infos.append(ParamInfo(fqn, owners, tuple(p.shape), p.numel(), off, p.requires_grad))
        off += p.numel()
    total = off
    padded = -(-total // world) * world
    with no_grad():
        parts = [p.detach().reshape(-1) for _, _, p in entries]
        if padded > total:
            parts.append(parts[0].new_zeros(padded - total))
        full = cat(parts)
    return full, infos, total


def make_flat_param(shard, requires_grad):
    """The persistent flat parameter (this rank's shard), marked as FSDP's so wrap policies skip it."""
    flat = Parameter(shard, requires_grad=requires_grad)
    flat._fsdp_flattened = True
    flat._is_flat_param = True
    return flat


def all_gather_flat(shard, world, group):
    """The full (padded) flat tensor: every rank's shard, in rank order."""
    if world == 1:
        return shard.clone()
    out = shard.new_empty(shard.numel() * world)
    C.all_gather_into_tensor(out, shard.contiguous(), group=group)
    return out


class Unshard(Function):
    """flat shard -> the full flat parameter (gathered, cast to the compute dtype); backward hands the full
    gradient to the unit, which reduces it to this rank's shard gradient."""

    @staticmethod
    def forward(ctx, flat, unit):
        ctx.unit = unit
        return unit._gather(flat.detach(), for_compute=True)

    @staticmethod
    def backward(ctx, grad):
        return ctx.unit._reduce_grad(grad), None
