"""The `rawdev` command: demo, kernels, kernel-stats, mem, selfcheck, run."""
import argparse
import os
import sys

from .driver_choice import DEVICE_CHOICES, choose_driver  # noqa: F401  (choose_driver: also rawdev.cli's)


def selfcheck(args):
    """Runtime self-check: open the device, copy bytes both ways, launch a kernel, check the result."""
    import numpy as np

    from .runtime import get_device, kernels, memory, seam, trace
    choose_driver(args.device, "rawdev selfcheck",
                  "No CUDA GPU found: running on rawdev's simulated GPU (it executes the same PTX).", sys.stdout)
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


def kernel_stats(args):
    """Run a Python script on the simulated GPU and print, per kernel, what its launches executed."""
    import runpy

    from .sim import kernel_stats as collect
    choose_driver("sim", "rawdev kernel-stats")
    if not os.path.isfile(args.script):
        raise SystemExit(f"rawdev kernel-stats: no such file: {args.script}")
    argv, sys.argv = sys.argv, [args.script, *args.args]
    status = 0
    try:
        with collect() as ks:
            try:
                runpy.run_path(args.script, run_name="__main__")
            except SystemExit as e:   # the script's own exit: its status is ours, the table still prints
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = argv
    sys.stdout.flush()
    print(ks.table(per_launch=args.per_launch))
    return status


def _help(parser):
    """A command given without its subcommand prints its help (exit status 0)."""
    parser.print_help()
    return 0


def build_parser():
    """The `rawdev` argument parser (every command, option and argument carries help text)."""
    from . import __version__
    p = argparse.ArgumentParser(prog="rawdev", description="What model.cuda() really does, on the CUDA driver API.",
                                epilog="RAWDEV_DRIVER=cuda|sim|auto chooses the driver (default auto: the GPU if "
                                       "there is one); `rawdev COMMAND -h` explains a command.")
    p.add_argument("--version", action="version", version=f"rawdev {__version__}",
                   help="print rawdev's version and exit")
    p.set_defaults(fn=lambda args: _help(p))
    sub = p.add_subparsers(dest="cmd", title="commands", metavar="COMMAND")
    from .demo import add_parser as add_demo
    from .memtool.cli import add_parser as add_mem
    add_demo(sub)
    k = sub.add_parser("kernels", help="list the shipped PTX kernels and their signatures")
    k.add_argument("-v", "--verbose", action="store_true", help="also print each kernel's doc line")
    k.set_defaults(fn=list_kernels)
    ks = sub.add_parser("kernel-stats", help="run a script on the simulated GPU and print per-kernel statistics",
                        description="Run SCRIPT (with ARGS) on the simulated GPU and print, per kernel, the launches, "
                                    "warp-level instructions by class, global bytes read/written/atomic, shared-"
                                    "memory bank conflicts and divergence (partial/full block executions, active "
                                    "lane fraction). The counts are exact, so a change shows a change in a "
                                    "kernel's work (docs/KERNELS.md).")
    ks.add_argument("script", help="the Python script to run")
    ks.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    ks.add_argument("--per-launch", action="store_true", help="a row per launch instead of per kernel")
    ks.set_defaults(fn=kernel_stats)
    add_mem(sub)
    c = sub.add_parser("selfcheck", help="open the device, copy both ways, launch one kernel, check the result")
    c.add_argument("--device", choices=DEVICE_CHOICES, default="auto",
                   help="auto (default: RAWDEV_DRIVER if set, else the GPU, else the simulator), cuda or sim")
    c.set_defaults(fn=selfcheck)
    from .distributed.run import add_arguments as add_run_arguments
    from .distributed.run import launch
    r = sub.add_parser("run", help="start one process per rank of a distributed job (torchrun's flags)",
                       description="Start --nproc-per-node processes of SCRIPT with torchrun's environment (RANK, "
                                   "WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT); a rank that fails stops the "
                                   "others and its status and last lines are reported.")
    add_run_arguments(r)
    r.set_defaults(fn=launch)
    return p


def main(argv=None):
    p = build_parser()
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except BrokenPipeError:   # `rawdev kernels | head`: the reader left early; no traceback for that
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
