"""Graph nodes and `Function` (torch.autograd.Function's shape): forward/backward with a ctx.

A tensor made by an op that needs gradients carries `grad_fn`, a Node. A Node's `next_functions` are
`(node, 0)` pairs for its differentiable inputs: the input's own grad_fn, an AccumulateGrad for a
leaf that requires grad, or None. Saved tensors remember their version, so an in-place write after
the forward is caught at backward time, with PyTorch's message.
"""
import itertools
import weakref

from .grad_mode import is_grad_enabled, no_grad

__all__ = ["Function", "Node", "AccumulateGrad", "FunctionCtx"]

_seq = itertools.count()


class Node:
    """One recorded op. Subclasses implement apply(grad_output) -> tuple of input grads."""

    _name: str | None = None

    def __init__(self):
        self.next_functions = ()
        self.num_outputs = 1
        self.seq = next(_seq)
        self._retained = None      # weakref to the output tensor when retain_grad() was called

    def name(self):
        return self._name or type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at 0x{id(self):x}>"

    def __call__(self, *grads):
        return self.apply(*grads)


class AccumulateGrad(Node):
    """The sink for a leaf tensor: adds the incoming gradient into `variable.grad`."""

    _name = "AccumulateGrad"

    def __init__(self, variable):
        super().__init__()
        self._var = weakref.ref(variable)   # the tensor holds this node; no cycle back

    @property
    def variable(self):
        return self._var()

    def apply(self, grad):
        from ..ops import dispatch
        v = self._var()
        if v is not None:
            dispatch.accumulate_leaf_grad(v, grad)
        return ()


class _Saved:
    __slots__ = ("tensor", "version", "producer", "source")

    def __init__(self, t):
        # A detached alias (same storage and version counter, no grad_fn): saving an op's own output
        # must not make a cycle output -> grad_fn -> ctx -> output, or activations would outlive
        # their last use until the cycle collector runs.
        self.tensor = t.detach() if t is not None else None
        self.version = t._version if t is not None else 0
        # the op that made it, weakly (a strong reference would be the cycle above): the error names it
        fn = t.grad_fn if t is not None else None
        self.producer = (weakref.ref(fn), t.__dict__.get("_output_nr", 0)) if fn is not None else None
        self.source = id(t)   # an op saving its own output: Function.apply names the producer afterwards


class FunctionCtx:
    """The `ctx` a Function's forward/backward share."""

    def __init__(self):
        self._saved = ()
        self._freed = False
        self.needs_input_grad = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        self._saved = tuple(_Saved(t) for t in tensors)

    def mark_non_differentiable(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        if self._freed:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after they "
                "have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved tensors after calling backward.")
        out = []
        for s in self._saved:
            t = s.tensor
            if t is not None and t._version != s.version:
                fn = s.producer[0]() if s.producer else None
                made_by = f", which is output {s.producer[1]} of {fn.name()}," if fn is not None else ""
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{t.type()} {list(t.shape)}]{made_by} is at version {t._version}; expected "
                    f"version {s.version} instead.")
            out.append(t)
        return tuple(out)

    def _free(self):
        self._saved = ()
        self._freed = True
        # drop anything else the forward stashed on ctx (activations, masks)
        for k in [k for k in self.__dict__ if not k.startswith("_") and k not in ("needs_input_grad",
                                                                                  "materialize_grads")]:
            del self.__dict__[k]


class BackwardNode(Node):
    """The node a Function.apply records: calls the Function's backward with its ctx.

    Each node's class is a subclass named after the op ("AddmmBackward0"), so reprs read like PyTorch's.
    """

    def __init__(self, fn_cls, ctx):
        super().__init__()
        self.fn_cls, self.ctx = fn_cls, ctx
        self.rename(getattr(fn_cls, "node_name", None) or f"{fn_cls.__name__.lstrip('_')}Backward")

    def rename(self, name):
        self._name = name
        cls = _node_classes.get(name)
        if cls is None:
            cls = _node_classes[name] = type(name, (BackwardNode,), {"__module__": "rawdev.autograd"})
        self.__class__ = cls

    def apply(self, *grads):
        ctx = self.ctx
        if ctx._freed:
            ctx.saved_tensors   # raises the "backward through the graph a second time" error
        if ctx.materialize_grads and any(g is None for g in grads):
            from ..ops import dispatch
            grads = tuple(dispatch.zeros_like_meta(m) if g is None else g for g, m in zip(grads, self.out_meta))
        grads = self.fn_cls.backward(ctx, *grads)
        if not isinstance(grads, tuple):
            grads = (grads,)
        return grads

    @property
    def consumes_grads(self):
        return hasattr(self.fn_cls, "backward_consuming")

    def apply_consuming(self, grads):
        """Like apply, but the Function takes the list of grads and may empty it (to free them early)."""
        ctx = self.ctx
        if ctx._freed:
            ctx.saved_tensors
        out = self.fn_cls.backward_consuming(ctx, grads)
        return out if isinstance(out, tuple) else (out,)

    def release(self):
        self.ctx._free()


_node_classes: dict = {}


def _edge(t):
    """The node a gradient for input t flows to (None when t needs no gradient)."""
    from ..tensor.core import Tensor
    if not isinstance(t, Tensor) or not t._requires_grad:
        return None, 0
    if t.grad_fn is not None:
        return t.grad_fn, t.__dict__.get("_output_nr", 0)
    acc = t.__dict__.get("_accumulate_grad")
    if acc is None:
        acc = t.__dict__["_accumulate_grad"] = AccumulateGrad(t)
    return acc, 0


class Function:
    """Subclass with static forward(ctx, *args) and backward(ctx, *grads); call .apply(*args).

    forward runs with grad recording off; when grad mode is on and any tensor input requires grad,
    the output gets a grad_fn and requires_grad=True. backward returns one gradient (or None) per
    forward argument.
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args):
        from ..tensor.core import Tensor
        ctx = FunctionCtx()
        needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        record = is_grad_enabled() and any(needs)
        ctx.needs_input_grad = needs if record else tuple(False for _ in args)
        with no_grad():
            out = cls.forward(ctx, *args)
        if record:
            node = BackwardNode(cls, ctx)
            node.next_functions = tuple(_edge(a) if n else (None, 0) for a, n in zip(args, needs))
            outs = out if isinstance(out, tuple) else (out,)
            node.num_outputs = len(outs)
            node.out_meta = tuple((o.shape, o.dtype, o.device) if isinstance(o, Tensor) else None for o in outs)
            for i, o in enumerate(outs):
                if isinstance(o, Tensor) and o._dtype.is_floating_point:
                    o.grad_fn, o._requires_grad = node, True
                    if i:
                        o.__dict__["_output_nr"] = i
            own = {id(o): i for i, o in enumerate(outs) if isinstance(o, Tensor)}
            for sv in ctx._saved:
                if sv.producer is None and sv.source in own:
                    sv.producer = (weakref.ref(node), own[sv.source])
        else:
            ctx._free()
        return out


class once_differentiable:  # noqa: N801 (PyTorch's name); backward is never differentiated here anyway
    def __new__(cls, fn):
        return fn
