#!/usr/bin/env python3
"""Peak device memory of one training step of a transformer block (TransformerEncoderLayer + head, forward,
cross-entropy, backward) under bfloat16 autocast vs float32, from rawdev.cuda's memory statistics
(reset_peak_memory_stats / max_memory_allocated).

The figure reported is the peak above the memory held before the step (parameters, their gradients from a warm-up
step, the batch): the activations and temporaries of forward and backward. --quick: a small block so it runs on the
simulator (RAWDEV_DRIVER=sim). --json: one JSON line per measurement.

While the cuda kernels compute 16-bit tensors by widening them to float32 around each launch
(rawdev/ops/opmath.py), autocast adds the cast copies to the peak instead of halving it: this script measures what
that costs today, and what native half kernels will save.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def step_peak(d_model, nhead, ff, batch, seq, vocab, amp_dtype):
    import rawdev as torch
    from rawdev import nn
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
    step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small block (d_model 64, batch 4, seq 16): simulator")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import rawdev as torch
    shape = dict(d_model=64, nhead=4, ff=256, batch=4, seq=16, vocab=64) if args.quick else \
        dict(d_model=512, nhead=8, ff=2048, batch=16, seq=256, vocab=1024)
    f32 = step_peak(**shape, amp_dtype=None)
    bf16 = step_peak(**shape, amp_dtype=torch.bfloat16)
    rows = [("float32", f32), ("bfloat16 autocast", bf16)]
    for name, peak in rows:
        if args.json:
            print(json.dumps({"bench": "autocast_memory", "mode": name, "peak_bytes": peak, **shape}))
        else:
            print(f"{name:18s} peak activation memory {peak:>12,d} B")
    if not args.json:
        print(f"ratio bfloat16 / float32: {bf16 / f32:.3f}  ({shape})")


if __name__ == "__main__":
    main()
