"""torch.autograd.gradcheck / gradgradcheck: the analytical Jacobian (one backward pass per output element)
against central finite differences, element by element, as PyTorch's slow mode does."""
import warnings

from .. import dtypes as _dt
from ..tensor.core import Tensor
from .engine import grad as _grad
from .grad_mode import enable_grad, no_grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the analytical and numerical Jacobians differ."""


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(func, inputs):
    return tuple(o for o in _tuple(func(*inputs)) if isinstance(o, Tensor) and o.dtype.is_floating_point)


def _flat_values(t):
    return t.detach().cpu().to(dtype=_dt.float64).reshape(-1).numpy()


def _numerical(func, inputs, i, eps):
    """d outputs / d inputs[i] by central differences: [numel(input)] rows of the flattened outputs."""
    import numpy as np
    x = inputs[i]
    rows = []
    with no_grad():
        flat = x.detach().reshape(-1)
        base = flat.clone()
        for k in range(flat.numel()):
            def at(delta, k=k):
                pert = base.clone()
                pert[k] = base[k] + delta
                args = list(inputs)
                args[i] = pert.reshape(x.shape).to(device=x.device)
                return np.concatenate([_flat_values(o) for o in _outputs(func, args)])
            rows.append((at(eps) - at(-eps)) / (2 * eps))
    return np.stack(rows) if rows else np.zeros((0, 0))


def _analytical(func, inputs, i):
    import numpy as np

    from ..ops import dispatch
    x = inputs[i]
    with enable_grad():
        outs = _outputs(func, inputs)
        cols = []
        for o in outs:
            flat_n = o.numel()
            for k in range(flat_n):
                onehot = dispatch.zeros_like(o).reshape(-1)
                onehot[k] = 1
                if o.requires_grad:
                    g, = _grad(o, (x,), onehot.reshape(o.shape), retain_graph=True, allow_unused=True)
                else:
                    g = None
                cols.append(np.zeros(x.numel()) if g is None else _flat_values(g))
    return np.stack(cols, 1) if cols else np.zeros((x.numel(), 0))


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """Whether the gradients func's backward computes match finite differences, for every input that requires
    grad (use float64 inputs; float32 is too coarse for eps=1e-6).

    Returns:
        True, or raises GradcheckError naming the output and input whose Jacobians differ (False when
        raise_exception=False).

    Example:
        >>> x = torch.randn(3, dtype=torch.double, requires_grad=True)
        >>> torch.autograd.gradcheck(torch.sin, (x,))
        True
    """
    import numpy as np
    inputs = _tuple(inputs)
    for j, x in enumerate(inputs):
        if isinstance(x, Tensor) and x.requires_grad and x.dtype is not _dt.float64:
            warnings.warn(f"Input #{j} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating "
                          "point or complex. ", UserWarning, stacklevel=2)
    if not any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for i, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        num = _numerical(func, inputs, i, eps)
        ana = _analytical(func, inputs, i)
        if num.shape != ana.shape or not np.allclose(ana, num, rtol=rtol, atol=atol):
            msg = (f"Jacobian mismatch for output 0 with respect to input {i},\nnumerical:{num}\n"
                   f"analytical:{ana}\n")
            if raise_exception:
                raise GradcheckError(msg)
            return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """gradcheck of the backward itself: the gradients of func's vector-Jacobian product (second derivatives).

    Example:
        >>> x = torch.randn(3, dtype=torch.double, requires_grad=True)
        >>> torch.autograd.gradgradcheck(torch.sin, (x,))
        True
    """
    from ..ops import dispatch
    inputs = _tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    with no_grad():
        outs = _outputs(func, inputs)
    if grad_outputs is None:
        import numpy as np
        rng = np.random.default_rng(0)
        from ..tensor.factory import tensor
        grad_outputs = tuple(tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype, device=o.device)
                             .requires_grad_(True) for o in outs)
    grad_outputs = _tuple(grad_outputs)

    def first_grads(*args):
        with enable_grad():
            # a perturbed copy (numerical pass) is a fresh leaf; the inputs themselves keep their graph
            xs = tuple(x if (not isinstance(x, Tensor) or x.requires_grad or i not in diff_idx)
                       else x.detach().requires_grad_(True) for i, x in enumerate(args[:len(inputs)]))
            gos = args[len(inputs):]
            o = _outputs(func, xs)
            gs = _grad(o, tuple(xs[i] for i in diff_idx), gos, create_graph=True, allow_unused=True)
        return tuple(dispatch.zeros_like(xs[i]) if g is None else g for g, i in zip(gs, diff_idx))

    return gradcheck(first_grads, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
