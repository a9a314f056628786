"""The `rawdev` command: demo, kernels, mem, selfcheck."""
import argparse
import os
import sys


def selfcheck(args):
    """Runtime self-check: open the device, copy bytes both ways, launch a kernel, check the result."""
    import numpy as np

    from . import cuda
    from .runtime import get_device, kernels, memory, seam, trace
    if args.device == "sim":
        seam.use_driver("sim")
    elif args.device == "cuda":
        seam.use_driver("cuda")   # no GPU: NoDriverError / NoDeviceError, one line, as for any explicit choice
    elif not cuda.is_available():
        print("No CUDA GPU found: running on rawdev's simulated GPU (it executes the same PTX).")
        seam.use_driver("sim")
    dev = get_device(0)
    print(f"driver: {seam.driver_name()}  device: {dev} {dev.name} (sm_{dev.capability[0]}{dev.capability[1]})")
    n = 1000
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    y = np.random.default_rng().standard_normal(n).astype(np.float32)
    with trace() as t:
        bx, by = memory.DeviceBuffer.alloc(dev, 4 * n, owner="x"), memory.DeviceBuffer.alloc(dev, 4 * n, owner="y")
        memory.copy_htod(bx.ptr, x, 4 * n, owner="x")
        memory.copy_htod(by.ptr, y, 4 * n, owner="y")
        kernels.get_kernel(dev, "saxpy").launch((n + 255) // 256, 256, [by.ptr, bx.ptr, 2.0, n])
        out = np.empty_like(y)
        dev.synchronize()
        memory.copy_dtoh(out, by.ptr, 4 * n, owner="y")
    print(t)
    err = np.abs(out - (2.0 * x.astype(np.float64) + y)).max()
    print(f"saxpy on {n} floats: max abs error {err:.2e}", "OK" if err < 1e-5 else "FAILED")
    return 0 if err < 1e-5 else 1


def list_kernels(args):
    """Print every shipped kernel with its signature (from the manifest), grouped by PTX file."""
    from .runtime import kernels
    last = None
    for name, (fname, params, doc) in sorted(kernels.manifest().items(), key=lambda kv: (kv[1][0], kv[0])):
        if fname != last:
            print(f"\n{fname}")
            last = fname
        print(f"  {name}(" + ", ".join(f"{t} {n}" for n, t in params) + ")")
        if args.verbose and doc:
            print(f"      {doc}")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="rawdev", description="What model.cuda() really does, on the CUDA driver API.")
    sub = p.add_subparsers(dest="cmd", required=True)
    from .demo import add_parser as add_demo
    from .memtool.cli import add_parser as add_mem
    add_demo(sub)
    k = sub.add_parser("kernels", help="list the shipped PTX kernels and their signatures")
    k.add_argument("-v", "--verbose", action="store_true", help="also print each kernel's doc line")
    k.set_defaults(fn=list_kernels)
    add_mem(sub)
    c = sub.add_parser("selfcheck", help="open the device, copy both ways, launch one kernel, check the result")
    c.add_argument("--device", choices=["auto", "cuda", "sim"], default="auto",
                   help="auto (default: the GPU, else the simulator), cuda or sim")
    c.set_defaults(fn=selfcheck)
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except BrokenPipeError:   # `rawdev kernels | head`: the reader left early; no traceback for that
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
