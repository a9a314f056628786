"""Graph nodes and `Function` (torch.autograd.Function's shape): forward/backward with a ctx.

A tensor made by an op that needs gradients carries `grad_fn`, a Node. A Node's `next_functions` are
`(node, 0)` pairs for its differentiable inputs: the input's own grad_fn, an AccumulateGrad for a
leaf that requires grad, or None. Saved tensors remember their version, so an in-place write after
the forward is caught at backward time, with PyTorch's message.
"""
import functools
import itertools
import threading
import weakref
from collections import OrderedDict
from typing import Any

from ..tensor.core import Tensor
from .grad_mode import _state as _grad_state
from .grad_mode import no_grad, set_grad_enabled


class _GradOps:
    """The gradient arithmetic autograd's nodes need and the ops layer owns: adding into a leaf's .grad
    (PyTorch's AccumulateGrad) and a zero gradient for an output that got none. rawdev.ops.dispatch sets both
    when it is imported; the ops import this module (Function), so it cannot import them back."""
    accumulate_leaf_grad: Any = None
    zeros_like_meta: Any = None


GRAD_OPS = _GradOps()

__all__ = ["Function", "Node", "AccumulateGrad", "FunctionCtx", "Variable", "once_differentiable", "delayed_error",
           "linear_backward"]

_seq = itertools.count()
# saved_tensors_hooks (rawdev.autograd.graph) in effect on this thread: .stack, a list of (pack, unpack)
_saved_hooks = threading.local()


class Node:
    """One recorded op. Subclasses implement apply(grad_output) -> tuple of input grads."""

    _name: str | None = None

    def __init__(self):
        self.next_functions = ()
        self.num_outputs = 1
        self.seq = next(_seq)
        self._retained = None      # weakref to the output tensor when retain_grad() was called
        self._tensor_hooks = None  # {output_nr: {handle id: hook(grad)}}: Tensor.register_hook

    def _hooks_for(self, nr):
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        return self._tensor_hooks.setdefault(nr, OrderedDict())

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
        self._post_hooks = None             # {handle id: hook(tensor)}: register_post_accumulate_grad_hook

    @property
    def variable(self):
        return self._var()

    def apply(self, grad):
        v = self._var()
        if v is not None:
            GRAD_OPS.accumulate_leaf_grad(v, grad)
        return ()


class _Saved:
    __slots__ = ("tensor", "version", "producer", "source", "leaf", "edge", "own", "packed", "unpack", "vc")

    def __init__(self, t, hooks=None):
        self.source = id(t)   # an op saving its own output: Function.apply names the producer afterwards
        self.own, self.unpack = None, None
        if t is None:   # a slot the op left empty (its input needs no gradient)
            self.tensor, self.version, self.producer, self.leaf, self.edge = None, 0, None, None, None
            return
        if hooks is not None:
            self._pack(t, *hooks)
            return
        # A detached alias (same storage and version counter, no grad_fn): saving an op's own output
        # must not make a cycle output -> grad_fn -> ctx -> output, or activations would outlive
        # their last use until the cycle collector runs.
        self.tensor = t.detach()
        self.version = t._version
        # the op that made it, weakly (a strong reference would be the cycle above): the error names it
        fn = t.grad_fn
        if fn is not None:
            nr = t.__dict__.get("_output_nr", 0)
            self.producer = (weakref.ref(fn), nr)
            # What a differentiable backward (create_graph=True) needs to give the saved tensor its place in
            # the graph again: the leaf itself, or the (node, output_nr) that made it (an upstream node, which
            # the recording node's next_functions hold anyway); `own` is set for the recording op's own output.
            self.edge, self.leaf = (fn, nr), None
        else:
            self.producer, self.edge = None, None
            self.leaf = t if t._requires_grad else None

    def _pack(self, t, pack_hook, unpack_hook):
        """Under saved_tensors_hooks: keep only what pack_hook returns (and the version counter, so that an
        in-place change of the original is still caught), as PyTorch's SavedVariable does."""
        self.version, self.vc = t._version, t._vc
        self.producer, self.edge, self.leaf = None, None, None
        fn = t.grad_fn
        if fn is not None:
            nr = t.__dict__.get("_output_nr", 0)
            self.producer, self.edge = (weakref.ref(fn), nr), (fn, nr)
        elif t._requires_grad:
            self.leaf = t
        self.packed, self.unpack = pack_hook(t.detach()), unpack_hook
        self.tensor = None

    def value(self):
        """The saved tensor: itself, or what unpack_hook gives back for what pack_hook kept."""
        if self.unpack is None:
            return self.tensor
        t = self.unpack(self.packed)
        if not isinstance(t, Tensor):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                            f"{type(t).__name__}")
        return t

    def graph_tensor(self, node, value):
        """The saved tensor (`value`, as value() gave it) connected to the graph, for a backward that is itself
        recorded."""
        if self.leaf is not None:
            return self.leaf
        if self.own is not None:
            fn, nr = node, self.own
        elif self.edge is not None:
            fn, nr = self.edge
        else:
            return value
        t = value.detach()
        t.grad_fn, t._requires_grad = fn, True
        if nr:
            t.__dict__["_output_nr"] = nr
        return t


class FunctionCtx:
    """The `ctx` a Function's forward/backward share."""

    # Defaults live on the class (an instance sets its own on first write): a ctx is made per op call, and
    # most calls (no_grad, nothing requiring grad) never write any of them.
    _saved = ()
    _freed = False
    needs_input_grad = ()
    materialize_grads = True
    _non_differentiable = ()
    _graph_node = None    # set while a recorded (create_graph) backward runs
    _records = False      # the op's call is recorded in the graph: only then do saved-tensor hooks pack

    def save_for_backward(self, *tensors):
        hooks = None
        if self._records:
            stack = getattr(_saved_hooks, "stack", None)
            hooks = next((e for e in reversed(stack) if e[0] is not None), None) if stack else None
        self._saved = tuple([_Saved(t, hooks) for t in tensors])

    def mark_non_differentiable(self, *tensors):
        """These outputs get no grad_fn and requires_grad=False; their gradient is always None/zero."""
        self._non_differentiable = tuple(id(t) for t in tensors)

    def mark_dirty(self, *tensors):
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
            t = s.value()
            version = s.vc[0] if s.unpack is not None else (t._version if t is not None else s.version)
            if t is not None and version != s.version:
                fn = s.producer[0]() if s.producer else None
                made_by = f", which is output {s.producer[1]} of {fn.name()}," if fn is not None else ""
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{t.type()} {list(t.shape)}]{made_by} is at version {version}; expected "
                    f"version {s.version} instead.")
            out.append(s.graph_tensor(self._graph_node, t) if self._graph_node is not None and t is not None else t)
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
            _ = ctx.saved_tensors   # raises the "backward through the graph a second time" error
        if ctx.materialize_grads and any(g is None for g in grads):
            grads = tuple(GRAD_OPS.zeros_like_meta(m) if g is None else g for g, m in zip(grads, self.out_meta))
        grads = self.fn_cls.backward(ctx, *grads)
        if not isinstance(grads, tuple):
            grads = (grads,)
        return grads

    def apply_graph(self, *grads):
        """The backward recorded as a graph of its own (create_graph=True): the Function's backward runs with
        grad mode on and its saved tensors connected to the graph, so its result can be differentiated again.

        rawdev's own ops opt in: `backward_graph` (a backward written with differentiable ops) or
        `differentiable_backward = True` (their backward already is). A user's Function is trusted as
        PyTorch does. Another op's backward is plain kernels: fine while nothing it reads needs a gradient,
        an error otherwise (its result would silently be a constant)."""
        ctx, cls = self.ctx, self.fn_cls
        if ctx._freed:
            _ = ctx.saved_tensors   # raises the "backward through the graph a second time" error
        fn = getattr(cls, "backward_graph", None)
        if fn is None and (getattr(cls, "differentiable_backward", False) or not cls.__module__.startswith("rawdev.")):
            fn = cls.backward
        if fn is None:
            # The result depends on the op's inputs in general (through tensors its forward saved or stashed),
            # which a plain-kernel backward does not record: the value now, an error if differentiated.
            with no_grad():
                out = self.apply(*grads)
            return delayed_error(out, self.name())
        if ctx.materialize_grads and any(g is None for g in grads):
            grads = tuple(GRAD_OPS.zeros_like_meta(m) if g is None else g for g, m in zip(grads, self.out_meta))
        ctx._graph_node = self
        try:
            with set_grad_enabled(True):
                out = fn(ctx, *grads)
        finally:
            ctx._graph_node = None
        return out if isinstance(out, tuple) else (out,)

    @property
    def consumes_grads(self):
        cls = self.fn_cls
        c = _CONSUMES.get(cls)
        if c is None:   # asked per node per backward: hasattr raises and catches when the answer is no
            c = _CONSUMES[cls] = hasattr(cls, "backward_consuming")
        return c

    def apply_consuming(self, grads):
        """Like apply, but the Function takes the list of grads and may empty it (to free them early)."""
        ctx = self.ctx
        if ctx._freed:
            _ = ctx.saved_tensors   # raises the "backward through the graph a second time" error
        out = self.fn_cls.backward_consuming(ctx, grads)
        return out if isinstance(out, tuple) else (out,)

    def release(self):
        self.ctx._free()


_node_classes: dict = {}
_CONSUMES: dict = {}   # Function class -> whether it has backward_consuming


def replay_view(t):
    """Give view t a history from its base's current one (PyTorch's view replay): after an in-place write through
    another view rewrote the base's history (CopySlices), t's recorded view node still points at the old one.
    The base holds the function that re-derives a view (set by mark_rewritten: the ops layer's as_strided)."""
    base = t._base
    fresh = base.__dict__["_replay"](base, t)
    t.grad_fn, t._requires_grad = fresh.grad_fn, fresh._requires_grad
    t.__dict__["_output_nr"] = 0
    t.__dict__["_seen_rewrites"] = base.__dict__.get("_rewrites")


def mark_rewritten(base, view, replay):
    """An in-place write through `view` gave `base` a new history: every other view of base replays its own
    from it when next used (replay_view, through replay(base, view) -> a fresh view); `view` is current."""
    n = base.__dict__.get("_rewrites", 0) + 1
    base.__dict__["_rewrites"], base.__dict__["_replay"] = n, replay
    view.__dict__["_seen_rewrites"] = n


def _edge(t):
    """The node a gradient for input t flows to (None when t needs no gradient)."""
    if not isinstance(t, Tensor) or not t._requires_grad:
        return None, 0
    if t.grad_fn is not None:
        base = t._base
        if base is not None and "_rewrites" in base.__dict__ and \
                t.__dict__.get("_seen_rewrites") != base.__dict__["_rewrites"]:
            replay_view(t)
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

    node_name: str | None = None   # the recorded node's class name ("AddBackward0"); None: from the class name

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom autograd.Function to use it "
            "with backward mode AD.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        if kwargs:   # bound to forward's parameters (defaults filled in), as PyTorch's bind_default_args
            import inspect
            old_style = cls.setup_context is Function.setup_context    # forward(ctx, ...)
            sig = inspect.signature(cls.forward)
            bound = sig.bind(None, *args, **kwargs) if old_style else sig.bind(*args, **kwargs)
            bound.apply_defaults()
            args = bound.args[1:] if old_style else bound.args
        ctx = FunctionCtx()
        record = False
        prev = getattr(_grad_state, "enabled", True)
        if prev:
            for a in args:
                if type(a) is Tensor or isinstance(a, Tensor):   # the exact type first: the common, cheap case
                    if a._requires_grad:
                        record = True
                        break
        if record:   # (list comprehensions: cheaper than generator expressions on this per-op path)
            needs = tuple([isinstance(a, Tensor) and a._requires_grad for a in args])
            ctx.needs_input_grad, ctx._records = needs, True
        else:
            n = len(args)
            ctx.needs_input_grad = _NO_GRADS[n] if n < len(_NO_GRADS) else (False,) * n
        # grad mode off while forward runs (no_grad's effect, without making a context manager per op)
        _grad_state.enabled = False
        try:
            if cls.setup_context is not Function.setup_context:    # forward(*args) + setup_context(ctx, ...)
                out = cls.forward(*args)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args)
        finally:
            _grad_state.enabled = prev
        if record:
            node = BackwardNode(cls, ctx)
            node.next_functions = tuple([_edge(a) if n else (None, 0) for a, n in zip(args, needs)])
            outs = out if isinstance(out, tuple) else (out,)
            node.num_outputs = len(outs)
            node.out_meta = tuple([(o.shape, o.dtype, o.device) if isinstance(o, Tensor) else None for o in outs])
            nondiff = ctx._non_differentiable
            for i, o in enumerate(outs):
                if isinstance(o, Tensor) and o._dtype.is_floating_point and id(o) not in nondiff:
                    o.grad_fn, o._requires_grad = node, True
                    if i:
                        o.__dict__["_output_nr"] = i
            if ctx._saved:
                own = {id(o): i for i, o in enumerate(outs) if isinstance(o, Tensor)}
                for sv in ctx._saved:
                    if sv.producer is None and sv.source in own:
                        sv.producer = (weakref.ref(node), own[sv.source])
                        sv.own, sv.leaf = own[sv.source], None
        elif not cls.__module__.startswith("rawdev."):
            ctx._free()   # a user's Function may keep ctx: drop what its forward stashed
        # (rawdev's own forwards keep no reference to ctx: it goes with this frame, whatever it holds)
        return out


_NO_GRADS = tuple((False,) * n for n in range(8))


class _NoDoubleBackward(Function):
    """The grad_fn of a gradient whose op has no recorded backward: reaching it in a backward pass raises."""

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(f"rawdev: double backward is not supported for {ctx.op_name}")

    backward_graph = backward


def attach_to_edge(t, edge, nr):
    """t, a detached tensor holding an input's value, made that input again for a graph recorded now (a backward
    written in differentiable ops, create_graph=True): gradients through t flow to the input's edge `(edge, nr)`
    (its AccumulateGrad for a leaf, else its grad_fn and output number). An edge of None leaves t as it is.

    Returns:
        t.
    """
    if isinstance(edge, AccumulateGrad):
        t.__dict__["_accumulate_grad"] = edge
        t._requires_grad = True
    elif edge is not None:
        t.grad_fn, t._requires_grad = edge, True
        if nr:
            t.__dict__["_output_nr"] = nr
    return t


def delayed_error(grads, name):
    """Gradients computed by a plain-kernel backward under create_graph=True: usable values, and a grad_fn
    that raises "double backward is not supported for <name>" only if something differentiates them
    (PyTorch's DelayedError)."""
    out = []
    for g in grads:
        if isinstance(g, Tensor) and g.dtype.is_floating_point:
            ctx = FunctionCtx()
            ctx.op_name = name
            node = BackwardNode(_NoDoubleBackward, ctx)
            node.rename(name + "DoubleBackwardError")
            node.out_meta = ((g.shape, g.dtype, g.device),)
            g = g.detach()
            g.grad_fn, g._requires_grad = node, True
        out.append(g)
    return tuple(out)


class _LinearBackward(Function):
    """The backward of an op that is linear in its input (index_select, embedding, dropout, ...), recorded:
    forward runs the op's own backward kernels on g; its backward is the op itself applied to gg (the adjoint
    of the adjoint), written with recorded ops by the caller."""
    differentiable_backward = True

    @staticmethod
    def forward(ctx, g, bwd, adj):
        ctx.adj = adj
        return bwd(g)

    @staticmethod
    def backward(ctx, gg):
        return ctx.adj(gg), None, None


def linear_backward(g, bwd, adj):
    """bwd(g) as a graph node whose gradient is adj(gg) (see _LinearBackward)."""
    return _LinearBackward.apply(g, bwd, adj)


def once_differentiable(fn):
    """PyTorch's decorator for a backward that is not itself differentiable: it runs with grad mode off, so
    under create_graph=True its results are constants."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            return fn(ctx, *args)
    return wrapper


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """The pre-0.4 wrapper: Variable(t, requires_grad=False) is a tensor sharing t's data (every tensor is an
    instance of Variable, as in PyTorch)."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        t = data.detach()
        if requires_grad:
            t.requires_grad_(True)
        return t
