"""The backward pass: walk the recorded graph from the roots in dependency order, summing gradients.

Gradients that meet at a node are summed (out of place) before the node runs; a leaf's gradient is
added into `.grad` (rawdev.ops.dispatch.accumulate_leaf_grad). Unless retain_graph, each node frees
its saved tensors right after it ran, so activations are released during the backward pass.
"""
import operator

from ..runtime import phases as _phases
from ..tensor.core import Tensor
from . import anomaly_mode as _anomaly
from .function import AccumulateGrad, BackwardNode, _edge
from .grad_mode import no_grad, set_grad_enabled

__all__ = ["backward", "grad", "run_backward"]

_SEQ = operator.attrgetter("seq")


def _as_tuple(x):
    if x is None:
        return None
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _make_grads(outputs, grad_outputs, create_graph=False):
    from ..ops import dispatch
    grads = []
    for i, out in enumerate(outputs):
        g = grad_outputs[i] if grad_outputs is not None else None
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.dtype.is_floating_point:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype}")
            g = dispatch.ones_like(out)
        elif isinstance(g, Tensor):
            if g.shape != out.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(g.shape)} and "
                                   f"output[{i}] has a shape of {tuple(out.shape)}.")
            if g.device != out.device:
                raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                                   f"{g.device} (grad_output[{i}]) and {out.device} (output[{i}])!")
            if not create_graph:
                g = g.detach()
        else:
            raise TypeError(f"gradients can be Tensors or None, but got {type(g).__name__}")
        grads.append(g)
    return grads


def run_backward(outputs, grad_outputs, retain_graph=False, inputs=None, capture=False, accumulate=True,
                 create_graph=False):
    """Core engine. With capture, returns {id(input): grad} for `inputs` instead of accumulating into them.

    create_graph: the backward pass is itself recorded (each node's apply_graph), so the gradients it returns
    or accumulates can be differentiated again."""
    from ..ops import dispatch
    handed_over = outputs if isinstance(outputs, list) else None
    outputs = _as_tuple(outputs)
    grads = _make_grads(outputs, _as_tuple(grad_outputs), create_graph)
    roots = []
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if out.grad_fn is None:
            roots.append((out.__dict__.get("_accumulate_grad") or _acc(out), 0))
        else:
            roots.append(_edge(out))   # (a view whose base was rewritten in place replays its history first)

    # which nodes receive gradient, and by how many edges
    deps, stack, seen = {}, [n for n, _ in roots], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for nxt, _ in node.next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                stack.append(nxt)

    capture_map = {}
    if inputs is not None:
        for t in inputs:
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            node = t.grad_fn if t.grad_fn is not None else (t.__dict__.get("_accumulate_grad") or _acc(t))
            key = (node, t.__dict__.get("_output_nr", 0) if t.grad_fn is not None else 0)
            capture_map.setdefault(key, []).append(t)

    buffers = {}   # node -> list of grads per output

    def add_grad(node, idx, g):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * max(node.num_outputs, 1)
        if buf[idx] is None:
            buf[idx] = g
        elif create_graph:
            buf[idx] = buf[idx] + g    # a recorded sum (AddBackward0)
        else:
            buf[idx] = dispatch.add_grads(buf[idx], g)

    for (node, idx), g in zip(roots, grads):
        add_grad(node, idx, g)
    del grads, g
    outputs = None
    if handed_over is not None:
        handed_over.clear()       # the caller's output tensors: their values are not needed for backward
    if isinstance(grad_outputs, list):
        grad_outputs.clear()      # the caller handed them over (checkpoint): only the buffers hold them now

    captured = {}
    ready = [n for n, _ in roots if deps.get(n, 0) == 0]
    ready = list({id(n): n for n in ready}.values())
    with set_grad_enabled(create_graph):
        while ready:
            ready.sort(key=_SEQ)
            node = ready.pop()          # the most recently created ready node first, like PyTorch
            gin = buffers.pop(node, None) or [None] * node.num_outputs
            if node._tensor_hooks:      # Tensor.register_hook: each hook may replace the gradient
                for i, hooks in node._tensor_hooks.items():
                    for hook in tuple(hooks.values()):
                        if i < len(gin) and gin[i] is not None:
                            r = hook(gin[i])
                            if r is not None:
                                gin[i] = r
            if capture_map:   # autograd.grad / backward(inputs=): only then is there anything to capture
                for i, g in enumerate(gin):
                    for t in capture_map.get((node, i), ()):
                        captured[id(t)] = g
            if node._retained is not None and gin[0] is not None:
                t = node._retained()
                if t is not None:
                    t._grad = gin[0] if create_graph else dispatch.clone(gin[0])
            if isinstance(node, AccumulateGrad):
                if accumulate and not (capture and (node, 0) in capture_map) and gin[0] is not None:
                    if create_graph:
                        _accumulate_graph(node, gin[0])
                    else:
                        node.apply(gin[0])
                    if node._post_hooks:
                        v = node.variable
                        for hook in tuple(node._post_hooks.values()):
                            hook(v)
                del gin
                continue
            if all(g is None for g in gin):
                out_grads = (None,) * len(node.next_functions)
            elif getattr(node, "consumes_grads", False):
                if create_graph:
                    raise RuntimeError(f"rawdev: double backward is not supported for {node.name()}")
                out_grads = node.apply_consuming(gin)     # empties gin: the grads die when no longer needed
            elif create_graph:
                out_grads = node.apply_graph(*gin)
            else:
                out_grads = node.apply(*gin)
            if _anomaly.is_anomaly_enabled() and _anomaly.is_anomaly_check_nan_enabled():
                _check_nan(node, out_grads)
            if not retain_graph and isinstance(node, BackwardNode):
                node.release()
            if len(out_grads) < len(node.next_functions):
                out_grads = tuple(out_grads) + (None,) * (len(node.next_functions) - len(out_grads))
            for (nxt, idx), g in zip(node.next_functions, out_grads):
                if nxt is None:
                    continue
                if g is not None:
                    want = _input_dtype(nxt, idx)
                    if want is not None and g._dtype is not want and g._dtype.is_floating_point \
                            and want.is_floating_point:
                        g = g.to(want)     # a gradient arrives in its input's dtype, as PyTorch's engine casts it
                    add_grad(nxt, idx, g)
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    ready.append(nxt)
            # drop this node's gradients now (not at the next iteration): activations' grads die early
            del gin, out_grads
            g = None
    return captured


def _input_dtype(node, idx):
    """The dtype of the tensor whose gradient enters node at idx (the forward output it made, or the leaf), or
    None where the node does not record it."""
    meta = getattr(node, "out_meta", None)
    if meta is not None:
        m = meta[idx] if idx < len(meta) else None
        return m[1] if m is not None else None
    if isinstance(node, AccumulateGrad):
        v = node.variable
        return v._dtype if v is not None else None
    return None


def _check_nan(node, out_grads):
    """detect_anomaly: PyTorch's error for a backward that produced NaN."""
    import numpy as np
    for i, g in enumerate(out_grads):
        if g is not None and g.dtype.is_floating_point and np.isnan(np.asarray(g.detach().cpu())).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


def _acc(t):
    from .function import _edge
    return _edge(t)[0]


def _accumulate_graph(node, g):
    """AccumulateGrad under create_graph=True: .grad keeps the gradient's graph (first: the gradient itself;
    later: an out-of-place, recorded sum), as PyTorch."""
    v = node.variable
    if v is None:
        return
    if tuple(g.shape) != tuple(v.shape):
        raise RuntimeError(f"Function AccumulateGrad returned an invalid gradient - got {list(g.shape)} but expected "
                           f"shape compatible with {list(v.shape)}")
    if g.dtype is not v.dtype:
        g = g.to(dtype=v.dtype)
    v._grad = g if v._grad is None else v._grad + g


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """rawdev.autograd.backward: accumulate d(tensors)/d(leaf) into every leaf's .grad."""
    _phases.emit("backward")   # an event the memory tool may record on its timeline
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        captured = run_backward(tensors, grad_tensors, bool(retain_graph), inputs=inputs, capture=True,
                                accumulate=False, create_graph=create_graph)
        from ..ops import dispatch
        for t in inputs:
            g = captured.get(id(t))
            if g is not None:
                if t.grad_fn is None:
                    if create_graph:
                        _accumulate_graph(t.__dict__.get("_accumulate_grad") or _acc(t), g)
                    else:
                        dispatch.accumulate_leaf_grad(t, g)
                else:
                    t._grad = g if create_graph else dispatch.clone(g)
        return
    run_backward(tensors, grad_tensors, bool(retain_graph), create_graph=create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
         materialize_grads=False):
    """rawdev.autograd.grad: the gradients of outputs w.r.t. inputs, returned (nothing accumulated)."""
    if retain_graph is None:
        retain_graph = create_graph
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("grad requires non-empty inputs.")
    for t in inputs:
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): inputs must be Tensors, but got {type(t).__name__}")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    captured = run_backward(outputs, grad_outputs, bool(retain_graph), inputs=inputs, capture=True,
                            accumulate=False, create_graph=create_graph)
    res = []
    from ..ops import dispatch
    for t in inputs:
        g = captured.get(id(t))
        if g is None:
            if materialize_grads:
                g = dispatch.zeros_like(t)
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
        res.append(g)
    return tuple(res)


def zero_grads(params, set_to_none=True):
    """Module.zero_grad and Optimizer.zero_grad: drop each .grad (set_to_none) or zero it in place, detached
    from any graph that produced it (PyTorch's rule for a grad built with create_graph=True)."""
    with no_grad():
        for p in params:
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
                continue
            if p.grad.grad_fn is not None:
                p.grad.detach_()
            else:
                p.grad.requires_grad_(False)
            p.grad.zero_()
