"""torch.autograd.functional.jacobian / hessian / vjp / jvp / vhp / hvp for small problems: one reverse-mode
pass per output element (grad_outputs a one-hot vector), so the cost is numel(outputs) backward passes. jvp
uses the double-vjp trick (J·v is the gradient of uᵀJ·v with respect to u), hvp and vhp a gradient of a
gradient — rawdev has no forward-mode autograd."""
from .engine import grad as _grad
from .grad_mode import enable_grad

__all__ = ["jacobian", "hessian", "vjp", "jvp", "vhp", "hvp"]


def _as_tuple(x):
    return (x, True) if isinstance(x, tuple) else ((x,), False)


def _prep(inputs, create_graph):
    # keep the caller's graph only when a differentiable result was asked for
    return tuple(x.view_as(x) if create_graph and x.requires_grad else x.detach().requires_grad_(True)
                 for x in inputs)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at inputs: for output i and input j a tensor of shape out_i.shape + in_j.shape
    (a Tensor, a tuple over inputs, or a tuple over outputs of those, mirroring the arguments)."""
    from ..ops import dispatch
    from ..tensor.factory import zeros
    if strategy != "reverse-mode":
        raise NotImplementedError("rawdev's jacobian supports strategy='reverse-mode' only")
    with enable_grad():
        inputs, in_tuple = _as_tuple(inputs)
        inputs = _prep(inputs, create_graph)
        outputs, out_tuple = _as_tuple(func(*inputs))
        jac = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            n = out.numel()
            for k in range(n):
                onehot = zeros(n, dtype=out.dtype, device=out.device)
                onehot[k] = 1
                if out.requires_grad:
                    gs = _grad(out, inputs, onehot.reshape(out.shape), retain_graph=True, create_graph=create_graph,
                               allow_unused=True)
                else:
                    gs = (None,) * len(inputs)
                for j, (g, x) in enumerate(zip(gs, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of input "
                                               f"{j}. This is not allowed in strict mode.")
                        g = dispatch.zeros_like(x)
                    rows[j].append(g)
            per_in = []
            for j, x in enumerate(inputs):
                if rows[j]:
                    from ..ops.join import stack
                    per_in.append(stack(rows[j]).reshape(tuple(out.shape) + tuple(x.shape)))
                else:
                    per_in.append(zeros(tuple(out.shape) + tuple(x.shape), dtype=x.dtype, device=x.device))
            if not create_graph:
                per_in = [t.detach() for t in per_in]
            jac.append(tuple(per_in) if in_tuple else per_in[0])
    return tuple(jac) if out_tuple else jac[0]


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar func: the jacobian of its gradient."""
    inputs_t, in_tuple = _as_tuple(inputs)

    def scalar(*inp):
        out = func(*inp)
        out_t, is_tuple = _as_tuple(out)
        if is_tuple or out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor with a single element")
        return out.reshape(())

    def jac_func(*inp):
        j = jacobian(scalar, inp if in_tuple else inp[0], create_graph=True, strict=strict)
        return j

    res = jacobian(jac_func, inputs_t if in_tuple else inputs_t[0], create_graph=create_graph, strict=strict)
    return res


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T · J)."""
    with enable_grad():
        inputs_t, in_tuple = _as_tuple(inputs)
        inputs_t = _prep(inputs_t, create_graph)
        out = func(*inputs_t)
        gs = _grad(out, inputs_t, v, retain_graph=True, create_graph=create_graph, allow_unused=True)
        from ..ops import dispatch
        gs = tuple(dispatch.zeros_like(x) if g is None else (g if create_graph else g.detach())
                   for g, x in zip(gs, inputs_t))
        out = out if create_graph else out.detach()
    return out, (gs if in_tuple else gs[0])


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J · v) by differentiating a vector-Jacobian product with respect to its vector.

    Example:
        >>> torch.autograd.functional.jvp(lambda x: x ** 2, torch.tensor([1., 2.]), torch.tensor([1., 1.]))
        (tensor([1., 4.]), tensor([2., 4.]))
    """
    from ..ops import dispatch
    with enable_grad():
        inputs_t, in_tuple = _as_tuple(inputs)
        inputs_t = _prep(inputs_t, True)
        vs = _as_tuple(v)[0] if v is not None else tuple(dispatch.ones_like(x) for x in inputs_t)
        out = func(*inputs_t)
        outs, out_tuple = _as_tuple(out)
        us = tuple(dispatch.zeros_like(o).requires_grad_(True) for o in outs)
        gs = _grad(outs, inputs_t, us, create_graph=True, allow_unused=True)
        pairs = [(g, w) for g, w in zip(gs, vs) if g is not None]
        if not pairs:
            jv = tuple(dispatch.zeros_like(o) for o in outs)
        else:
            total = sum((g * w).sum() for g, w in pairs)
            jv = _grad(total, us, allow_unused=True, create_graph=create_graph)
            jv = tuple(dispatch.zeros_like(o) if j is None else j for j, o in zip(jv, outs))
        if not create_graph:
            outs = tuple(o.detach() for o in outs)
            jv = tuple(j.detach() for j in jv)
    return (outs if out_tuple else outs[0]), (jv if out_tuple else jv[0])


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), vᵀ · H) for a scalar func (H symmetric, so the same as hvp)."""
    from ..ops import dispatch
    with enable_grad():
        inputs_t, in_tuple = _as_tuple(inputs)
        inputs_t = _prep(inputs_t, True)
        out = func(*inputs_t)
        if out.numel() != 1:
            raise RuntimeError("The function given to hvp should return a single Tensor with a single element")
        gs = _grad(out, inputs_t, create_graph=True, allow_unused=True)
        vs = _as_tuple(v)[0] if v is not None else tuple(dispatch.ones_like(x) for x in inputs_t)
        pairs = [(g, w) for g, w in zip(gs, vs) if g is not None]
        if pairs:
            total = sum((g * w).sum() for g, w in pairs)
            hv = _grad(total, inputs_t, allow_unused=True, create_graph=create_graph)
        else:
            hv = (None,) * len(inputs_t)
        hv = tuple(dispatch.zeros_like(x) if h is None else (h if create_graph else h.detach())
                   for h, x in zip(hv, inputs_t))
        out = out if create_graph else out.detach()
    return out, (hv if in_tuple else hv[0])


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H · v) for a scalar func.

    Example:
        >>> torch.autograd.functional.hvp(lambda x: (x ** 3).sum(), torch.tensor([1., 2.]), torch.ones(2))[1]
        tensor([ 6., 12.])
    """
    return vhp(func, inputs, v, create_graph, strict)
