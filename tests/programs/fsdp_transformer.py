"""Fully sharded data parallel training of a small transformer language model, in the style of PyTorch's FSDP T5
example: mp.spawn starts one process per rank, each block becomes its own FSDP unit through
transformer_auto_wrap_policy and is activation-checkpointed (apply_activation_checkpointing), AdamW steps on the
shards, and the checkpoint is the FULL state dict gathered to rank 0 on the cpu plus the full optimizer state; a
fresh model loads it on rank 0 before wrapping, sync_module_states gives it to every rank,
scatter_full_optim_state_dict shards the optimizer state, and training resumes exactly."""
import functools
import os
import socket

import rawdev as torch
import rawdev.distributed as dist
import rawdev.multiprocessing as mp
import rawdev.nn as nn
import rawdev.nn.functional as F
from rawdev.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    CheckpointImpl,
    apply_activation_checkpointing,
    checkpoint_wrapper,
)
from rawdev.distributed.fsdp import BackwardPrefetch, FullStateDictConfig, ShardingStrategy, StateDictType
from rawdev.distributed.fsdp import FullyShardedDataParallel as FSDP
from rawdev.distributed.fsdp.wrap import transformer_auto_wrap_policy

VOCAB, DIM, HEADS, LAYERS, SEQ, BATCH = 16, 32, 4, 2, 12, 8
STEPS = 25


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(DIM)
        self.attn = nn.MultiheadAttention(DIM, HEADS, batch_first=True)
        self.ln2 = nn.LayerNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.randn(SEQ, DIM) * 0.02)
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, idx):
        mask = torch.triu(torch.full((idx.shape[1], idx.shape[1]), float("-inf"), device=idx.device), diagonal=1)
        x = self.tok(idx) + self.pos[: idx.shape[1]]
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln_f(x))


def batch(rank, step, device):
    # sequences that count up by a per-sequence stride: the next token follows from the two before it
    g = torch.Generator().manual_seed(1000 * rank + step)
    start = torch.randint(0, VOCAB, (BATCH, 1), generator=g)
    stride = torch.randint(1, 4, (BATCH, 1), generator=g)
    seq = (start + stride * torch.arange(SEQ + 1)) % VOCAB
    return seq[:, :-1].to(device), seq[:, 1:].to(device)


def train_step(model, opt, rank, step, device):
    x, y = batch(rank, step, device)
    opt.zero_grad()
    loss = F.cross_entropy(model(x).reshape(-1, VOCAB).float(), y.reshape(-1))
    loss.backward()
    model.clip_grad_norm_(1.0)
    opt.step()
    # the loss averaged over ranks, as the example reports it
    total = loss.detach().reshape(1).clone()
    dist.all_reduce(total, op=dist.ReduceOp.AVG)
    return float(total.item())


def wrap(model, device, **kwargs):
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
    model = FSDP(model.to(device), auto_wrap_policy=policy, sharding_strategy=ShardingStrategy.FULL_SHARD,
                 backward_prefetch=BackwardPrefetch.BACKWARD_PRE, limit_all_gathers=True, **kwargs)
    # as the example's apply_fsdp_checkpointing: each block recomputes its activations in backward
    non_reentrant = functools.partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT)
    apply_activation_checkpointing(model, checkpoint_wrapper_fn=non_reentrant,
                                   check_fn=lambda m: isinstance(m, Block))
    return model


def fsdp_main(rank, world_size, use_cuda, ckpt_dir):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size))
    dist.init_process_group("nccl" if use_cuda else "gloo", rank=rank, world_size=world_size)
    device = torch.device("cuda", rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(rank)
    torch.manual_seed(0)
    model = wrap(TinyLM(), device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = [train_step(model, opt, rank, step, device) for step in range(STEPS)]

    # checkpoint: the unsharded model on rank 0's cpu, and the full optimizer state
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
        cpu_state = model.state_dict()
    full_osd = FSDP.full_optim_state_dict(model, opt)
    if rank == 0:
        torch.save(cpu_state, os.path.join(ckpt_dir, "model.pt"))
        torch.save(full_osd, os.path.join(ckpt_dir, "optim.pt"))
    dist.barrier()

    # resume: rank 0 loads into a fresh model before wrapping; sync_module_states hands it to the other ranks
    torch.manual_seed(1)
    fresh = TinyLM()
    if rank == 0:
        fresh.load_state_dict(torch.load(os.path.join(ckpt_dir, "model.pt")))
    resumed = wrap(fresh, device, sync_module_states=True)
    saved_osd = torch.load(os.path.join(ckpt_dir, "optim.pt")) if rank == 0 else None
    opt2 = torch.optim.AdamW(resumed.parameters(), lr=3e-3)
    opt2.load_state_dict(FSDP.scatter_full_optim_state_dict(saved_osd, resumed))
    after = [train_step(model, opt, rank, STEPS + i, device) for i in range(2)]
    after_resumed = [train_step(resumed, opt2, rank, STEPS + i, device) for i in range(2)]
    err = max(abs(a - b) for a, b in zip(after, after_resumed))
    if rank == 0:
        with open(os.path.join(ckpt_dir, "result.txt"), "w") as f:
            f.write(f"{sum(losses[:3]) / 3} {sum(losses[-3:]) / 3} {err} {len(cpu_state)}")
    dist.destroy_process_group()


def main():
    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= 2
    world_size = 2
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    ckpt_dir = os.path.abspath("fsdp_ckpt")
    os.makedirs(ckpt_dir, exist_ok=True)
    print(f"Using device: {'cuda' if use_cuda else 'cpu'}")
    mp.spawn(fsdp_main, args=(world_size, use_cuda, ckpt_dir), nprocs=world_size, join=True)
    with open(os.path.join(ckpt_dir, "result.txt")) as f:
        first, last, err, n_keys = f.read().split()
    print(f"RESULT first_loss={float(first):.4f} last_loss={float(last):.4f} resume_err={float(err):.3g} "
          f"state_keys={n_keys}")


if __name__ == "__main__":
    main()
