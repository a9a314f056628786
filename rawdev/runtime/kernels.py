"""Loading the shipped PTX and launching its kernels.

The manifest (ptx/manifest.json, built by tools/build_ptx.py) lists every entry point with its
`.param` types. A Kernel turns that list into one `struct` format, made once. Each thread packs into
its own argument buffer (with its `void*[n]` array pointing into it), made on the thread's first launch
of that kernel; a launch is then a single `pack_into` and one cuLaunchKernel. The driver reads the
arguments before cuLaunchKernel returns, so a buffer per thread is enough: two threads launching the
same kernel never see each other's arguments.
"""
import ctypes
import json
import numbers
import re
import struct
import threading
from importlib import resources
from pathlib import Path

from cuda.bindings.driver import CUfunction_attribute, CUjit_option

from ..errors import CudaError
from .seam import call

# PTX ISA version -> the CUDA version (and so the minimum driver) that introduced it.
PTX_ISA_TO_CUDA = {(7, 0): 11000, (7, 1): 11010, (7, 2): 11020, (7, 3): 11030, (7, 4): 11040, (7, 5): 11050,
                   (7, 6): 11060, (7, 7): 11070, (7, 8): 11080, (8, 0): 12000, (8, 1): 12010, (8, 2): 12020,
                   (8, 3): 12030, (8, 4): 12040, (8, 5): 12050, (8, 6): 12070, (8, 7): 12080, (8, 8): 12090,
                   (9, 0): 13000}
PARAM_FORMATS = {"u64": "Q", "s64": "q", "b64": "Q", "u32": "I", "s32": "i", "b32": "I", "f32": "f", "f64": "d",
                 "u16": "H", "s16": "h", "b16": "H", "u8": "B", "s8": "b", "b8": "B"}
LOG_SIZE = 16384


def ptx_files():
    """The folder holding the shipped PTX: the ptx/ beside the imported rawdev package when rawdev runs from a
    source checkout (PYTHONPATH, as tools/gpu_check, or an editable install), else the installed package's
    (rawdev._ptx)."""
    # The checkout's own ptx/ first: a second checkout run with PYTHONPATH next to an editable install of another
    # would otherwise pair its Python with the other tree's kernels.
    src = Path(__file__).resolve().parents[2] / "ptx"
    if (src / "manifest.json").is_file():
        return src
    try:
        return resources.files("rawdev._ptx")
    except ModuleNotFoundError:
        raise FileNotFoundError("rawdev's PTX is missing: neither the package rawdev._ptx (installed rawdev) nor "
                                f"{src}/manifest.json (source checkout) exists; reinstall rawdev") from None


_manifest = None
_min_cc: dict = {}


def manifest():
    """{kernel name: (file name, [(param name, ptx type)], doc)} for every shipped kernel."""
    global _manifest
    if _manifest is None:
        data = json.loads((ptx_files() / "manifest.json").read_text())
        _manifest = {name: (fname, [(p["name"], p["type"]) for p in e["params"]], e.get("doc", ""))
                     for fname, f in data["files"].items() for name, e in f["entries"].items()}
        _min_cc.update({name: f.get("min_cc", 75) for f in data["files"].values() for name in f["entries"]})
    return _manifest


def runs_on(device, name):
    """Whether the shipped kernel `name` exists and its PTX targets device's compute capability or lower
    (the tensor-core files are built for sm_80: an older GPU cannot load them)."""
    if name not in manifest():
        return False
    major, minor = device.capability
    return major * 10 + minor >= _min_cc.get(name, 75)


def ptx_version(text):
    m = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", text, re.M)
    if not m:
        raise ValueError("not PTX: no .version directive")
    return int(m.group(1)), int(m.group(2))


def driver_version_str(v):
    return f"{v // 1000}.{v % 1000 // 10}"


class KernelModule:
    """One PTX image loaded into a device's context with cuModuleLoadDataEx."""

    def __init__(self, device, ptx_text, name="<ptx>", image=None):
        """image: ptx_text as the NUL-terminated bytes cuModuleLoadDataEx takes, when the caller keeps them (the
        shipped files' are kept: the same bytes object each time lets the driver recognise a text it has seen)."""
        self.device, self.name = device, name
        device.activate()
        version = ptx_version(ptx_text)
        have = call("cuDriverGetVersion", ctx="reading the driver version")
        need = PTX_ISA_TO_CUDA.get(version, 99999)
        if have < need:
            raise CudaError("cuModuleLoadDataEx", 222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
                            f"{name} is PTX ISA {version[0]}.{version[1]}, which needs a driver for CUDA "
                            f"{driver_version_str(need)} or newer; this driver supports CUDA "
                            f"{driver_version_str(have)}",
                            f"loading {name} on {device}")
        key = (int(device.context), name, hash(ptx_text))
        if key in _images:   # loaded into this context before (tests reopen devices): the module is still there
            self.handle, self.info_log = _images[key]
            self.kernels = {}
            return
        err_log, info_log = bytearray(LOG_SIZE), bytearray(LOG_SIZE)
        J = CUjit_option
        opts = [J.CU_JIT_ERROR_LOG_BUFFER, J.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                J.CU_JIT_INFO_LOG_BUFFER, J.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES]
        try:
            self.handle = call("cuModuleLoadDataEx", image or ptx_text.encode() + b"\0", len(opts), opts,
                               [err_log, LOG_SIZE, info_log, LOG_SIZE], ctx=f"loading {name} on {device}")
        except CudaError as e:
            log = err_log.split(b"\0", 1)[0].decode(errors="replace").strip()
            if log:
                e.args = (f"{e.args[0]}\nJIT error log:\n{log}",)
            raise
        self.info_log = info_log.split(b"\0", 1)[0].decode(errors="replace").strip()
        self.kernels = {}
        _images[key] = (self.handle, self.info_log)

    def get(self, name, params):
        k = self.kernels.get(name)
        if k is None:
            with _modules_lock:
                k = self.kernels.get(name)
                if k is None:
                    k = self.kernels[name] = Kernel(self, name, params)
        return k


class Kernel:
    """A kernel entry point with its parameter list; .launch() packs arguments once and launches."""

    def __init__(self, module, name, params, doc=""):
        self.module, self.name, self.params, self.doc = module, name, list(params), doc
        self.handle = call("cuModuleGetFunction", module.handle, name.encode(),
                           ctx=f"finding kernel {name} in {module.name}")
        fmt, off, offsets = "<", 0, []
        self._blobs = tuple((i, _blob_size(t)) for i, (_, t) in enumerate(self.params) if _blob_size(t))
        for _, t in self.params:   # each argument at its natural alignment inside one buffer
            f = _param_format(t)
            size = struct.calcsize(f)
            pad = -off % min(size, 8)
            fmt += f"{pad}x{f}" if pad else f
            offsets.append(off + pad)
            off += pad + size
        self._struct = struct.Struct(fmt)
        self._size, self._offsets = max(off, 1), offsets
        self._local = threading.local()   # .bufs = (argument buffer, void*[n] address) of one thread
        self._fn = self.handle
        self._nparams = len(self.params)

    def _new_buffers(self):
        """This thread's argument buffer and the void*[n] array pointing into it (kept alive together)."""
        args = ctypes.create_string_buffer(self._size)
        base = ctypes.addressof(args)
        argv = (ctypes.c_void_p * max(len(self._offsets), 1))(*[base + o for o in self._offsets])
        self._local.bufs = bufs = (args, ctypes.addressof(argv), argv)
        return bufs

    @property
    def signature(self):
        return f"{self.name}(" + ", ".join(f"{t} {n}" for n, t in self.params) + ")"

    def attribute(self, name):
        """e.g. attribute('NUM_REGS'), attribute('MAX_THREADS_PER_BLOCK')."""
        return call("cuFuncGetAttribute", getattr(CUfunction_attribute, "CU_FUNC_ATTRIBUTE_" + name), self.handle,
                    ctx=lambda: f"reading {name} of kernel {getattr(self, 'name', '?')}")

    def _bad_args(self, args, why):
        return TypeError(f"{why}\n  kernel signature: {self.signature}\n  got {len(args)} argument(s): "
                         + ", ".join(f"{type(a).__name__} {a!r}" for a in args))

    def launch(self, grid, block, args, shared_mem=0, stream=None):
        """Launch on `stream` (default: the device's compute stream). grid/block: int or up-to-3 tuple.

        Device pointers are ints (or objects with a .ptr, e.g. DeviceBuffer).
        """
        if len(args) != self._nparams:
            raise self._bad_args(args, f"{self.name} takes {len(self.params)} argument(s), not {len(args)}")
        for i, size in self._blobs:   # struct.pack would pad or cut a bytes argument of the wrong length
            a = args[i]
            if not isinstance(a, (bytes, bytearray, memoryview)) or len(a) != size:
                raise self._bad_args(args, f"argument {i} ({self.params[i][0]}) of {self.name} must be {size} bytes "
                                           f"(bytes, bytearray or memoryview), not {type(a).__name__}"
                                           + (f" of {len(a)}" if isinstance(a, (bytes, bytearray, memoryview)) else ""))
        try:
            buf, argv_addr, _ = self._local.bufs
        except AttributeError:
            buf, argv_addr, _ = self._new_buffers()
        try:
            self._struct.pack_into(buf, 0, *args)
        except struct.error:
            args = self._coerce(args)
            self._struct.pack_into(buf, 0, *args)
        gx, gy, gz = (grid, 1, 1) if type(grid) is int else _dim3(grid)
        bx, by, bz = (block, 1, 1) if type(block) is int else _dim3(block)
        s = stream or self.module.device.compute_stream
        s.device.activate()
        call("cuLaunchKernel", self._fn, gx, gy, gz, bx, by, bz, shared_mem, s.handle, argv_addr, 0,
             ctx=lambda: f"launching {self.name} grid={grid} block={block}", stream=s.handle, owner=self.name)

    def _coerce(self, args):
        """The slow path: accept DeviceBuffers for pointers, else explain which argument is wrong."""
        out = []
        for i, (a, (pname, ptype)) in enumerate(zip(args, self.params)):
            if _blob_size(ptype):   # checked in launch()
                out.append(bytes(a))
                continue
            if ptype in ("u64", "b64") and hasattr(a, "ptr"):
                a = a.ptr
            ok = isinstance(a, numbers.Real if ptype[0] == "f" else numbers.Integral) and not isinstance(a, bool)
            if not ok:
                raise self._bad_args(args, f"argument {i} ({pname}) of {self.name} must be {ptype}, "
                                           f"not {type(a).__name__}")
            bits = 8 * struct.calcsize(PARAM_FORMATS[ptype])
            if ptype[0] != "f" and -2 ** (bits - 1) <= a < 0:
                a += 2 ** bits   # PTX declares C `int` as .u32: pass negatives as two's complement
            try:
                struct.pack("<" + PARAM_FORMATS[ptype], a)
            except struct.error as e:
                raise self._bad_args(args, f"argument {i} ({pname}) of {self.name} does not fit {ptype}: {e}") from None
            out.append(a)
        return out


def _blob_size(ptype):
    """N for a `b8[N]` parameter (a struct passed by value: `.param .align A .b8 name[N]`), else 0."""
    return int(ptype[3:-1]) if ptype.startswith("b8[") else 0


def _param_format(ptype):
    """The struct format of one parameter: a scalar's, or `Ns` (exactly N bytes) for a b8[N] struct."""
    n = _blob_size(ptype)
    return f"{n}s" if n else PARAM_FORMATS[ptype]


def _dim3(d):
    if isinstance(d, int):
        return d, 1, 1
    d = tuple(d) + (1, 1)
    return d[0], d[1], d[2]


_modules: dict = {}   # (device index, file name) -> KernelModule
# (context handle, file name, hash of the PTX) -> (CUmodule, JIT info log): what a context has loaded
_images: dict = {}
_modules_lock = threading.RLock()


_found: dict = {}   # (device index, kernel name) -> the Kernel get_kernel gave for it (every launch asks)
_shipped: dict = {}   # file name -> ((size, mtime_ns), text, NUL-terminated image bytes)


def shipped_ptx(fname):
    """(text, image bytes) of a shipped PTX file, read once while the file is unchanged: every device (re)opened
    loads the files it uses again, and tests reopen the simulated one thousands of times."""
    path = ptx_files() / fname
    st = path.stat()
    stamp = (st.st_size, st.st_mtime_ns)
    got = _shipped.get(fname)
    if got is None or got[0] != stamp:
        text = path.read_text()
        got = _shipped[fname] = (stamp, text, text.encode() + b"\0")
    return got[1], got[2]


def get_kernel(device, name):
    """The shipped kernel `name` on `device`, loading its PTX file on first use."""
    k = _found.get((device.index, name))
    if k is not None and k.module.device is device:   # found before for this very device: checked then
        return k
    try:
        fname, params, doc = manifest()[name]
    except KeyError:
        raise KeyError(f"no shipped kernel named {name!r} (see `rawdev kernels`)") from None
    if not runs_on(device, name):
        raise RuntimeError(f"kernel {name!r} ({fname}) is built for sm_{_min_cc[name]}; {device} is sm_"
                           f"{device.capability[0]}{device.capability[1]}")
    key = (device.index, fname)
    mod = _modules.get(key)
    k = mod.kernels.get(name) if mod is not None else None
    if k is None:
        with _modules_lock:   # several threads asking at once load the file and find the entry once
            mod = _modules.get(key)
            if mod is None:
                text, image = shipped_ptx(fname)
                mod = _modules[key] = KernelModule(device, text, fname, image)
            k = mod.kernels.get(name)
            if k is None:
                k = mod.kernels[name] = Kernel(mod, name, params, doc)
    _found[(device.index, name)] = k
    return k


def load_all(device):
    """Load every shipped PTX file `device` can run and find each of its kernels, unless done already.

    A CUDA graph capture calls this before it begins: during a global-mode capture the driver refuses a module
    load (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) and invalidates the capture, so the captured work must find every
    kernel it may launch loaded, whatever ran before. Loading all of them is a one-time cost per context: on a
    GPU the JIT cache makes it cheap after the first run; the simulator keeps its decoded PTX for the process.

    Args:
        device: the runtime Device.

    Returns:
        The number of kernels now ready on `device`.

    Example:
        >>> load_all(get_device(0))   # doctest: +SKIP
        305
    """
    n = 0
    for name in manifest():
        if runs_on(device, name):
            get_kernel(device, name)
            n += 1
    return n


def _forget_modules(contexts_survive=False):
    """Forget the KernelModule objects (they point at Device objects about to be dropped). The loaded modules
    themselves are remembered while the contexts they live in survive (the real driver's primary contexts are
    never released by rawdev), so reopening a device does not JIT its PTX again."""
    with _modules_lock:
        _modules.clear()
        _found.clear()
        if not contexts_survive:
            _images.clear()
