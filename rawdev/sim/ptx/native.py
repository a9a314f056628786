"""The simulator's native engine: a kernel compiled once to machine code (PTX → LLVM IR → llvmlite) and run
thread by thread, instead of interpreted lane-vector by lane-vector.

Which engine runs a launch (``RAWDEV_SIM_ENGINE``):

* ``auto`` (the default): native when llvmlite is installed and the kernel lowers (:mod:`.native_ir` says what
  does), else the interpreter. A launch that asks for a checker (initcheck, racecheck, synccheck), kernel
  statistics or bank counting always runs on the interpreter, which implements them.
* ``interp``: always the interpreter (the reference).
* ``diff``: both, on copies of device memory, and every byte of every allocation compared afterwards; a
  difference raises :class:`EngineMismatch`. The suite's differential test runs kernels this way.

Compiled kernels are kept per process and on disk next to the module index (:mod:`.module_cache`), keyed by a
hash of the IR, the host CPU and llvmlite's version: a later process loads the object code (milliseconds)
instead of compiling it again.

What the native engine checks as the interpreter does: out-of-bounds and misaligned global accesses (the same
messages, naming kernel, thread, block and PTX line), and the instruction count of the launch. What differs:
threads run one after another, so a kernel whose threads race on the same global bytes (undefined on a GPU)
may end with other bytes than the interpreter's lockstep lanes give; and when several threads would fault, the
one reported is the first in thread order (the interpreter reports the first faulting instruction of a chunk). A
device-side assert names every thread that failed the first failing call, in thread order, as the interpreter does
for the lanes that reach it together.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import threading
import time
from pathlib import Path

import numpy as np

from . import module_cache
from .decoder import Decoder
from .native_helpers import ASSERT_POSITIONS
from .native_ir import IR_VERSION, Unsupported, lower_entry
from .parser import parse

BIG_KERNEL_LINES = 30000  # IR lines above which a kernel is compiled by the backend's -O0
# IR lines above which a kernel stays interpreted: the flash-attention forward kernels (170,000–420,000 lines, 194
# shfl points each) cost 10 s and more apiece to compile, more than the tests that use them spend interpreting
MAX_KERNEL_LINES = 100000
STOP_ASSERT = 5   # run()'s report of a device-side assert
_LOCK = threading.RLock()
_STATE: dict = {}          # "llvm": the binding (or None), "tm": target machine, "engine": the MCJIT engine
_KERNELS: dict = {}        # (module key, entry name) -> _Native or None (does not lower)
_WHY: dict = {}            # (module key, entry name) -> why it runs on the interpreter
_LIBM_OK: dict = {}
_TLS = threading.local()
_FN_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


class EngineMismatch(AssertionError):
    """RAWDEV_SIM_ENGINE=diff: the native engine and the interpreter left different bytes or counts. ``race`` is
    True where the native engine itself ends differently with its threads in reverse order: the kernel's threads
    race on some bytes with these arguments (a GPU leaves them undefined), so no engine is wrong."""

    race = False


def mode():
    m = os.environ.get("RAWDEV_SIM_ENGINE", "auto")
    return m if m in ("auto", "interp", "diff") else "auto"


def _llvm():
    """The initialised llvmlite binding, or None when llvmlite is not installed."""
    if "llvm" not in _STATE:
        with _LOCK:
            if "llvm" not in _STATE:
                try:
                    import llvmlite
                    import llvmlite.binding as llvm
                except ImportError:
                    _STATE["llvm"] = None
                    return None
                llvm.initialize_native_target()
                llvm.initialize_native_asmprinter()
                cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
                tm = llvm.Target.from_default_triple().create_target_machine(cpu=cpu, features=features, opt=2,
                                                                            reloc="pic", codemodel="default")
                _STATE["tm"] = tm
                # the backend's -O0 (fast instruction selection and register allocation) for very large kernels:
                # -O2 code generation grows faster than linearly with a function's size (the 128x128 GEMM tile,
                # 6,875 registers, 54,000 lines of IR: 5.4 s at -O2, 0.3 s at -O0; its code runs ~1.5x slower)
                _STATE["tm_fast"] = llvm.Target.from_default_triple().create_target_machine(
                    cpu=cpu, features=features, opt=0, reloc="pic", codemodel="default")
                _STATE["engine"] = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
                _STATE["host"] = f"{llvmlite.__version__}|{cpu}|{features}"
                _STATE["llvm"] = llvm
    return _STATE["llvm"]


def available():
    """Is the native engine usable in this process (llvmlite importable)?"""
    return _llvm() is not None


def _libm_matches(name):
    """Do numpy's float32 exp2/log2 (what the interpreter runs) give libm's exp2f/log2f bits on this machine? The
    compiled code calls libm; where numpy uses its own SIMD code instead, kernels using them stay interpreted."""
    ok = _LIBM_OK.get(name)
    if ok is None:
        try:
            fn = getattr(ctypes.CDLL("libm.so.6"), name)
        except (OSError, AttributeError):
            _LIBM_OK[name] = False
            return False
        fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
        rng = np.random.default_rng(1234)
        x = np.concatenate([rng.standard_normal(600) * 40, rng.random(300) * 1e-38, np.abs(rng.standard_normal(300)) *
                            1e6, [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 2.0, 0.5, 128.0, -150.0, -126.0]])
        x = x.astype(np.float32)
        with np.errstate(all="ignore"):
            want = (np.exp2(x) if name == "exp2f" else np.log2(x)).view(np.uint32)
        got = np.array([fn(float(v)) for v in x], np.float32).view(np.uint32)
        ok = _LIBM_OK[name] = bool(np.array_equal(want, got))
    return ok


class _Native:
    """One compiled kernel: its launch function and what a launch needs to know (its barriers' instruction
    indices, the bytes of a thread's saved registers, its shared memory layout, where the module globals'
    addresses follow the parameters), from ``meta`` (:func:`_meta`, kept on disk beside the object code)."""

    def __init__(self, fn, meta):
        self.fn, self.symbol = fn, meta["symbol"]
        self.barriers = list(meta["barriers"])   # instruction index of each bar.sync or shfl
        self.state_size = meta["state_size"]
        self.shared_static, self.dyn_shared_offset = meta["shared_static"], meta["dyn_shared_offset"]
        self.gbase = meta["gbase"]   # None: the kernel names no module global
        self.param_size = meta["param_size"]
        self.xw = meta["xw"]   # 32-bit words per lane in a warp's exchange


def _meta(low, obj_key):
    return {"symbol": low.symbol, "obj": obj_key, "barriers": [sync[0] for sync in low.syncs],
            "state_size": low.state_size if low.syncs or low.cpq else 0, "shared_static": low.shared_static,
            "dyn_shared_offset": low.dyn_shared_offset, "gbase": low.gbase if low.globals else None,
            "param_size": low.param_size, "xw": low.xw,
            "libm": sorted(n for n in ("exp2f", "log2f") if f"@{n}(" in low.ir)}


def _native_dir():
    d = module_cache.cache_dir()
    return None if d is None else d.parent / "native"


def _read(path, text=False):
    if path is None:
        return None
    try:
        return path.read_text() if text else path.read_bytes()
    except OSError:
        return None


def _write(path, data):
    """Atomically (a temporary file renamed over the name: concurrent processes are safe); a folder that cannot be
    written only means no cache."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        (tmp.write_text if isinstance(data, str) else tmp.write_bytes)(data)
        os.replace(tmp, path)
    except OSError:
        pass


def _object(ir):
    """(object code, its key) for the IR: from the disk cache, or compiled now and stored there."""
    llvm = _llvm()
    tm = _STATE["tm"]
    key = hashlib.sha256(f"{IR_VERSION}|{_STATE['host']}|".encode() + ir.encode()).hexdigest()[:32]
    d = _native_dir()
    path = None if d is None else d / f"{key}.o"
    obj = _read(path)
    if obj is None:
        mod = llvm.parse_assembly(ir)
        mod.verify()
        # a short pipeline (registers to SSA, inlining, peepholes, CFG cleanup): the full -O2 costs three times the
        # compile time and the kernels are short straight-line code the backend schedules well anyway
        pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=0))
        mpm = llvm.create_new_module_pass_manager()
        mpm.add_always_inliner_pass()
        mpm.add_sroa_pass()
        mpm.add_instruction_combine_pass()
        mpm.add_simplify_cfg_pass()
        mpm.run(mod, pb)
        obj = (_STATE["tm_fast"] if ir.count("\n") > BIG_KERNEL_LINES else tm).emit_object(mod)
        _write(path, obj)
    return obj, key


def _load(obj, symbol):
    llvm = _llvm()
    eng = _STATE["engine"]
    eng.add_object_file(llvm.ObjectFileRef.from_data(obj))
    eng.finalize_object()
    addr = eng.get_function_address(symbol)
    if not addr:
        raise Unsupported(f"compiled object has no {symbol}")
    return _FN_TYPE(addr)


def _entry_path(module, name, suffix):
    """Where what is known of one entry is kept between processes: why it does not lower (``.refused``: lowering a
    large kernel only to refuse it costs a second) or how to launch its object code (``.json``: a later process
    loads the object without parsing or lowering the kernel). The key hashes the PTX, the entry, the lowering code
    itself and (for object code) the host and llvmlite."""
    if "code" not in _STATE:
        here = Path(__file__).parent
        code = b"".join((here / f).read_bytes() for f in ("native.py", "native_ir.py", "native_helpers.py"))
        _STATE["code"] = hashlib.sha256(code + f"{IR_VERSION}|{MAX_KERNEL_LINES}|{BIG_KERNEL_LINES}".encode()
                                        ).hexdigest()
    d = _native_dir()
    if d is None:
        return None
    host = _STATE["host"] if suffix == ".json" else ""
    key = hashlib.sha256(f"{_STATE['code']}|{host}|{module.key}|{name}".encode()).hexdigest()[:32]
    return d / f"{key}{suffix}"


def _from_disk(module, name):
    """The compiled entry from the disk cache (its launch facts and object code), or None."""
    try:
        meta = json.loads(_read(_entry_path(module, name, ".json"), text=True) or "null")
        if not isinstance(meta, dict) or any(not _libm_matches(n) for n in meta["libm"]):
            return None
        obj = _read(_native_dir() / f"{meta['obj']}.o")
        return None if obj is None else _Native(_load(obj, meta["symbol"]), meta)
    except (KeyError, TypeError, ValueError, Unsupported):
        return None


def kernel(module, name):
    """The compiled form of entry ``name`` of ``module`` (a PtxModule), or None where it does not lower."""
    key = (module.key, name)
    k = _KERNELS.get(key, False)
    if k is not False:
        return k
    with _LOCK:
        k = _KERNELS.get(key, False)
        if k is not False:
            return k
        if _llvm() is None:
            _KERNELS[key] = None
            return None
        refused = _entry_path(module, name, ".refused")
        why = _read(refused, text=True)
        if why:
            _WHY[key], _KERNELS[key] = why, None
            return None
        k = _from_disk(module, name)
        if k is not None:
            _KERNELS[key] = k
            return k
        try:
            ast = parse(module.entry_text(name))
            symbol = "k_" + hashlib.sha256(f"{module.key}|{name}".encode()).hexdigest()[:24]
            low = lower_entry(ast, ast.functions[name], Decoder.imm_value, symbol)
            ir = low.ir
            lines = ir.count("\n")
            if lines > MAX_KERNEL_LINES:
                raise Unsupported(f"too large to compile quickly: {lines} lines of IR (native.MAX_KERNEL_LINES is "
                                  f"{MAX_KERNEL_LINES})")
            if ("@exp2f(" in ir and not _libm_matches("exp2f")) or ("@log2f(" in ir and not _libm_matches("log2f")):
                raise Unsupported("numpy's exp2/log2 differ from libm's here")
            obj, obj_key = _object(ir)
            meta = _meta(low, obj_key)
            k = _Native(_load(obj, symbol), meta)
            _write(_entry_path(module, name, ".json"), json.dumps(meta))
        except Unsupported as e:
            k, _WHY[key] = None, f"not lowered: {e}"
            if "libm" not in str(e):   # the same on every later run: remembered on disk
                _write(refused, _WHY[key])
        except Exception as e:   # a lowering defect (invalid IR): the interpreter runs it, and reasons() says why
            k, _WHY[key] = None, f"lowering failed: {type(e).__name__}: {str(e)[:300]}"
        _KERNELS[key] = k
        return k


def reasons():
    """{entry name: why it is not native} for the kernels this process tried to compile."""
    return {name: why for (_, name), why in _WHY.items()}


def _scratch(key, nbytes):
    """(buffer, its address): a per-thread reusable byte buffer (shared memory, saved registers, resume points;
    the launch loop zeroes what it uses), grown on demand."""
    bufs = getattr(_TLS, "bufs", None)
    if bufs is None:
        bufs = _TLS.bufs = {}
    b = bufs.get(key)
    if b is None or b[0].shape[0] < nbytes:
        a = np.zeros(max(nbytes, 64), np.uint8)
        b = bufs[key] = (a, a.ctypes.data)
    return b


def run(k, grid, block, params, memory, stats, dynamic_shared=0, reverse=False, blocks=None, gaddr=()):
    """Launch compiled kernel ``k``: every thread of the grid, in order (``gaddr``: the device addresses of the
    module's globals). Fills ``stats``; returns None, or what stopped it: (1, kind, instruction index, address,
    size, block, thread) for a faulting thread, (2, first barrier, other barrier, threads arrived, 0, block, thread)
    for threads at different barriers, (3, barrier, threads arrived, threads exited, first exited thread, block, 0)
    for a thread that exited while others waited, (4, first shfl, other shfl, 0, 0, block, thread) for threads of a
    warp at two different shfls, (5, threads failing, instruction index, message, file, line, function, [(block,
    thread), ...]) for a device-side assert (the first call a thread failed, and every thread failing that call)."""
    rows, n, bufs, rows_ptr = memory.native_rows()
    outb, out_ptr = _scratch("out", 8 * (24 + 2 * ASSERT_POSITIONS))
    dimsb, dims_ptr = _scratch("dims", 96)
    out = outb.view(np.int64)
    out[:9] = 0
    if k.gbase is not None:
        params = bytes(params[:k.param_size]).ljust(k.gbase, b"\0") + np.asarray(gaddr, np.uint64).tobytes()
    T = block[0] * block[1] * block[2]
    shsize = k.dyn_shared_offset + int(dynamic_shared) if dynamic_shared else k.shared_static
    nblocks = grid[0] * grid[1] * grid[2]
    b0, b1 = (0, nblocks) if blocks is None else blocks
    dimsb.view(np.int64)[:11] = (grid[0], grid[1], grid[2], block[0], block[1], block[2], b0, b1, int(reverse),
                                 shsize, k.state_size)
    t0 = time.perf_counter()
    r = k.fn(params, rows_ptr, n, out_ptr, dims_ptr, _scratch("shared", shsize)[1],
             _scratch("state", T * k.state_size)[1], _scratch("resume", 8 * T)[1],
             _scratch("exchange", 8 * k.xw * (-(-T // 32) * 32))[1])
    del bufs
    stats.seconds = time.perf_counter() - t0
    stats.thread_instructions = int(out[4])
    stats.chunks = 1
    if out[8]:   # a device-side assert (whatever other threads did after it: the context is lost anyway)
        nfail = int(out[8])
        pos = [(int(out[24 + 2 * i]), int(out[25 + 2 * i])) for i in range(min(nfail, ASSERT_POSITIONS))]
        return (STOP_ASSERT, nfail) + tuple(int(x) for x in out[9:14]) + (pos,)
    if r:
        v = [int(x) for x in out[:7]]
        if r == 1:
            v[2] &= (1 << 64) - 1
            return (1, v[0], v[1], v[2], v[3], v[5], v[6])
        return (r, v[0], v[1], v[2], v[3], v[5], v[6])
    return None


def snapshot(memory):
    with memory._lock:
        return {b: memory._allocs[b][1].copy() for b in memory._bases}


def blocks_overlap(memory, before, run_block, nblocks):
    """Whether two thread blocks change the same bytes: each block run alone from ``before`` (``run_block(b)``),
    its changed bytes marked. A race between blocks that write the same value from the same read (a
    read-modify-write by two blocks) ends the same in either order, and only this finds it."""
    seen = {}
    try:
        for b in range(nblocks):
            restore(memory, before)
            run_block(b)
            with memory._lock:
                for base, want in before.items():
                    cur = memory._allocs.get(base)
                    if cur is None or cur[1].shape != want.shape:
                        continue
                    changed = cur[1] != want
                    prev = seen.get(base)
                    if prev is None:
                        seen[base] = changed
                    elif (prev & changed).any():
                        return True
                    else:
                        prev |= changed
    finally:
        restore(memory, before)
    return False


def restore(memory, snap):
    with memory._lock:
        for b, saved in snap.items():
            cur = memory._allocs.get(b)
            if cur is not None and cur[1].shape == saved.shape:
                cur[1][:] = saved


def _nan_words(a, b, width):
    """Per aligned word of ``width`` bytes: are a's and b's words both NaNs (float16 or bfloat16 for 2, float32 for 4,
    float64 for 8)?"""
    n = len(a) // width * width
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[width]
    x, y = a[:n].view(u), b[:n].view(u)
    if width == 2:
        def nan(v):
            return (((v & 0x7C00) == 0x7C00) & ((v & 0x3FF) != 0)) | (((v & 0x7F80) == 0x7F80) & ((v & 0x7F) != 0))
        return nan(x) & nan(y)
    f = {4: np.float32, 8: np.float64}[width]
    return np.isnan(x.view(f)) & np.isnan(y.view(f))


def differing(got, want):
    """Byte positions where ``got`` and ``want`` (uint8 arrays of one allocation) differ, not counting NaNs: a word
    that is a NaN of the same width on both sides is equal whatever its sign and payload. numpy's own NaN
    propagation depends on the loop it picks (x86 keeps the first operand's NaN, and numpy's scalar and vector loops
    order operands differently), so NaN bits are not reproducible even between two interpreter runs of different
    sizes; a GPU returns its canonical NaN there."""
    bad = np.flatnonzero(got != want)
    if bad.size == 0:
        return bad
    ok = np.zeros(len(got), bool)
    for w in (2, 4, 8):
        if len(got) >= w:
            same = np.repeat(_nan_words(got, want, w), w)
            ok[:len(same)] |= same
    return bad[~ok[bad]]


def compare(memory, ref, name, ref_count, count):
    """EngineMismatch unless memory's bytes equal ``ref`` (the interpreter's, NaNs as NaNs) and the instruction
    counts agree."""
    if ref_count != count:
        raise EngineMismatch(f"kernel {name}: the native engine executed {count} thread-instructions, the "
                             f"interpreter {ref_count}")
    with memory._lock:
        for b, want in ref.items():
            cur = memory._allocs.get(b)
            if cur is None or cur[1].shape != want.shape:
                continue
            got = cur[1]
            bad = differing(got, want)
            if bad.size:
                i = int(bad[0])
                raise EngineMismatch(
                    f"kernel {name}: byte {i} of the allocation at 0x{b:x} is 0x{int(got[i]):02x} on the native "
                    f"engine, 0x{int(want[i]):02x} on the interpreter (around it: native "
                    f"{got[max(i - 4, 0):i + 4].tobytes().hex()}, interpreter "
                    f"{want[max(i - 4, 0):i + 4].tobytes().hex()})")
