#!/usr/bin/env python3
"""Peak device memory of one training step of a transformer block (TransformerEncoderLayer + head, forward,
cross-entropy, backward) under bfloat16 autocast vs float32, from rawdev.cuda's memory statistics
(reset_peak_memory_stats / max_memory_allocated).

The figure reported is the peak above the memory held before the step (parameters, their gradients from a warm-up
step, the batch): the activations and temporaries of forward and backward. --quick: a small block so it runs on the
simulator (RAWDEV_DRIVER=sim); --activations: a small block whose activations outweigh its weights (d_model 32,
batch 8, seq 64), also for the simulator. --owners: the live blocks at each peak, summed by owner name (what the
allocator tagged them with). --json: one JSON line per measurement.

While the cuda kernels compute 16-bit tensors by widening them to float32 around each launch
(rawdev/ops/opmath.py), the float32 copies of an op's operands and its float32 results are alive at once around
each launch, on top of the 16-bit activations saved for backward: this script measures what that costs, and what
native half kernels will save (docs/INTERNALS.md, "Peak memory under bfloat16 autocast").
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def step_peak(d_model, nhead, ff, batch, seq, vocab, amp_dtype, owners=None, events=None):
    """Peak bytes above the step's starting point; owners (a dict) receives {owner: bytes} live at the peak, events
    (a list) each allocation and free of the step as (+nbytes or -nbytes, the block's owner when it was freed)."""
    import rawdev as torch
    from rawdev import nn
    from rawdev.runtime import get_device
    torch.manual_seed(0)
    block = nn.TransformerEncoderLayer(d_model, nhead, ff, dropout=0.0, batch_first=True).cuda()
    head = nn.Linear(d_model, vocab).cuda()
    x = torch.randn(batch, seq, d_model).cuda()
    y = torch.randint(0, vocab, (batch * seq,)).cuda()

    def step():
        with torch.autocast("cuda", dtype=amp_dtype or torch.bfloat16, enabled=amp_dtype is not None):
            loss = nn.functional.cross_entropy(head(block(x)).reshape(-1, vocab), y)
        loss.backward()

    step()                                   # warm-up: kernels loaded, gradients allocated
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    al = get_device(0).allocator
    mine, top = {}, [0]

    def watch(kind, block):   # the blocks this step made, and their owners when the total is at its highest
        if kind == "alloc":
            mine[block.ptr] = block
            if events is not None:
                events.append([block.nbytes, block])
            if owners is not None and al.stats["allocated"] > top[0]:
                top[0] = al.stats["allocated"]
                owners.clear()
                for b in mine.values():
                    owners[b.owner] = owners.get(b.owner, 0) + b.nbytes
        elif kind == "free":
            if mine.pop(block.ptr, None) is not None and events is not None:
                events.append([-block.nbytes, block])
    al.listeners.append(watch)
    try:
        step()
        torch.cuda.synchronize()
    finally:
        al.listeners.remove(watch)
    if events is not None:   # owners as the blocks ended: opmath renames a float32 result when it rounds it
        events[:] = [(n, b.owner) for n, b in events]
    return torch.cuda.max_memory_allocated() - base


# Which of opmath's temporaries (rawdev/ops/opmath.py names them) a native 16-bit kernel would not make: its
# float32 operand copies and its float32 results before rounding.
NATIVE = {
    "GEMM": lambda o: o == "gemm float32 operand" or ("matmul output" in o and "before rounding" in o),
    "SDPA": lambda o: o.startswith("sdpa_") or ("attention" in o and "before rounding" in o),
    "every op": lambda o: o.endswith("float32 operand") or "before rounding" in o,
}


def peak_without(events, skip):
    """The peak of the recorded step had the blocks whose owner skip() accepts never been allocated."""
    cur = top = 0
    for n, owner in events:
        if not skip(owner):
            cur += n
            top = max(top, cur)
    return top


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small block (d_model 64, batch 4, seq 16): simulator")
    ap.add_argument("--activations", action="store_true",
                    help="a small activation-dominated block (d_model 32, batch 8, seq 64): simulator")
    ap.add_argument("--owners", action="store_true", help="the live blocks at each peak, by owner")
    ap.add_argument("--native", action="store_true",
                    help="also the bf16 peak without opmath's float32 temporaries of GEMM, SDPA, every op: what "
                         "native 16-bit kernels would leave")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import rawdev as torch
    shape = dict(d_model=64, nhead=4, ff=256, batch=4, seq=16, vocab=64) if args.quick else \
        dict(d_model=32, nhead=2, ff=64, batch=8, seq=64, vocab=32) if args.activations else \
        dict(d_model=512, nhead=8, ff=2048, batch=16, seq=256, vocab=1024)
    who32, who16 = {}, {}
    f32 = step_peak(**shape, amp_dtype=None, owners=who32)
    events = [] if args.native else None
    bf16 = step_peak(**shape, amp_dtype=torch.bfloat16, owners=who16, events=events)
    rows = [("float32", f32, who32), ("bfloat16 autocast", bf16, who16)]
    for name, peak, who in rows:
        if args.json:
            extra = {"owners": who} if args.owners else {}
            print(json.dumps({"bench": "autocast_memory", "mode": name, "peak_bytes": peak, **shape, **extra}))
            continue
        print(f"{name:18s} peak activation memory {peak:>12,d} B")
        if args.owners:
            for owner, n in sorted(who.items(), key=lambda kv: -kv[1]):
                print(f"    {n:>12,d} B  {owner}")
    if not args.json:
        print(f"ratio bfloat16 / float32: {bf16 / f32:.3f}  ({shape})")
    for name, skip in (NATIVE.items() if args.native else ()):
        peak = peak_without(events, skip)
        if args.json:
            print(json.dumps({"bench": "autocast_memory", "mode": f"bfloat16 autocast, native {name} kernels",
                              "peak_bytes": peak, **shape}))
        else:
            print(f"bfloat16 with native {name:8s} kernels: peak {peak:>10,d} B  ratio {peak / f32:.3f}")


if __name__ == "__main__":
    main()
