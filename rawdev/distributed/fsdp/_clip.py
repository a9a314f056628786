"""FSDP's clip_grad_norm_: the total norm over every rank's gradient shards (each element is held by exactly one
rank, so the p-th powers add up across ranks; replicated gradients count once), then one scale for all."""
import math

from ... import distributed as dist


def clip_grad_norm(root, max_norm, norm_type):
    norm_type = float(norm_type)
    sharded_ids = {id(u._flat_param) for u in root._units() if u._flat_param is not None and u._world() > 1}
    sharded, replicated = [], []
    for p in root.parameters():
        if p.grad is not None:
            (sharded if id(p) in sharded_ids else replicated).append(p.grad.detach())
    grads = sharded + replicated
    like = sharded[0] if sharded else (replicated[0] if replicated else None)
    if like is None:
        from ...tensor.factory import tensor
        return tensor(0.0)
    if math.isinf(norm_type):
        local = max([float(g.abs().max().item()) for g in sharded if g.numel()] or [0.0])
        t = like.new_tensor([local]).float()
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=root.process_group)
        total = max([float(t.item())] + [float(g.abs().max().item()) for g in replicated if g.numel()])
    else:
        local = sum(float(g.float().abs().pow(norm_type).sum().item()) for g in sharded)
        t = like.new_tensor([local]).float()
        dist.all_reduce(t, group=root.process_group)
        total = float(t.item()) + sum(float(g.float().abs().pow(norm_type).sum().item()) for g in replicated)
        total = total ** (1.0 / norm_type)
    coef = min(float(max_norm) / (total + 1e-6), 1.0)
    for g in grads:
        g.mul_(coef)
    return like.new_tensor(total).float()
