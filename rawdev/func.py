"""rawdev.func: torch.func's grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian, vmap and
functional_call, over rawdev's tape autograd (jvp through rawdev.autograd.forward_ad's double-vjp).

grad/jacrev/hessian differentiate by building the graph of one call and walking it back (create_graph=True, so
they compose: grad(grad(f)) and vmap(grad(f)) work). vmap runs the function once per slice of the mapped
dimension and stacks the results — the same values as PyTorch's batching rules, at one call per example instead
of one batched call; functions that draw random numbers get a fresh draw per slice (PyTorch's
randomness="different"). functional_call swaps a module's parameters and buffers for the given tensors for the
duration of one call.
"""
import contextlib

from .autograd import functional as _functional
from .autograd.engine import grad as _autograd_grad
from .autograd.grad_mode import enable_grad
from .tensor.core import Tensor

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian", "vmap",
           "functional_call", "stack_module_state"]


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _prep(x):
    """A differentiable stand-in for x (a tensor, or a dict/list/tuple of them): a leaf copy, or x itself inside
    an enclosing transform's graph."""
    if isinstance(x, Tensor):
        return x if x.requires_grad else x.detach().requires_grad_(True)
    return _map(_prep, x)


def _tracked(args):
    """Whether any input tensor is part of a graph (an enclosing transform, or a caller's requires_grad)."""
    return any(t.requires_grad for a in args for t in _leaves(a))


def _map(fn, tree):
    if isinstance(tree, dict):
        return {k: _map(fn, v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_map(fn, v) for v in tree)
    return fn(tree) if isinstance(tree, Tensor) else tree


def _leaves(tree):
    if isinstance(tree, dict):
        return [x for v in tree.values() for x in _leaves(v)]
    if isinstance(tree, (list, tuple)):
        return [x for v in tree for x in _leaves(v)]
    return [tree] if isinstance(tree, Tensor) else []


def _rebuild(tree, values):
    it = iter(values)
    return _map(lambda _: next(it), tree)


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (d func / d args[argnums], func(*args)); func must return a scalar tensor (or
    (scalar, aux) with has_aux=True, then ((grad, value), aux)... as torch.func: (grad, (value, aux))).

    Example:
        >>> g, v = torch.func.grad_and_value(lambda x: (x ** 2).sum())(torch.tensor([1., 2.]))
        >>> g
        tensor([2., 4.])
    """
    def wrapper(*args, **kwargs):
        nums = _tuple(argnums)
        outer = _tracked(args)                 # inside another transform: keep the graph for it
        with enable_grad():
            args = list(args)
            for i in nums:
                args[i] = _prep(args[i])
            out = func(*args, **kwargs)
            value, aux = (out if has_aux else (out, None))
            if not isinstance(value, Tensor) or value.numel() != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {value.ndim if isinstance(value, Tensor) else '?'} dims")
            leaves = [x for i in nums for x in _leaves(args[i])]
            flat = _autograd_grad(value, leaves, create_graph=True, allow_unused=True)
            from .ops import dispatch
            flat = [dispatch.zeros_like(x) if g is None else g for g, x in zip(flat, leaves)]
            gs, k = [], 0
            for i in nums:
                n = len(_leaves(args[i]))
                gs.append(_rebuild(args[i], flat[k:k + n]))
                k += n
            gs = tuple(gs)
        if not outer:
            gs, value = _map(lambda t: t.detach(), gs), value.detach()
        g = gs if isinstance(argnums, tuple) else gs[0]
        return (g, (value, aux)) if has_aux else (g, value)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning d func / d args[argnums] (func returns a scalar tensor).

    Example:
        >>> torch.func.grad(torch.sin)(torch.tensor(0.))
        tensor(1.)
    """
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, rest = gv(*args, **kwargs)
        return (g, rest[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn) with vjp_fn(cotangent) -> the vector-Jacobian products for each primal."""
    with enable_grad():
        ins = tuple(_prep(p) for p in primals)
        out = func(*ins)
        value, aux = (out if has_aux else (out, None))

    def vjp_fn(*cotangents):
        with enable_grad():
            gs = _autograd_grad(_tuple(value), ins, _tuple(cotangents[0] if len(cotangents) == 1 else cotangents),
                                retain_graph=True, create_graph=True, allow_unused=True)
        from .ops import dispatch
        return tuple(dispatch.zeros_like(x) if g is None else g for g, x in zip(gs, ins))
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J·tangents): forward-mode's result, computed as rawdev.autograd.forward_ad does (by
    differentiating a vector-Jacobian product with respect to its vector).

    Example:
        >>> torch.func.jvp(torch.sin, (torch.tensor([1., 2.]),), (torch.tensor([1., 1.]),))
        (tensor([0.8415, 0.9093]), tensor([ 0.5403, -0.4161]))
    """
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples")
    if len(primals) != len(tangents):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same length")
    from .autograd import forward_ad as fwAD
    with fwAD.dual_level(), enable_grad():
        duals = tuple(fwAD.make_dual(p, t) for p, t in zip(primals, tangents))
        out = func(*duals)
        value, aux = (out if has_aux else (out, None))
        unpacked = [fwAD.unpack_dual(o) for o in _tuple(value)]
    from .ops import dispatch
    prim = tuple(u.primal for u in unpacked)
    tang = tuple(dispatch.zeros_like(u.primal) if u.tangent is None else u.tangent for u in unpacked)
    if not isinstance(value, tuple):
        prim, tang = prim[0], tang[0]
    return (prim, tang, aux) if has_aux else (prim, tang)


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents) gives J·tangents at these primals."""
    value = func(*primals)
    return (value.detach() if isinstance(value, Tensor) else value), \
        (lambda *tangents: jvp(func, primals, tangents)[1])


def jacrev(func, argnums=0, has_aux=False):
    """A function returning the Jacobian of func with respect to args[argnums] (reverse mode: one backward pass
    per output element)."""
    if has_aux:
        raise NotImplementedError("rawdev's jacrev does not take has_aux")

    def wrapper(*args):
        nums = _tuple(argnums)

        def partial(*xs):
            full = list(args)
            for i, x in zip(nums, xs):
                full[i] = x
            return func(*full)
        sel = tuple(args[i] for i in nums)
        jac = _functional.jacobian(partial, sel if isinstance(argnums, tuple) else sel[0], create_graph=True)
        return jac if _tracked(args) else _map(lambda t: t.detach(), jac)
    return wrapper


jacfwd = jacrev          # the same Jacobian; rawdev has no forward mode, so both walk the tape backwards


def hessian(func, argnums=0):
    """The Hessian of a scalar func with respect to args[argnums]."""
    return jacrev(jacrev(func, argnums), argnums)


def _slice(x, dim, i):
    return x.select(dim, i) if dim is not None else x


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """func mapped over a dimension of its inputs: vmap(f)(xs) == stack([f(x) for x in xs]).

    Args:
        in_dims: the mapped dimension of each positional argument (an int for all, a tuple per argument, None
            for an argument passed whole).
        out_dims: where the mapped dimension goes in each output.

    Example:
        >>> torch.func.vmap(torch.dot)(torch.ones(3, 2), torch.ones(3, 2))
        tensor([2., 2., 2.])
    """
    def wrapper(*args, **kwargs):
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                             f"structure of `inputs`. in_dims has structure of length {len(dims)} but inputs has "
                             f"{len(args)}")
        sizes = {t.shape[d] for a, d in zip(args, dims) if d is not None for t in _leaves(a)}
        if not sizes:
            raise ValueError("vmap(f, in_dims=...)(<inputs>): at least one input must be mapped (in_dims not None)")
        if len(sizes) != 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sorted(sizes)} for the mapped dimension")
        n = sizes.pop()
        results = [func(*[_map(lambda t, d=d, i=i: _slice(t, d, i), a) for a, d in zip(args, dims)], **kwargs)
                   for i in range(n)]
        first = results[0]
        if isinstance(first, tuple) and not isinstance(out_dims, int):
            return tuple(_stack_trees([r[k] for r in results], out_dims[k]) for k in range(len(first)))
        return _stack_trees(results, out_dims if isinstance(out_dims, int) else out_dims[0])
    return wrapper


def _stack_trees(results, dim):
    """Stack corresponding tensors of a list of equally shaped trees (a tensor, or a dict/list/tuple of them)."""
    from .ops.join import stack
    first = results[0]
    if isinstance(first, dict):
        return {k: _stack_trees([r[k] for r in results], dim) for k in first}
    if isinstance(first, (list, tuple)):
        return type(first)(_stack_trees([r[k] for r in results], dim) for k in range(len(first)))
    return stack(list(results), dim)


@contextlib.contextmanager
def _swapped(module, tensors):
    """module's parameters and buffers named in tensors replaced by those tensors (plain attributes), restored
    on exit."""
    saved = []
    try:
        for name, value in tensors.items():
            *path, leaf = name.split(".")
            owner = module
            for p in path:
                owner = getattr(owner, p)
            for store in ("_parameters", "_buffers"):
                d = owner.__dict__[store]
                if leaf in d:
                    saved.append((owner, store, leaf, d[leaf]))
                    del d[leaf]
                    break
            else:
                raise ValueError(f"functional_call: {name} is not a parameter or buffer of the module")
            object.__setattr__(owner, leaf, value)
        yield
    finally:
        for owner, store, leaf, old in reversed(saved):
            owner.__dict__.pop(leaf, None)
            owner.__dict__[store][leaf] = old


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with its parameters and buffers replaced by the given tensors (by state_dict
    name) for this one call; the module itself is left unchanged.

    Example:
        >>> params = {k: v * 2 for k, v in model.named_parameters()}
        >>> y = torch.func.functional_call(model, params, (x,))
    """
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, (list, tuple)):
        merged = {}
        for d in dicts:
            merged.update(d)
        dicts = merged
    args = () if args is None else (args if isinstance(args, tuple) else (args,))
    with _swapped(module, dict(dicts)):
        return module(*args, **(kwargs or {}))


def stack_module_state(models):
    """(params, buffers): each parameter and buffer of the equally built models stacked along a new first
    dimension (parameters as fresh leaves that require grad), for vmap over an ensemble.

    Example:
        >>> params, buffers = torch.func.stack_module_state([nn.Linear(3, 2) for _ in range(4)])
        >>> params["weight"].shape
        torch.Size([4, 2, 3])
    """
    from .ops.join import stack
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    params = {k: stack([dict(m.named_parameters())[k].detach() for m in models]).requires_grad_(True)
              for k, _ in models[0].named_parameters()}
    buffers = {k: stack([dict(m.named_buffers())[k] for m in models]) for k, _ in models[0].named_buffers()}
    return params, buffers
