"""`rawdev mem info | model | run | show`: see GPU memory from the command line (GPU or simulator)."""
import os
import sys

from ..runtime.trace import fmt_bytes

DEVICE_HELP = "auto (default: RAWDEV_DRIVER if set, else the GPU if there is one, else the simulator), cuda or sim"


def add_parser(subparsers):
    p = subparsers.add_parser("mem", help="GPU memory: devices, a checkpoint on the device, snapshots of a script",
                              description=__doc__)
    p.set_defaults(fn=lambda args: (p.print_help(), 0)[1])
    sub = p.add_subparsers(dest="mem_cmd", title="commands", metavar="COMMAND")
    i = sub.add_parser("info", help="driver and devices: name, capability, free/total, pool figures",
                       description="The driver in use, each device's name, capability and free/total memory, and "
                                   "rawdev's pool figures.")
    i.add_argument("--device", default="auto", help=DEVICE_HELP)
    i.set_defaults(fn=cmd_info)
    m = sub.add_parser("model", help="load a checkpoint (safetensors or PyTorch .pt) to the device, print each "
                                     "tensor's placement, verify the device bytes against the file",
                       description="Load a checkpoint onto the device (one arena, one copy), print each tensor's "
                                   "address, arena offset and alignment, and compare the device bytes with the file "
                                   "(crc32; for a PyTorch .pt file or a nested training checkpoint, with the bytes "
                                   "rawdev.load reads to the host). Exit status 1 on a mismatch, 2 on a file it cannot "
                                   "read.")
    m.add_argument("checkpoint", help="a checkpoint rawdev.load reads: a .safetensors file (rawdev.save, safetensors; "
                                      "a state_dict or a training checkpoint) or a PyTorch .pt file")
    m.add_argument("--device", default="auto", help=DEVICE_HELP)
    m.set_defaults(fn=cmd_model)
    r = sub.add_parser("run", help="run a Python script with memory history on and dump a snapshot at exit",
                       description="Run SCRIPT with memory history on (rawdev.cuda.memory.record_history) and write "
                                   "a JSON snapshot at exit. Options after SCRIPT belong to the script, except a "
                                   "trailing --snapshot PATH.")
    r.add_argument("--snapshot", default=None, help="where to write the JSON snapshot (default: SCRIPT.mem.json)")
    r.add_argument("--no-stacks", action="store_true", help="do not record Python stacks (faster)")
    r.add_argument("--device", default="auto", help=DEVICE_HELP)
    r.add_argument("script", help="the Python script to run")
    r.add_argument("args", nargs="...", help="arguments passed to the script")
    r.set_defaults(fn=cmd_run)
    s = sub.add_parser("show", help="summarize a snapshot (text), or write one self-contained HTML page",
                       description="Print a text summary of a snapshot written by `rawdev mem run` or "
                                   "rawdev.cuda.memory.dump_snapshot, or write it as one HTML page.")
    s.add_argument("snapshot", help="a JSON snapshot (rawdev mem run, or rawdev.cuda.memory.dump_snapshot)")
    s.add_argument("--html", metavar="OUT", help="write an HTML report (timeline by owner with phase marks, the owners "
                                                 "at the peak, segment map) to OUT")
    s.set_defaults(fn=cmd_show)
    return p


def _choose(name):
    """Pick the driver for a mem command: --device sim/cuda, RAWDEV_DRIVER=sim/cuda, or auto: the GPU, else
    the simulator (with a notice)."""
    from ..driver_choice import choose_driver
    return choose_driver(name, "rawdev mem")


# ------------------------------------------------------------------------------------------- info
def cmd_info(args):
    from .. import cuda
    from ..runtime import get_device, seam
    from ..runtime import memory as rm
    _choose(args.device)
    n = cuda.device_count()
    v = rm.driver_version()
    print(f"driver: {seam.driver_name()} (CUDA {v // 1000}.{v % 1000 // 10}), {n} device(s)")
    for i in range(n):
        d = get_device(i)
        free, total = rm.mem_get_info(d)
        print(f"cuda:{i}  {d.name}  sm_{d.capability[0]}{d.capability[1]}  {d.multiprocessors} SMs")
        print(f"    memory: {fmt_bytes(free)} free of {fmt_bytes(total)}")
        print(f"    rawdev pool: used {fmt_bytes(d.pool_attribute('used'))} "
              f"(peak {fmt_bytes(d.pool_attribute('used_high'))}), "
              f"reserved {fmt_bytes(d.pool_attribute('reserved'))} "
              f"(peak {fmt_bytes(d.pool_attribute('reserved_high'))}); "
              f"rawdev's table: {len(d.allocator.live)} blocks, {fmt_bytes(d.allocator.stats['allocated'])}")
    return 0


# ------------------------------------------------------------------------------------------ model
def read_header(path):
    """({name: {"dtype", "data_offsets"}}, byte offset of the data section) of a safetensors file, through the
    loader's checked header parser (a malformed header is a CheckpointError naming the problem)."""
    from ..serialization import read_header as checked
    _, entries, data0 = checked(path)
    return {e.name: {"dtype": e.st, "data_offsets": [e.begin, e.end]} for e in entries}, data0


def load_to_device(path, device="cuda"):
    """rawdev.load(path, map_location=device): every tensor in one arena, one copy. Returns the OrderedDict."""
    import rawdev
    return rawdev.load(path, map_location=device)


def placement(path, tensors):
    """One row per tensor: name, shape, dtype, bytes, address, arena offset, alignment, file crc, device crc, ok."""
    import zlib

    from ..cuda import memory as cm
    header, data0 = read_header(path)
    rows = []
    with open(path, "rb") as f:
        for name, t in tensors.items():
            h = header[name]
            lo, hi = h["data_offsets"]
            f.seek(data0 + lo)
            file_crc = zlib.crc32(f.read(hi - lo))
            nbytes = t.nbytes
            addr = t.data_ptr()
            dev_crc = cm.checksum(addr, nbytes) if nbytes else zlib.crc32(b"")
            alignment = (addr & -addr) if addr else 0
            rows.append(dict(name=name, shape=tuple(t.shape), dtype=h["dtype"], nbytes=nbytes, address=addr,
                             # alignment: the largest power of two (up to 4 KiB) dividing the address
                             offset=getattr(t, "_offset", 0), alignment=min(alignment, 4096),
                             owner=(cm.pointer_info(addr)["owner"] if nbytes else None),
                             file_crc=file_crc, device_crc=dev_crc, ok=(file_crc == dev_crc and hi - lo == nbytes)))
    return rows


def format_placement(rows, path):
    w = max([28] + [len(r["name"]) for r in rows])   # nested checkpoints have long names: show them whole
    out = [f"{os.path.basename(path)}: {len(rows)} tensors, {fmt_bytes(sum(r['nbytes'] for r in rows))}",
           f"{'name':<{w}} {'shape':<16} {'dtype':<6} {'bytes':>10} {'address':>16} {'arena off':>10} "
           f"{'align':>6}  crc32"]
    for r in rows:
        shape = "(" + ", ".join(map(str, r["shape"])) + ")"
        out.append(f"{r['name']:<{w}} {shape[:16]:<16} {r['dtype']:<6} {r['nbytes']:>10} {r['address']:>#16x} "
                   f"{r['offset']:>10} {r['alignment']:>6}  {r['device_crc']:08x} "
                   + ("ok" if r["ok"] else f"MISMATCH (file {r['file_crc']:08x})"))
    bad = [r["name"] for r in rows if not r["ok"]]
    if bad:
        out.append(f"MISMATCH: {len(bad)} tensor(s) differ between the device copy and the file: {', '.join(bad)}")
    else:
        out.append(f"verified: all {len(rows)} tensors on the device match the file byte for byte (crc32)")
    return "\n".join(out), not bad


def _named_tensors(obj, prefix=""):
    """[(dotted name, tensor)] of every tensor inside a loaded checkpoint (a state_dict, or a training
    checkpoint's nested dicts and lists: "model_state_dict.0.weight", "optimizer_state_dict.state.0.exp_avg")."""
    from ..tensor.core import Tensor
    if isinstance(obj, Tensor):
        return [(prefix or "tensor", obj)]
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    else:
        return []
    out = []
    for k, v in items:
        out += _named_tensors(v, f"{prefix}.{k}" if prefix else str(k))
    return out


def _is_flat_safetensors(path, tensors):
    """Whether `tensors` are a flat state_dict read from a safetensors file whose header names them all."""
    from ..serialization import CheckpointError
    with open(path, "rb") as f:
        if f.read(4) == b"PK\x03\x04":   # PyTorch's zip format
            return False
    try:
        header, _ = read_header(path)
    except CheckpointError:
        return False
    return set(tensors) <= set(header)


def reference_placement(path, tensors):
    """placement() for checkpoints that are not a flat safetensors state_dict (PyTorch .pt files, training
    checkpoints with nested dicts): each tensor's device bytes against the same tensor read to the host by
    rawdev.load (map_location="cpu"), crc32 for crc32. Same rows as placement()."""
    import zlib

    import rawdev

    from ..cuda import memory as cm
    host = dict(_named_tensors(rawdev.load(path, map_location="cpu")))
    rows = []
    for name, t in tensors.items():
        ref = host[name]
        file_bytes = ref.contiguous()._host_storage().tobytes() if ref.numel() else b""
        file_crc = zlib.crc32(file_bytes)
        nbytes = t.nbytes
        addr = t.data_ptr()
        dev_crc = cm.checksum(addr, nbytes) if nbytes else zlib.crc32(b"")
        alignment = (addr & -addr) if addr else 0
        rows.append(dict(name=name, shape=tuple(t.shape), dtype=t.dtype.st_name, nbytes=nbytes, address=addr,
                         offset=getattr(t, "_offset", 0), alignment=min(alignment, 4096),
                         owner=(cm.pointer_info(addr)["owner"] if nbytes else None),
                         file_crc=file_crc, device_crc=dev_crc, ok=(file_crc == dev_crc and len(file_bytes) == nbytes)))
    return rows


def _fail(cmd, msg, code=2):
    print(f"rawdev mem {cmd}: {msg}", file=sys.stderr)
    return code


def _why(e):
    """An OSError as one line: its reason and the file."""
    if isinstance(e, OSError) and e.strerror:
        return f"{e.strerror}: {e.filename}" if e.filename else e.strerror
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def cmd_model(args):
    from .. import cuda
    path = args.checkpoint
    if not os.path.exists(path):
        return _fail("model", f"no such file: {path}")
    if os.path.isdir(path):
        return _fail("model", f"{path} is a directory, not a checkpoint file")
    if not os.path.isfile(path):
        return _fail("model", f"{path} is not a regular file")
    _choose(args.device)
    from ..errors import CudaError
    from ..serialization import CheckpointError
    before = cuda.memory_allocated()
    try:
        loaded = load_to_device(path, "cuda")
        tensors = dict(_named_tensors(loaded))
        if not tensors:
            return _fail("model", f"{path} holds no tensors")
        rows = placement(path, tensors) if _is_flat_safetensors(path, tensors) else reference_placement(path, tensors)
        text, ok = format_placement(rows, path)
    except (CheckpointError, CudaError, OSError, ValueError) as e:   # CudaError: out of device memory
        return _fail("model", _why(e))
    print(text)
    print(f"device memory: {fmt_bytes(cuda.memory_allocated() - before)} allocated for the checkpoint "
          f"(each tensor starts at a multiple of {cuda.memory.ARENA_ALIGN} bytes in one arena)")
    return 0 if ok else 1


# -------------------------------------------------------------------------------------------- run
def cmd_run(args):
    script_args = list(args.args)
    snap = args.snapshot
    if len(script_args) >= 2 and script_args[-2] == "--snapshot":
        snap, script_args = script_args[-1], script_args[:-2]
    snap = snap or os.path.splitext(args.script)[0] + ".mem.json"
    if not os.path.exists(args.script):
        return _fail("run", f"no such file: {args.script}")
    if os.path.isdir(args.script):
        return _fail("run", f"{args.script} is a directory, not a Python script")
    try:
        with open(args.script, "rb") as f:
            source = f.read()
    except OSError as e:
        return _fail("run", f"cannot read the script: {_why(e)}")
    try:
        code = compile(source, args.script, "exec")
    except (SyntaxError, ValueError) as e:   # ValueError: null bytes in the source
        return _fail("run", f"{args.script} is not a Python script: {type(e).__name__}: {e}")
    _choose(args.device)
    from ..cuda import memory as cm
    cm.record_history(True, stacks=not args.no_stacks)
    sys.argv = [args.script] + script_args
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
    rc = 0
    # The script's globals stay alive until the snapshot is written: what it still holds at exit shows.
    g = {"__name__": "__main__", "__file__": args.script, "__builtins__": __builtins__, "__package__": None}
    try:
        exec(code, g)
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        import traceback
        traceback.print_exc()
        rc = 1
    finally:
        try:
            cm.dump_snapshot(snap, script=args.script)
            print(f"rawdev mem: snapshot written to {snap} (rawdev mem show {snap} [--html out.html])", file=sys.stderr)
        except Exception as e:   # no device was ever used: say so
            print(f"rawdev mem: no snapshot written ({e})", file=sys.stderr)
        g.clear()
    return rc


# ------------------------------------------------------------------------------------------- show
def cmd_show(args):
    from . import html, snapshot
    try:
        snap = snapshot.load(args.snapshot)
    except (OSError, ValueError) as e:
        return _fail("show", _why(e))
    # the shape check covers the fields every snapshot has; a malformed optional field (a stack frame, an
    # annotation) still gets one line rather than a traceback
    malformed = (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError)
    try:
        text = html.render(snap, html.title_of(snap, args.snapshot)) if args.html else snapshot.summary(snap)
    except malformed as e:
        return _fail("show", f"{args.snapshot} is not a well-formed rawdev memory snapshot "
                             f"({type(e).__name__}: {str(e)[:120]})")
    if not args.html:
        print(text)
        return 0
    if os.path.isdir(args.html):
        return _fail("show", f"cannot write the HTML report: {args.html} is a directory")
    try:
        with open(args.html, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:   # a missing directory, no permission, a full disk (/dev/full)
        return _fail("show", f"cannot write the HTML report to {args.html}: {e.strerror or e}")
    print(f"wrote {args.html}")
    return 0
