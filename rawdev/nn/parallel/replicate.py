"""`torch.nn.parallel.replicate`: one copy of a module per device. The copies share nothing with the original's
storage except on devices[0] (where, as in PyTorch, parameters are aliases and buffers the same tensors), but keep
autograd to it: a replica's parameters are non-leaf tensors made from the original Parameters (a view on
devices[0], a copy elsewhere), so backward through any replica accumulates into the original `.grad`, summed
over replicas, as PyTorch's Broadcast does."""
from collections import OrderedDict

from ._devices import as_torch_device, device_index

__all__ = ["replicate"]


def _broadcast(tensors, devices, detach, same_on_first=False):
    """For each device, a copy of every tensor there: differentiable unless detach. same_on_first: the
    tensors themselves on devices[0] (PyTorch's broadcast_coalesced hands back its inputs there)."""
    for t in tensors:
        if t.device.type == "cpu":
            raise AssertionError("Broadcast function not implemented for CPU tensors")
        if t.device.index != devices[0]:
            raise RuntimeError(f"replicate: every parameter and buffer must be on devices[0] (cuda:{devices[0]}), "
                               f"found one on {t.device}")
    copies = []
    for i, d in enumerate(devices):
        target = as_torch_device(d)
        if detach:
            copies.append([(t if same_on_first else t.detach()) if i == 0 else t.detach().to(target)
                           for t in tensors])
        else:   # on devices[0] an alias with a grad_fn, elsewhere a copy whose backward brings the gradient back
            copies.append([t.view_as(t) if i == 0 else t.to(target) for t in tensors])
    return copies


def _replica_of(module):
    """PyTorch's Module._replicate_for_data_parallel: the same attributes, no parameters of its own."""
    replica = module.__new__(type(module))
    replica.__dict__ = module.__dict__.copy()
    replica.__dict__["_parameters"] = OrderedDict()
    replica.__dict__["_buffers"] = replica._buffers.copy()
    replica.__dict__["_modules"] = replica._modules.copy()
    replica.__dict__["_is_replica"] = True
    replica.__dict__["_former_parameters"] = OrderedDict()
    return replica


def replicate(network, devices, detach=False):
    """Copies of `network`, one per device, for running it on several devices at once.

    Args:
        network: the module (its parameters and buffers on devices[0]).
        devices: the devices (ints, "cuda:i" strings or devices).
        detach: no autograd to the original parameters (PyTorch's DataParallel passes
            `not torch.is_grad_enabled()`).

    Returns:
        A list of modules, replica i on devices[i]. Their parameters are plain tensors (a replica's
        parameters() is empty, as in PyTorch); gradients flow to network's parameters.

    Example:
        >>> r0, r1 = nn.parallel.replicate(model, [0, 1])
        >>> (r0(x0).sum() + r1(x1).sum().to("cuda:0")).backward()   # model's .grad holds both
    """
    if not devices:
        return []
    devices = [device_index(d, True) for d in devices]
    n = len(devices)
    params = list(network.parameters())
    param_indices = {id(p): i for i, p in enumerate(params)}
    param_copies = _broadcast(params, devices, detach)
    buffers = list(network.buffers())
    buffer_indices = {}
    rg, not_rg = [], []
    for b in buffers:
        group = rg if b.requires_grad and not detach else not_rg
        buffer_indices[id(b)] = (group is rg, len(group))
        group.append(b)
    copies_rg = _broadcast(rg, devices, detach)
    copies_not_rg = _broadcast(not_rg, devices, True, same_on_first=True)

    modules = list(network.modules())
    module_indices = {id(m): i for i, m in enumerate(modules)}
    module_copies = [[_replica_of(m) for m in modules] for _ in range(n)]
    for i, module in enumerate(modules):
        for key, child in module._modules.items():
            for j in range(n):
                copy = None if child is None else module_copies[j][module_indices[id(child)]]
                module_copies[j][i]._modules[key] = copy
        for key, param in module._parameters.items():
            for j in range(n):
                replica = module_copies[j][i]
                if param is None:
                    replica._parameters[key] = None
                    continue
                # not a Parameter: a replica's parameters are views of the original's, not leaves of their own
                copy = param_copies[j][param_indices[id(param)]]
                object.__setattr__(replica, key, copy)
                replica._former_parameters[key] = copy
        for key, buf in module._buffers.items():
            for j in range(n):
                if buf is None:
                    module_copies[j][i]._buffers[key] = None
                    continue
                is_rg, idx = buffer_indices[id(buf)]
                module_copies[j][i]._buffers[key] = (copies_rg if is_rg else copies_not_rg)[j][idx]
    return [module_copies[j][0] for j in range(n)]
