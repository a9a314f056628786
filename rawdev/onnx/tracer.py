"""Recording a forward as an ONNX graph: while a Tracer is active, rawdev's public op entry points (Tensor methods
and operators, rawdev.*, rawdev.nn.functional.*) and Module.__call__ are wrapped. A call made by the program (not
from inside another recorded call) whose arguments include a traced tensor runs as usual, then its symbolic
function (symbolic.py for ops, layers.py for modules with an ONNX form of their own) emits the nodes that compute
it, and its output tensors are bound to the nodes' outputs. An op with no ONNX mapping raises naming it.

The safety net: autograd Functions and view ops are also wrapped, and one that meets a traced tensor outside a
recorded call (a rawdev internal reached by a path the wrappers did not see) raises instead of letting the
result be baked into the graph as a constant. Tensors the forward makes from nothing traced (torch.zeros(...),
a mask) are constants of the graph; parameters and buffers are initializers under their state_dict names.
"""
import inspect
import types

import numpy as np

__all__ = ["Tracer", "active"]

_ACTIVE = None

# Tensor attributes that never make a graph value of their own: no wrapper (they return numbers, strings, self,
# or delegate to wrapped calls)
_SKIP = {"__init__", "__new__", "__del__", "__repr__", "__str__", "__format__", "__hash__", "__bool__", "__len__",
         "__index__", "__int__", "__float__", "__complex__", "__array__", "__array_wrap__", "__reduce__",
         "__reduce_ex__", "__getstate__", "__setstate__", "__getattr__", "__getattribute__", "__setattr__",
         "__delattr__", "__dir__", "__contains__", "__iter__", "__deepcopy__", "__copy__", "__dlpack__",
         "__dlpack_device__", "__class_getitem__", "__init_subclass__", "__subclasshook__", "__sizeof__",
         "__torch_function__", "__instancecheck__", "requires_grad_", "retain_grad", "register_hook",
         "register_post_accumulate_grad_hook", "backward", "size", "dim", "numel", "item", "tolist", "numpy",
         "data_ptr", "stride", "storage_offset", "element_size", "is_contiguous", "get_device", "type",
         "is_floating_point", "is_complex", "nelement", "ndimension", "untyped_storage", "storage", "nbytes",
         "is_set_to", "is_shared", "share_memory_", "record_stream", "equal", "allclose", "pin_memory"}


def active():
    """The Tracer recording now, or None."""
    return _ACTIVE


def _tensors(obj, out):
    from ..tensor import Tensor
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            _tensors(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors(o, out)
    return out


class Tracer:
    """The state of one export: the graph, the traced tensors' value names, the model's parameter names."""

    def __init__(self, graph, params):
        self.graph = graph
        self.params = params          # id(tensor) -> (state_dict name, tensor)
        self.values = {}              # id(tensor) -> (value name, tensor): the tensor kept alive, so ids stay unique
        self.depth = 0
        self.used_params = set()

    # ------------------------------------------------------------------ values
    def bind(self, t, name):
        self.values[id(t)] = (name, t)

    def traced(self, t):
        return id(t) in self.values

    def touches(self, args, kwargs):
        return any(id(t) in self.values for t in _tensors((args, kwargs), []))

    def v(self, x, np_dtype=None):
        """The value name of x: a traced tensor's node output, a parameter's initializer, or a constant (a tensor
        made without traced inputs, a number, a list)."""
        from ..tensor import Tensor
        if hasattr(x, "name") and type(x).__name__ == "_Named":
            return x.name
        if isinstance(x, Tensor):
            hit = self.values.get(id(x))
            if hit is not None:
                return hit[0]
            p = self.params.get(id(x))
            if p is not None:
                if p[0] not in self.graph.initializers:
                    self.graph.initializer(p[0], np.asarray(p[1].detach().cpu()))
                self.used_params.add(p[0])
                return p[0]
            return self.graph.const(np.asarray(x.detach().cpu()))
        return self.graph.const(np.asarray(x, dtype=np_dtype))

    # ------------------------------------------------------------------ recording
    def record(self, fn, emit, what, args, kwargs):
        """Run fn(*args, **kwargs) unrecorded inside, then emit its nodes and bind its outputs."""
        self.depth += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            self.depth -= 1
        outs = _tensors(out, [])
        if not outs:
            return out
        if emit is None:
            raise NotImplementedError(f"rawdev.onnx.export: {what} has no ONNX mapping in rawdev (it ran on a "
                                      f"traced tensor); write the forward with ops rawdev exports, or leave it "
                                      f"out of the exported module")
        names = emit(self, out, *args, **kwargs)
        names = [names] if isinstance(names, str) else list(names)
        if len(names) != len(outs):
            raise RuntimeError(f"rawdev.onnx: the symbolic of {what} gave {len(names)} values for {len(outs)} "
                               f"tensors")
        for t, n in zip(outs, names):
            if n is not None:
                self.bind(t, n)
        return out

    # ------------------------------------------------------------------ installing the wrappers
    def __enter__(self):
        global _ACTIVE
        if _ACTIVE is not None:
            raise RuntimeError("rawdev.onnx.export is already running (exports do not nest)")
        self._undo = []
        try:
            self._install()
        except BaseException:
            self._restore()
            raise
        _ACTIVE = self
        return self

    def __exit__(self, *exc):
        global _ACTIVE
        _ACTIVE = None
        self._restore()
        return False

    def _set(self, owner, name, value):
        self._undo.append((owner, name, owner.__dict__[name] if name in owner.__dict__ else _MISSING))
        setattr(owner, name, value)

    def _restore(self):
        for owner, name, old in reversed(self._undo):
            if old is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        self._undo = []

    def _install(self):
        import sys

        from ..autograd.function import Function
        from ..nn import functional as F
        from ..nn.module import Module
        from ..ops.shape import _ViewOp
        from ..tensor import Tensor
        from . import symbolic

        self.wrapped = {}                  # original function -> its wrapper (for module attributes holding one)
        for klass in Tensor.__mro__:
            if klass is object:
                continue
            for name, raw in list(vars(klass).items()):
                if name in _SKIP or (name.startswith("_") and not (name.startswith("__") and name.endswith("__"))):
                    continue
                if not isinstance(raw, (types.FunctionType, types.BuiltinFunctionType)):
                    continue
                if klass is not Tensor and name in vars(Tensor):
                    continue
                self._set(Tensor, name, self._wrap(raw, symbolic.canonical(name), f"Tensor.{name}"))
        for ns, label in ((sys.modules["rawdev"], "rawdev"), (F, "rawdev.nn.functional")):
            for name, raw in list(vars(ns).items()):
                if name.startswith("_") or not isinstance(raw, types.FunctionType):
                    continue
                if not (getattr(raw, "__module__", "") or "").startswith("rawdev.") or name in _SKIP:
                    continue
                w = self.wrapped.get(raw) or self._wrap(raw, symbolic.canonical(name), f"{label}.{name}")
                self.wrapped.setdefault(raw, w)
                self._set(ns, name, w)

        orig_call = Module.__call__
        tracer = self

        def module_call(mod, *args, **kwargs):
            if tracer.depth or not tracer.touches(args, kwargs):
                return orig_call(mod, *args, **kwargs)
            emit = tracer.module_emitter(mod)
            if emit is None:                # a container or the user's own module: its forward is recorded
                return orig_call(mod, *args, **kwargs)
            return tracer.record(lambda *a, **k: orig_call(mod, *a, **k),
                                 lambda tr, out, *a, **k: emit(tr, mod, out, *a, **k),
                                 f"module {type(mod).__name__}", args, kwargs)
        self._set(Module, "__call__", module_call)

        orig_apply = Function.__dict__["apply"].__func__

        def apply(cls, *args, **kwargs):
            if tracer.depth == 0 and tracer.touches(args, kwargs):
                tracer._stray(getattr(cls, "node_name", None) or cls.__name__)
            return orig_apply(cls, *args, **kwargs)
        self._set(Function, "apply", classmethod(apply))

        orig_view = _ViewOp.__call__

        def view_call(op, x, *args):
            if tracer.depth == 0 and tracer.traced(x):
                tracer._stray(op.name)
            return orig_view(op, x, *args)
        self._set(_ViewOp, "__call__", view_call)

    def module_emitter(self, mod):
        """The function that emits a module's call as its own nodes, or None to record its forward's ops."""
        from . import layers
        return layers.emitter_for(mod)

    def _stray(self, what):
        raise NotImplementedError(f"rawdev.onnx.export: the op {what} ran on a traced tensor through a path "
                                  f"rawdev.onnx does not record (a function captured before the export, or a "
                                  f"rawdev internal); call it through rawdev's public names (rawdev.<op>, "
                                  f"F.<op>, Tensor.<op>) so it is exported")

    def _wrap(self, raw, canon, what):
        from . import symbolic
        tracer = self

        def wrapper(*args, **kwargs):
            if tracer.depth or not tracer.touches(args, kwargs):
                return raw(*args, **kwargs)
            if canon == "setitem":      # returns nothing: recording it as a no-op would export the old values
                raise NotImplementedError("rawdev.onnx.export: an indexed write (x[idx] = v) inside the exported "
                                          "forward has no ONNX mapping in rawdev; build the tensor with "
                                          "cat/stack/where instead")
            emit, _ = symbolic.lookup(canon)
            # an in-place op (x.relu_()) returns x itself: record() binds x to the new value
            return tracer.record(raw, emit, f"the op {what}", args, kwargs)
        wrapper.__name__ = getattr(raw, "__name__", canon)
        wrapper.__doc__ = raw.__doc__
        try:
            wrapper.__signature__ = inspect.signature(raw)
        except (TypeError, ValueError):
            pass
        return wrapper

    def patch_module_attributes(self, model):
        """Modules that hold a rawdev function as an attribute (TransformerEncoderLayer.activation = F.relu) call
        the recorded wrapper during the export."""
        for m in model.modules():
            for k, val in list(vars(m).items()):
                if isinstance(val, types.FunctionType) and val in self.wrapped:
                    self._set(m, k, self.wrapped[val])


_MISSING = object()
