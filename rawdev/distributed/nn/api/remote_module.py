"""`torch.distributed.nn.api.remote_module.RemoteModule`: an nn.Module created on another RPC worker.

``RemoteModule("ps/cpu", nn.EmbeddingBag, args=(100, 16), kwargs={"mode": "sum"})`` builds the module on worker
"ps" (an ``rpc.remote`` call: the class travels by reference, its arguments as data) and keeps the RRef. ``forward``
runs it there through ``rpc_sync`` (``forward_async`` through ``rpc_async``), so under distributed autograd the
gradient of its output reaches its parameters on the owner; ``remote_parameters()`` gives RRefs of them for a
DistributedOptimizer. A RemoteModule can itself be sent in an RPC (it travels as its RRef and device). As in
PyTorch, the local nn.Module methods that would need the parameters here (``parameters``, ``to``, ``state_dict``,
...) raise.
"""
from __future__ import annotations

from typing import Any

from ....nn.module import Module
from ...rpc import agent as _agent

__all__ = ["RemoteModule"]


def _create(module_cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], device: str) -> Any:
    """Runs on the owner: the module, on its device."""
    return module_cls(*args, **kwargs).to(device)


def _forward(module_rref: Any, device: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Runs on the owner: the module's forward, inputs moved to its device and outputs back to the cpu (RPC
    carries cpu tensors)."""
    from ....tensor import Tensor

    def to(x: Any, where: str) -> Any:
        if isinstance(x, Tensor):
            return x.to(where)
        if isinstance(x, (tuple, list)):
            return type(x)(to(v, where) for v in x)
        if isinstance(x, dict):
            return {k: to(v, where) for k, v in x.items()}
        return x
    out = module_rref.local_value()(*to(args, device), **to(kwargs, device))
    return to(out, "cpu") if device != "cpu" else out


def _param_rrefs(module_rref: Any, recurse: bool) -> list[Any]:
    """Runs on the owner: an RRef per parameter of the module."""
    from ...rpc import RRef
    return [RRef(p) for p in module_rref.local_value().parameters(recurse)]


def _parse(remote_device: str) -> tuple[str, str]:
    parts = remote_device.split("/")
    if len(parts) > 2 or not parts[0]:
        raise ValueError(f"Could not parse remote_device: {remote_device}. The valid format is "
                         f"'<workername>/<device>' or 'rank:<rank>/<device>'")
    return parts[0], parts[1] if len(parts) == 2 else "cpu"


_NOT_HERE = ("Method ``{}`` not supported for RemoteModule")


class RemoteModule(Module):
    """A module living on another RPC worker.

    Args:
        remote_device: "<worker name>/<device>" (or "rank:<n>/<device>"; the device defaults to "cpu").
        module_cls: the nn.Module class to create there (sent by reference: importable on that worker).
        args: its positional arguments.
        kwargs: its keyword arguments.

    Example:
        >>> emb = RemoteModule("ps", nn.EmbeddingBag, args=(100, 16), kwargs={"mode": "sum"})
        >>> out = emb.forward(indices, offsets)          # runs on "ps"
        >>> opt = DistributedOptimizer(optim.SGD, emb.remote_parameters(), lr=0.05)
    """

    def __init__(self, remote_device: str, module_cls: Any, args: tuple[Any, ...] | None = None,
                 kwargs: dict[str, Any] | None = None, _module_interface_cls: Any = None) -> None:
        super().__init__()
        from ...rpc import remote
        worker, device = _parse(remote_device)
        if worker.startswith("rank:"):
            worker = int(worker.split(":", 1)[1])   # type: ignore[assignment]
        self.on, self.device = worker, device
        self.is_device_map_set = False
        self.module_rref = remote(worker, _create, args=(module_cls, tuple(args or ()), dict(kwargs or {}), device))

    @classmethod
    def _from_wire(cls, module_rref: Any, device: str) -> RemoteModule:
        """The RemoteModule an RPC carried (its RRef and device), as PyTorch's init_from_module_rref."""
        self = cls.__new__(cls)
        Module.__init__(self)
        self.module_rref, self.device = module_rref, device
        self.on = module_rref.owner_name()
        self.is_device_map_set = False
        return self

    @classmethod
    def init_from_module_rref(cls, remote_device: str, module_rref: Any, _module_interface_cls: Any = None
                              ) -> RemoteModule:
        """A RemoteModule over a module that already lives on its owner (an RRef of it)."""
        return cls._from_wire(module_rref, _parse(remote_device)[1])

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """Run the module's forward on its owner and return the output."""
        from ...rpc import rpc_sync
        return rpc_sync(self.module_rref.owner(), _forward, args=(self.module_rref, self.device, args, kwargs))

    def forward_async(self, *args: Any, **kwargs: Any) -> Any:
        """Run the module's forward on its owner; returns a Future of the output."""
        from ...rpc import rpc_async
        return rpc_async(self.module_rref.owner(), _forward, args=(self.module_rref, self.device, args, kwargs))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def remote_parameters(self, recurse: bool = True) -> list[Any]:
        """RRefs of the module's parameters on its owner (for DistributedOptimizer)."""
        from ...rpc import rpc_sync
        return rpc_sync(self.module_rref.owner(), _param_rrefs, args=(self.module_rref, recurse))

    def get_module_rref(self) -> Any:
        """The RRef of the module on its owner."""
        return self.module_rref

    def __repr__(self) -> str:
        return f"RemoteModule(on={self.on!r}, device={self.device!r})"


def _refuse(name: str) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise ValueError(_NOT_HERE.format(name))
    method.__name__ = name
    return method


for _name in ("register_buffer", "register_parameter", "add_module", "apply", "cuda", "ipu", "xpu", "cpu", "type",
              "float", "double", "half", "bfloat16", "to", "register_backward_hook", "register_forward_pre_hook",
              "register_forward_hook", "state_dict", "load_state_dict", "parameters", "named_parameters", "buffers",
              "named_buffers", "children", "named_children", "modules", "named_modules", "requires_grad_",
              "zero_grad", "share_memory", "extra_repr"):
    setattr(RemoteModule, _name, _refuse(_name))

_agent.REMOTE_MODULE_CLASS[0] = RemoteModule
