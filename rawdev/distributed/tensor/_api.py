"""DTensor: a global tensor held as one local shard per rank of a DeviceMesh, with its placements
(Shard/Replicate/Partial per mesh dimension); distribute_tensor and distribute_module.

How a DTensor holds its shard: the local shard is a plain rawdev Tensor (`to_local()`), which also carries
autograd (gradients flow along the local tensors; redistribute's backward is the matching collective — see
_collectives). The DTensor object reports the global shape, dtype and device but has no storage of its own, so a
rawdev op that is not one of DTensor's own methods cannot silently read the shard as if it were the global tensor:
it raises NotImplementedError naming the op and the placements. DTensor's own ops: elementwise arithmetic and
activations on DTensors of equal placements (Partial only through linear ones), sum/mean reductions (a sharded
dimension reduces to Partial), matmul on a 1-d mesh for the layouts tensor parallelism uses, detach/copy_/clone.
See docs/INTERNALS.md, "DeviceMesh and DTensor"."""
from __future__ import annotations

import math
import sys
from typing import Any

from ...autograd.grad_mode import no_grad
from ...nn.parameter import Parameter
from ...tensor.core import Tensor
from ...tensor.size import Size
from .. import collectives as dist
from ..device_mesh import DeviceMesh, _current_mesh
from . import _collectives as C
from .placement_types import Partial, Placement, Replicate, Shard

__all__ = ["DTensor", "distribute_tensor", "distribute_module"]

_STORAGE_SLOTS = ("_data", "_root", "_buf", "_offset", "_shape", "_strides", "_soff", "_pending")


def _contiguous_strides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(out))


def _norm_placements(placements, mesh, ndim):
    if placements is None:
        placements = [Replicate()] * mesh.ndim
    placements = list(placements)
    if len(placements) != mesh.ndim:
        raise ValueError(f"`placements` must have the same length as `device_mesh.ndim`! Found placements length: "
                         f"{len(placements)}, and device_mesh.ndim: {mesh.ndim}.")
    out = []
    for p in placements:
        if not isinstance(p, Placement):
            raise TypeError(f"placements must be Shard, Replicate or Partial, not {type(p).__name__}")
        if isinstance(p, Shard) and p.dim < 0:
            if not -ndim <= p.dim:
                raise IndexError(f"Shard(dim={p.dim}) is out of range for a {ndim}-d tensor")
            p = Shard(p.dim + ndim)
        elif isinstance(p, Shard) and p.dim >= ndim:
            raise IndexError(f"Shard(dim={p.dim}) is out of range for a {ndim}-d tensor")
        out.append(p)
    dims = [p.dim for p in out if isinstance(p, Shard)]
    if len(dims) != len(set(dims)):
        raise NotImplementedError(f"placements {tuple(out)}: sharding one tensor dimension over several mesh "
                                  f"dimensions is not supported by rawdev's DTensor")
    return tuple(out)


def _mesh_of(device_mesh):
    mesh = device_mesh if device_mesh is not None else _current_mesh()
    if not isinstance(mesh, DeviceMesh):
        raise TypeError(f"device_mesh must be a DeviceMesh, not {type(mesh).__name__}")
    return mesh


def _local_shape(shape, mesh, placements):
    coord = mesh.get_coordinate()
    out = list(shape)
    for i, p in enumerate(placements):
        if isinstance(p, Shard):
            start, end = C.chunk_bounds(shape[p.dim], mesh.size(i), coord[i])
            out[p.dim] = end - start
    return tuple(out)


class DTensor(Tensor):
    """torch.distributed.tensor.DTensor: a global tensor spread over a DeviceMesh (each rank holds its shard).

    Made by distribute_tensor, DTensor.from_local or the tensor-parallel styles; `to_local()` is this rank's
    shard, `full_tensor()` the whole tensor (a collective: every rank must call it), `redistribute()` changes the
    placements. Gradients flow through all three.

    Example:
        >>> d = distribute_tensor(torch.randn(4, 6), mesh, [Shard(0)])
        >>> d.to_local().shape        # on each of 2 ranks
        torch.Size([2, 6])
    """

    __slots__ = ()

    @classmethod
    def _make(cls, local: Tensor, mesh: DeviceMesh, placements: tuple[Placement, ...], shape: tuple[int, ...],
              stride: tuple[int, ...] | None = None) -> DTensor:
        t = object.__new__(cls)      # (not cls.__new__: a parameter's __new__ wraps a DTensor)
        t._dtype, t._device = local._dtype, local._device
        t._vc, t._base = local._vc, None
        t._requires_grad, t._grad, t.grad_fn = False, None, None   # autograd sees the local tensor, never this
        t.__dict__.update(_local=local, _mesh=mesh, _placements=tuple(placements), _gshape=Size(tuple(shape)),
                          _gstride=tuple(stride) if stride is not None else _contiguous_strides(shape))
        return t

    def __getattr__(self, name: str) -> Any:
        # reached when a rawdev op reads storage this object does not have: the op is not one DTensor supports
        if name in _STORAGE_SLOTS:
            raise NotImplementedError(_unsupported_message(_op_name(), self))
        raise AttributeError(f"'DTensor' object has no attribute '{name}'")

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        return self.__dict__["_gshape"]

    def size(self, dim: int | None = None) -> Any:
        s = self.__dict__["_gshape"]
        return s if dim is None else s[dim]

    def stride(self, dim: int | None = None) -> Any:
        s = self.__dict__["_gstride"]
        return s if dim is None else s[dim]

    @property
    def ndim(self) -> int:
        return len(self.__dict__["_gshape"])

    def dim(self) -> int:
        return len(self.__dict__["_gshape"])

    def numel(self) -> int:
        return self.__dict__["_gshape"].numel()

    @property
    def placements(self) -> tuple[Placement, ...]:
        """The placement on each mesh dimension."""
        return self.__dict__["_placements"]

    @property
    def device_mesh(self) -> DeviceMesh:
        """The mesh the shards lie on."""
        return self.__dict__["_mesh"]

    @property
    def requires_grad(self) -> bool:
        return self.__dict__["_local"].requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.__dict__["_local"].requires_grad = flag

    def requires_grad_(self, requires_grad: bool = True) -> DTensor:
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self.__dict__["_local"].is_leaf

    @property
    def grad(self) -> DTensor | None:
        """The gradient as a DTensor of this one's placements (Partial read as Replicate)."""
        g = self.__dict__["_local"].grad
        if g is None:
            return None
        return DTensor._make(g, self.device_mesh, C.grad_placements(self.placements), self.shape)

    @grad.setter
    def grad(self, g: Tensor | None) -> None:
        self.__dict__["_local"].grad = g.to_local() if isinstance(g, DTensor) else g

    @grad.deleter
    def grad(self) -> None:
        self.__dict__["_local"].grad = None

    @property
    def _version(self) -> int:
        return self.__dict__["_local"]._version

    def __repr__(self) -> str:
        return (f"DTensor(local_tensor={self.__dict__['_local']!r}, device_mesh={self.device_mesh}, "
                f"placements={self.placements})")

    # ------------------------------------------------------------------ conversions
    def to_local(self, *, grad_placements: Any = None) -> Tensor:
        """This rank's shard (a plain tensor; gradients flowing into it reach the DTensor).

        Args:
            grad_placements: accepted for PyTorch's signature; the gradient is taken to have this DTensor's
                placements.

        Returns:
            The local tensor.
        """
        return self.__dict__["_local"]

    @staticmethod
    def from_local(local_tensor: Tensor, device_mesh: DeviceMesh | None = None, placements: Any = None, *,
                   run_check: bool = False, shape: Any = None, stride: Any = None) -> DTensor:
        """A DTensor whose shard on this rank is `local_tensor` (no copy; autograd flows through).

        Args:
            local_tensor: this rank's shard.
            device_mesh: the mesh (default: the one of an enclosing `with mesh:`).
            placements: one per mesh dimension (default: Replicate on each).
            run_check: for Replicate dimensions, broadcast the shard from the first rank of that dimension so
                every rank holds the same values.
            shape: the global shape (default: the local one scaled by the number of shards; pass it for uneven
                shards).
            stride: the global stride (default: contiguous).

        Returns:
            The DTensor.
        """
        mesh = _mesh_of(device_mesh)
        pl = _norm_placements(placements, mesh, local_tensor.ndim)
        if run_check:
            with no_grad():
                for i, p in enumerate(pl):
                    if isinstance(p, Replicate):
                        dist.broadcast(local_tensor, group=mesh.get_group(i), group_src=0)
        if shape is None:
            gshape = list(local_tensor.shape)
            for i, p in enumerate(pl):
                if isinstance(p, Shard):
                    gshape[p.dim] *= mesh.size(i)
            shape = tuple(gshape)
        return DTensor._make(local_tensor, mesh, pl, tuple(int(s) for s in shape), stride)

    def redistribute(self, device_mesh: DeviceMesh | None = None, placements: Any = None, *,
                     async_op: bool = False) -> DTensor:
        """The same global tensor with other placements (a collective: every rank of the mesh calls it).

        Shard→Replicate all-gathers, Partial→Replicate all-reduces, Partial→Shard reduce-scatters,
        Replicate→Shard keeps this rank's chunk, Replicate→Partial splits the value. The backward of each is the
        matching collective.

        Args:
            device_mesh: must be this DTensor's mesh (or None).
            placements: the new placements (default: Replicate on each mesh dimension).
            async_op: accepted for PyTorch's signature; the collectives complete before this returns.

        Returns:
            The redistributed DTensor.
        """
        mesh = self.device_mesh
        if device_mesh is not None and device_mesh != mesh:
            raise NotImplementedError("Cross device mesh comm not supported yet!")
        pl = _norm_placements(placements, mesh, self.ndim)
        for a, b in zip(self.placements, pl):
            if isinstance(b, Partial) and a != b:
                raise RuntimeError("Can not redistribute to Partial, redistributing to Partial is for internal use "
                                   "only!")
        if pl == self.placements:
            return self
        local = C.Redistribute.apply(self.to_local(), mesh, self.placements, pl, tuple(self.shape))
        return DTensor._make(local, mesh, pl, tuple(self.shape), self.stride())

    def full_tensor(self, *, grad_placements: Any = None) -> Tensor:
        """The whole tensor on every rank (a collective; autograd flows through).

        Returns:
            A plain tensor of the global shape.
        """
        return self.redistribute(self.device_mesh, [Replicate()] * self.device_mesh.ndim).to_local()

    def backward(self, gradient: Any = None, retain_graph: Any = None, create_graph: bool = False,
                 inputs: Any = None) -> None:
        """Backward from this DTensor's local tensor (a Partial loss reads as the sum of its terms)."""
        g = gradient.to_local() if isinstance(gradient, DTensor) else gradient
        self.to_local().backward(g, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)

    def detach(self) -> DTensor:
        return DTensor._make(self.to_local().detach(), self.device_mesh, self.placements, self.shape, self.stride())

    def clone(self, *, memory_format: Any = None) -> DTensor:
        return DTensor._make(self.to_local().clone(), self.device_mesh, self.placements, self.shape, self.stride())

    def contiguous(self, memory_format: Any = None) -> DTensor:
        return self

    def __str__(self) -> str:
        return self.__repr__()

    def item(self) -> Any:
        """The value of a one-element DTensor (a collective unless it is replicated: every rank must call it)."""
        if all(isinstance(p, Replicate) for p in self.placements):
            return self.to_local().item()
        return self.full_tensor().item()

    def zero_(self) -> DTensor:
        """Zero every rank's shard in place (a zeroed Partial is zero too)."""
        self.to_local().zero_()
        return self

    def detach_(self) -> DTensor:
        self.to_local().detach_()
        return self

    def copy_(self, src: Tensor, non_blocking: bool = False) -> DTensor:
        """Copy a DTensor of the same placements shard by shard, or a full tensor's part that is this rank's."""
        local = self.to_local()
        if isinstance(src, DTensor):
            if src.placements != self.placements or tuple(src.shape) != tuple(self.shape):
                src = src.redistribute(self.device_mesh, self.placements)
            local.copy_(src.to_local())
            return self
        if tuple(src.shape) != tuple(self.shape):
            raise RuntimeError(f"copy_: the source's shape {tuple(src.shape)} is not the DTensor's global shape "
                               f"{tuple(self.shape)}")
        if any(isinstance(p, Partial) for p in self.placements):
            raise NotImplementedError(f"copy_ of a plain tensor into a DTensor with placements {self.placements}")
        part = src
        coord: Any = self.device_mesh.get_coordinate()
        for i, p in enumerate(self.placements):
            if isinstance(p, Shard):
                start, end = C.chunk_bounds(self.shape[p.dim], self.device_mesh.size(i), coord[i])
                part = part.narrow(p.dim, start, end - start)
        local.copy_(part)
        return self

    # ------------------------------------------------------------------ ops
    def _pointwise(self, name, fn, *others, linear=False):
        operands = (self,) + others
        for o in others:
            if isinstance(o, Tensor) and not isinstance(o, DTensor):
                raise RuntimeError(f"aten.{name}: got mixed torch.Tensor and DTensor, need to convert all "
                                   f"torch.Tensor to DTensor before calling distributed operators!")
            if isinstance(o, DTensor) and (o.placements != self.placements or o.device_mesh != self.device_mesh
                                           or tuple(o.shape) != tuple(self.shape)):
                raise NotImplementedError(
                    f"aten.{name} on DTensors with placements {self.placements} (shape {tuple(self.shape)}) and "
                    f"{o.placements} (shape {tuple(o.shape)}): rawdev's DTensor computes elementwise ops on "
                    f"operands of equal shape and placements only; redistribute() one of them first")
        partial = [p for p in self.placements if isinstance(p, Partial)]
        if partial and (not linear or any(p.reduce_op not in ("sum", "avg") for p in partial)):
            raise NotImplementedError(_unsupported_message(f"aten.{name}", self))
        out = fn(*[o.to_local() if isinstance(o, DTensor) else o for o in operands])
        return DTensor._make(out, self.device_mesh, self.placements, self.shape, self.stride())

    def __add__(self, o):
        return self._pointwise("add.Tensor", lambda a, b: a + b, o, linear=isinstance(o, DTensor))

    def __radd__(self, o):
        return self._pointwise("add.Tensor", lambda a, b: b + a, o)

    def __sub__(self, o):
        return self._pointwise("sub.Tensor", lambda a, b: a - b, o, linear=isinstance(o, DTensor))

    def __rsub__(self, o):
        return self._pointwise("rsub.Scalar", lambda a, b: b - a, o)

    def __mul__(self, o):
        return self._pointwise("mul.Tensor", lambda a, b: a * b, o, linear=not isinstance(o, Tensor))

    def __rmul__(self, o):
        return self._pointwise("mul.Tensor", lambda a, b: b * a, o, linear=not isinstance(o, Tensor))

    def __truediv__(self, o):
        return self._pointwise("div.Tensor", lambda a, b: a / b, o, linear=not isinstance(o, Tensor))

    def __neg__(self):
        return self._pointwise("neg.default", lambda a: -a, linear=True)

    def add(self, other, *, alpha=1):
        return self + (other * alpha if alpha != 1 else other)

    def sub(self, other, *, alpha=1):
        return self - (other * alpha if alpha != 1 else other)

    def mul(self, other):
        return self * other

    def div(self, other):
        return self / other

    def neg(self):
        return -self

    def __pow__(self, o):
        return self._pointwise("pow.Tensor_Scalar", lambda a, b: a ** b, o)

    def relu(self):
        return self._pointwise("relu.default", lambda a: a.relu())

    def tanh(self):
        return self._pointwise("tanh.default", lambda a: a.tanh())

    def sigmoid(self):
        return self._pointwise("sigmoid.default", lambda a: a.sigmoid())

    def exp(self):
        return self._pointwise("exp.default", lambda a: a.exp())

    def abs(self):
        return self._pointwise("abs.default", lambda a: a.abs())

    def float(self):
        return self._pointwise("_to_copy.default", lambda a: a.float(), linear=True)

    def sum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> DTensor:
        """Sum (all elements, or over `dim`): a sharded dimension summed gives Partial("sum")."""
        return self._reduce("sum", dim, keepdim, dtype)

    def mean(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> DTensor:
        """Mean: as sum, divided by the global count."""
        return self._reduce("mean", dim, keepdim, dtype)

    def _reduce(self, name, dim, keepdim, dtype):
        nd = self.ndim
        dims = list(range(nd)) if dim is None else [d % nd for d in ((dim,) if isinstance(dim, int) else dim)]
        if any(isinstance(p, Partial) and p.reduce_op not in ("sum", "avg") for p in self.placements):
            raise NotImplementedError(_unsupported_message(f"aten.{name}", self))
        count = 1
        for d in dims:
            count *= self.shape[d]
        local = self.to_local()
        kw = {} if dtype is None else {"dtype": dtype}
        out = local.sum(**kw) if dim is None else local.sum(tuple(dims), keepdim=keepdim, **kw)
        if name == "mean":
            out = out / count
        placements = []
        for p in self.placements:
            if isinstance(p, Shard) and p.dim in dims:
                placements.append(Partial("sum"))
            elif isinstance(p, Shard) and not keepdim:
                placements.append(Shard(p.dim - sum(1 for d in dims if d < p.dim)))
            else:
                placements.append(p)
        shape = [s for d, s in enumerate(self.shape) if d not in dims] if not keepdim else \
            [1 if d in dims else s for d, s in enumerate(self.shape)]
        return DTensor._make(out, self.device_mesh, tuple(placements), tuple(shape))

    def __matmul__(self, other):
        return self.matmul(other)

    def matmul(self, other: DTensor) -> DTensor:
        """2-d (or batched-by-leading-dims @ 2-d) matmul on a 1-d mesh: Replicate @ Shard(1) → Shard(-1),
        Shard(-1) @ Shard(0) → Partial, Shard(0) @ Replicate → Shard(0), Replicate @ Replicate → Replicate."""
        if not isinstance(other, DTensor):
            raise RuntimeError("aten.mm: got mixed torch.Tensor and DTensor, need to convert all torch.Tensor to "
                               "DTensor before calling distributed operators!")
        mesh = self.device_mesh
        a, b = self.placements, other.placements
        if mesh.ndim != 1 or other.ndim != 2 or self.ndim < 2:
            raise NotImplementedError(f"aten.mm on DTensors of placements {a} and {b}: rawdev's DTensor multiplies "
                                      f"an n-d by a 2-d DTensor on a 1-d mesh only")
        last = self.ndim - 1
        x: Any = self.to_local()
        w: Any = other.to_local()
        pl: tuple[Placement, ...]
        shape = tuple(self.shape[:-1]) + (other.shape[1],)
        if a == (Replicate(),) and b == (Replicate(),):
            out, pl = x @ w, (Replicate(),)
        elif a == (Replicate(),) and b == (Shard(1),):
            out, pl = C.GradAllReduce.apply(x, mesh, (0,)) @ w, (Shard(last),)
        elif a == (Shard(last),) and b == (Shard(0),):
            out, pl = x @ w, (Partial(),)
        elif isinstance(a[0], Shard) and a[0].dim < last and b == (Replicate(),):
            out, pl = x @ C.GradAllReduce.apply(w, mesh, (0,)), a
        else:
            raise NotImplementedError(f"aten.mm on DTensors of placements {a} and {b} is not supported by rawdev's "
                                      f"DTensor: redistribute one of them (Replicate @ Shard(1), Shard(-1) @ "
                                      f"Shard(0), Shard(0) @ Replicate and Replicate @ Replicate are)")
        return DTensor._make(out, mesh, pl, shape)

    @staticmethod
    def _clip_grad_norm_sharded(parameters: list[Any], max_norm: Any, norm_type: Any,
                                error_if_nonfinite: bool) -> DTensor:
        """nn.utils.clip_grad_norm_ over parameters some of which are DTensors: each gradient's p-norm is
        reduced over the mesh dimensions it is sharded on (Partial sum of |g|^p, or max for inf), the total is
        replicated, and every local gradient is scaled by min(max_norm / (total + 1e-6), 1). Returns the total
        as a Replicate DTensor (a collective: every rank calls it)."""
        from ...nn.utils.clip_grad import clip_grads_with_norm_, get_total_norm
        p = float(norm_type)
        mesh = next(q.device_mesh for q in parameters if isinstance(q, DTensor))
        locals_: list[Any] = []
        acc: Any = None
        for q in parameters:
            g = q.grad
            if g is None:
                continue
            local_g = g.to_local() if isinstance(g, DTensor) else g
            n = get_total_norm([local_g], p)
            term = n if p == float("inf") else n ** p
            if isinstance(g, DTensor):
                if g.device_mesh != mesh:
                    raise NotImplementedError("clip_grad_norm_ over DTensor parameters on different meshes is not "
                                              "supported by rawdev")
                pl = [Partial("max" if p == float("inf") else "sum") if isinstance(x, Shard) else Replicate()
                      for x in g.placements]
                term = DTensor._make(term, mesh, tuple(pl), ()).full_tensor()
            if acc is None:
                acc = term
            else:
                acc = acc.maximum(term.to(acc.device)) if p == float("inf") else acc + term.to(acc.device)
            locals_.append(q.to_local() if isinstance(q, DTensor) else q)
        total = acc if p == float("inf") else acc ** (1.0 / p)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                               "so it cannot be clipped. To disable this error and scale the gradients by the "
                               "non-finite norm anyway, set `error_if_nonfinite=False`")
        clip_grads_with_norm_(locals_, max_norm, total)
        return DTensor._make(total, mesh, (Replicate(),) * mesh.ndim, ())

    @classmethod
    def _as_parameter(cls, data: DTensor, requires_grad: bool) -> DTensor:
        return _DTensorParameter._wrap(data, requires_grad)


class _DTensorParameter(DTensor, Parameter):
    """nn.Parameter(dtensor): a DTensor that modules register as a parameter (its local tensor is the leaf that
    accumulates the gradient)."""

    __slots__ = ()

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Any:
        return cls._wrap(data, requires_grad)

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        pass        # _wrap made it

    @classmethod
    def _wrap(cls, data, requires_grad):
        local = data.to_local().detach()
        local.requires_grad = requires_grad
        return cls._make(local, data.device_mesh, data.placements, data.shape, data.stride())

    def __repr__(self) -> str:
        return "Parameter containing:\n" + DTensor.__repr__(self)


def _op_name():
    """The rawdev op a caller ran into with a DTensor: an op record (a local of rawdev.ops code that has a
    `name`) on the way, else the name of the rawdev function the user's code called."""
    f = sys._getframe(2)
    record = outer = None
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not mod.startswith("rawdev.") or mod.startswith("rawdev.distributed.tensor.parallel"):
            break
        outer = f.f_code.co_name
        if mod.startswith("rawdev.ops") and isinstance(f.f_locals.get("name"), str):
            outer = f.f_locals["name"]     # a public op's wrapper (autocast's) knows the op's name
        for v in f.f_locals.values():
            if type(v).__module__.startswith("rawdev.ops") and isinstance(getattr(v, "name", None), str):
                record = v.name
        f = f.f_back
    return outer if outer not in (None, "op") else (record or "this op")


def _unsupported_message(op, t):
    return (f"{op}: rawdev's DTensor has no sharding rule for it on placements {t.placements} (global shape "
            f"{tuple(t.shape)}). DTensor computes elementwise ops and activations on equal placements, sum/mean, "
            f"and matmul for tensor-parallel layouts; call .full_tensor() or .to_local() and use plain tensors "
            f"for the rest")


def _refuse(name):
    def method(self, *args, **kwargs):
        raise NotImplementedError(_unsupported_message(f"Tensor.{name}", self))
    method.__name__ = name
    return method


# every other Tensor method would run on storage a DTensor does not have: each says so by name
_KEEP = {"requires_grad_", "is_floating_point", "element_size", "nelement", "type", "get_device", "is_complex",
         "dim_order", "register_hook", "is_contiguous", "__hash__", "__repr__", "__format__", "__init__",
         "__new__", "__getattr__", "__reduce_ex__", "__reduce__", "__sizeof__", "__init_subclass__",
         "__class__", "__setattr__", "__delattr__", "__getattribute__", "__dir__", "__subclasshook__", "__str__",
         "__bool__", "__len__", "__iter__", "__deepcopy__", "__copy__", "__setstate__", "__getstate__"}
for _name in list(vars(Tensor)):
    if _name in _KEEP or _name in vars(DTensor) or not callable(getattr(Tensor, _name, None)):
        continue
    if isinstance(vars(Tensor)[_name], (staticmethod, classmethod, property)):
        continue
    if _name.startswith("_") and not (_name.startswith("__") and _name.endswith("__")):
        continue
    setattr(DTensor, _name, _refuse(_name))
del _name


def distribute_tensor(tensor: Tensor, device_mesh: DeviceMesh | None = None, placements: Any = None, *,
                      src_data_rank: int | None = 0) -> DTensor:
    """A leaf DTensor from a tensor every rank holds: the first rank of each mesh dimension's values are
    broadcast (Replicate) or cut into chunks (Shard), as PyTorch's distribute_tensor.

    Args:
        tensor: the full tensor (same shape on every rank); moved to the mesh's device type if elsewhere.
        device_mesh: the mesh (default: the one of an enclosing `with mesh:`).
        placements: one per mesh dimension (default: Replicate on each).
        src_data_rank: 0 (the first rank's data is used), or None to use each rank's own tensor as it is.

    Returns:
        The DTensor (requires_grad as `tensor`).

    Example:
        >>> d = distribute_tensor(torch.randn(4, 6), mesh, [Shard(1)])
    """
    if isinstance(tensor, DTensor):
        raise ValueError("distribute_tensor: the tensor is already a DTensor; use redistribute() to change it")
    mesh = _mesh_of(device_mesh)
    pl = _norm_placements(placements, mesh, tensor.ndim)
    for i, p in enumerate(pl):
        if isinstance(p, Partial):
            raise RuntimeError(f"Trying to distribute tensor with unsupported placements {p!r} on device mesh "
                               f"dimension {i}!")
    with no_grad():
        full = tensor.detach()
        if full.device.type != mesh.device_type:       # as PyTorch: the shards live on the mesh's device type
            full = full.to(mesh.device_type)
        full = full.contiguous().clone()
        if src_data_rank is not None:
            for i in range(mesh.ndim):
                dist.broadcast(full, group=mesh.get_group(i), group_src=0)
        local = C.transition(full, mesh, (Replicate(),) * mesh.ndim, pl, tuple(tensor.shape))
        local = local if local is not full else full
    local.requires_grad = tensor.requires_grad
    return DTensor._make(local, mesh, pl, tuple(tensor.shape))


def distribute_module(module: Any, device_mesh: DeviceMesh | None = None, partition_fn: Any = None,
                      input_fn: Any = None, output_fn: Any = None) -> Any:
    """Put a module's parameters on a mesh: partition_fn(name, submodule, mesh) for each submodule (it may set
    DTensor parameters), then every parameter that is still a plain tensor becomes a Replicate DTensor;
    input_fn(module, inputs, mesh) and output_fn(module, outputs, mesh) become forward pre/post hooks.

    Args:
        module: the nn.Module (changed in place).
        device_mesh: the mesh (default: the one of an enclosing `with mesh:`).
        partition_fn: called for every submodule (default: replicate all parameters).
        input_fn: converts the forward's inputs.
        output_fn: converts the forward's outputs.

    Returns:
        The module.
    """
    mesh = _mesh_of(device_mesh)
    for name, sub in module.named_modules():
        if partition_fn is not None:
            partition_fn(name, sub, mesh)
        for key, p in list(sub._parameters.items()):
            if p is not None and not isinstance(p, DTensor):
                rep = distribute_tensor(p.detach(), mesh, [Replicate()] * mesh.ndim)
                sub.register_parameter(key, _DTensorParameter._wrap(rep, p.requires_grad))
    if input_fn is not None:
        module.register_forward_pre_hook(lambda mod, inputs: input_fn(mod, inputs, mesh))
    if output_fn is not None:
        module.register_forward_hook(lambda mod, inputs, outputs: output_fn(mod, outputs, mesh))
    return module
