"""Which of rawdev's files one op call passes through, from the public function to the kernel launch.

The call runs once to warm up (kernels loaded, caches filled), then once under a profile hook that records each
Python function entered in rawdev's own files, outside the simulator (rawdev/sim) and the driver seam
(runtime/seam.py): what rawdev itself runs on the way to the driver. It prints the distinct files, the number of
times the path moves from one file to another, and the same two figures for the op layers alone (rawdev/ops and
rawdev/autograd), with the order in which those are entered.

    python tools/op_path.py                     # F.conv2d on a [1, 3, 8, 8] input, 4 filters 3x3, on cuda
    python tools/op_path.py --op add            # a + b on [1, 128]
    python tools/op_path.py --op linear --device cpu
"""
import argparse
import os
import sys


def _case(name, torch, dev):
    import rawdev.nn.functional as F
    if name == "conv2d":
        x, w = torch.randn(1, 3, 8, 8).to(dev), torch.randn(4, 3, 3, 3).to(dev)
        return lambda: F.conv2d(x, w)
    if name == "add":
        a, b = torch.randn(1, 128).to(dev), torch.randn(1, 128).to(dev)
        return lambda: a + b
    if name == "linear":
        x, w, b = torch.randn(32, 128).to(dev), torch.randn(128, 128).to(dev), torch.randn(128).to(dev)
        return lambda: F.linear(x, w, b)
    raise SystemExit(f"unknown op {name!r} (conv2d, add, linear)")


def trace(fn, root):
    """The rawdev files (relative to root) entered during fn(), one entry per move from one file to another."""
    seq = []

    def hook(frame, event, arg):
        if event != "call":
            return
        f = frame.f_code.co_filename
        if not f.startswith(root):
            return
        rel = f[len(root):]
        if rel.startswith("sim/") or rel == "runtime/seam.py":
            return
        if not seq or seq[-1] != rel:
            seq.append(rel)

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seq


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--op", default="conv2d")
    ap.add_argument("--device", default="cuda", choices=["cpu", "cuda"])
    args = ap.parse_args()
    import rawdev
    if args.device == "cuda" and not os.environ.get("RAWDEV_DRIVER"):
        rawdev.use_driver("sim")
    fn = _case(args.op, rawdev, args.device)
    fn()
    seq = trace(fn, os.path.dirname(rawdev.__file__) + os.sep)
    layers = [s for s in seq if s.startswith(("ops/", "autograd/"))]
    moves = [s for i, s in enumerate(layers) if i == 0 or layers[i - 1] != s]
    print(f"{args.op} on {args.device}: {len(set(seq))} rawdev files, {len(seq)} file entries")
    print(f"ops + autograd: {len(set(layers))} files, {len(moves)} entries")
    print("  " + " -> ".join(moves))
    print("files: " + ", ".join(sorted(set(seq))))


if __name__ == "__main__":
    main()
