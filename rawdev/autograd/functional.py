"""torch.autograd.functional.jacobian / hessian / vjp for small problems: one reverse-mode pass per output
element (grad_outputs a one-hot vector), so the cost is numel(outputs) backward passes."""
from .engine import grad as _grad
from .grad_mode import enable_grad

__all__ = ["jacobian", "hessian", "vjp"]


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
