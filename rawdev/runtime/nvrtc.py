"""Compiling users' CUDA C++ to PTX with NVRTC, cached on disk.

NVRTC is reached through cuda-bindings' `nvrtc` module, which loads libnvrtc from the
`nvidia-cuda-nvrtc-cu12` wheel that rawdev's `kernels` extra pins (the compiler tools/build_ptx.py
builds rawdev's own kernels with). It is optional: without it, RawKernel/RawModule still take PTX, and
compiling CUDA C++ raises NvrtcNotFoundError saying what to install.

The cache (`RAWDEV_CACHE_DIR`, default ~/.cache/rawdev, under `nvrtc/`) holds one `<key>.ptx` (and a
`<key>.json` of lowered name expressions) per compilation, the key a SHA-256 of the source, the options,
the name expressions, NVRTC's version and the target architecture. Files are written to a temporary name
and renamed, so a second process never reads half a file; a later process finds the PTX and never calls
NVRTC (`stats["compiles"]` counts the calls of this process).
"""
import contextlib
import ctypes
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

EXTRA = "pip install 'rawdev[kernels]'   (the pinned NVRTC wheel: nvidia-cuda-nvrtc-cu12==12.0.140)"
stats = {"compiles": 0, "cache_hits": 0}   # this process: NVRTC compilations, PTX read from the cache


class NvrtcNotFoundError(RuntimeError):
    """NVRTC (the CUDA runtime compiler) cannot be loaded: compiling CUDA C++ needs the `kernels` extra."""


class CompileError(RuntimeError):
    """NVRTC rejected the source; `.log` is NVRTC's log (file:line: error ...), also in the message."""

    def __init__(self, message, log, source, options):
        super().__init__(message)
        self.log, self.source, self.options = log, source, tuple(options)


def _import_nvrtc():
    """cuda-bindings' nvrtc module with a loadable libnvrtc (tests replace this to simulate its absence)."""
    from cuda.bindings import nvrtc
    err, _major, _minor = nvrtc.nvrtcVersion()   # loads libnvrtc: raises when no library can be found
    if err:
        raise RuntimeError(f"nvrtcVersion failed: {err}")
    return nvrtc


_nvrtc = None


def load():
    """cuda-bindings' nvrtc module, loaded once. Raises NvrtcNotFoundError with the fix when NVRTC is missing."""
    global _nvrtc
    if _nvrtc is None:
        try:
            _nvrtc = _import_nvrtc()
        except Exception as e:   # ImportError, or cuda.pathfinder's "library not found" (a RuntimeError)
            raise NvrtcNotFoundError(
                f"compiling CUDA C++ needs NVRTC, which could not be loaded ({type(e).__name__}: {e}).\n"
                f"Install it with: {EXTRA}\n"
                "PTX input works without it: RawModule(path='kernel.ptx') or RawKernel(ptx_text, name).") from None
    return _nvrtc


def version():
    """NVRTC's (major, minor) version. Raises NvrtcNotFoundError when NVRTC is missing."""
    nv = load()
    _err, major, minor = nv.nvrtcVersion()
    return int(major), int(minor)


def cache_dir():
    """Where compiled PTX is kept: $RAWDEV_CACHE_DIR/nvrtc, default ~/.cache/rawdev/nvrtc."""
    root = os.environ.get("RAWDEV_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "rawdev")
    return Path(root) / "nvrtc"


def has_arch_option(options):
    return any(re.match(r"(-arch|--gpu-architecture)(=|$)", o) for o in options)


def cache_key(source, options, name_expressions, nvrtc_version, arch):
    h = hashlib.sha256()
    for part in (source, "\0".join(options), "\0".join(name_expressions), f"{nvrtc_version}", arch):
        h.update(part.encode())
        h.update(b"\x01")
    return h.hexdigest()


NV_TARGET_RE = re.compile(r"^\.global \.align \d+ \.\w+ (_ZN\w*nv6target\w*)(?:\[\d+\])?(?: = [^;]*)?;\n", re.M)


def strip_nv_target(ptx):
    """NVRTC 12.0 emits the unused `nv::target` constants of its headers as .global data in every module; drop
    them (unless something refers to them), so a user's module holds only what the user wrote."""
    out = NV_TARGET_RE.sub("", ptx)
    if any(sym in out for sym in NV_TARGET_RE.findall(ptx)):
        return ptx
    return out


def compile_to_ptx(source, options=(), name_expressions=(), arch="compute_75", filename="kernel.cu"):
    """Compile CUDA C++ `source` to PTX with NVRTC, or read the result of an earlier identical compilation.

    Args:
        source: the CUDA C++ text.
        options: NVRTC options (e.g. ("-lineinfo", "--std=c++17")); `--gpu-architecture=<arch>` is added
            unless an option chooses the architecture.
        name_expressions: C++ names (e.g. "scale<float>") whose mangled ("lowered") names are wanted.
        arch: the virtual architecture, e.g. "compute_80".
        filename: the name NVRTC's log uses for the source.

    Returns:
        (ptx text, {name expression: lowered name}).

    Raises:
        NvrtcNotFoundError: NVRTC cannot be loaded (the message names the extra to install).
        CompileError: NVRTC reports errors; the message carries its log with line numbers.

    Example:
        >>> ptx, names = compile_to_ptx('extern "C" __global__ void k(float* x) { x[0] = 1; }')
    """
    options = [str(o) for o in options]
    name_expressions = [str(n) for n in name_expressions]
    nv = load()
    if not has_arch_option(options):
        options = [f"--gpu-architecture={arch}"] + options
    key = cache_key(source, options, name_expressions, version(), arch)
    folder = cache_dir()
    ptx_file, names_file = folder / f"{key}.ptx", folder / f"{key}.json"
    try:
        ptx, names = ptx_file.read_text(), json.loads(names_file.read_text())
        stats["cache_hits"] += 1
        return ptx, names
    except (OSError, ValueError):
        pass
    ptx, names = _compile(nv, source, options, name_expressions, filename)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write_atomic(names_file, json.dumps(names))
        _write_atomic(ptx_file, ptx)   # last: a .ptx present means its .json is complete
    except OSError:   # a read-only or full cache directory costs a recompilation next time, nothing else
        pass
    return ptx, names


def _write_atomic(path, text):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


@contextlib.contextmanager
def _keep_thread_locale():
    """NVRTC 12.0 leaves the calling thread on its own "C" locale (uselocale) after a compilation; from then on
    Python's open() in that thread defaults to ASCII and reading any UTF-8 text fails. Put the thread's locale
    back as it was (where the C library has uselocale)."""
    try:
        libc = ctypes.CDLL(None)
        use = libc.uselocale
        use.restype, use.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    except (OSError, AttributeError):   # no uselocale (not glibc/musl/macOS): nothing to keep
        yield
        return
    before = use(None)
    try:
        yield
    finally:
        use(before)


def _compile(nv, source, options, name_expressions, filename):
    with _keep_thread_locale():
        return _compile_here(nv, source, options, name_expressions, filename)


def _compile_here(nv, source, options, name_expressions, filename):
    def ok(res, what):
        if res[0] != nv.nvrtcResult.NVRTC_SUCCESS:
            _e, msg = nv.nvrtcGetErrorString(res[0])
            raise RuntimeError(f"{what} failed: {msg.decode()}")
        return res[1:]

    (prog,) = ok(nv.nvrtcCreateProgram(source.encode(), filename.encode(), 0, [], []), "nvrtcCreateProgram")
    try:
        for expr in name_expressions:
            ok(nv.nvrtcAddNameExpression(prog, expr.encode()), f"nvrtcAddNameExpression({expr!r})")
        stats["compiles"] += 1
        (res,) = nv.nvrtcCompileProgram(prog, len(options), [o.encode() for o in options])
        (size,) = ok(nv.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        # a fresh bytearray: NVRTC writes into the buffer, and `b" " * 1` would be CPython's shared b" " object
        buf = bytearray(max(size, 1))
        ok(nv.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
        log = bytes(buf).split(b"\0", 1)[0].decode(errors="replace").strip()
        if res != nv.nvrtcResult.NVRTC_SUCCESS:
            _e, msg = nv.nvrtcGetErrorString(res)
            raise CompileError(f"NVRTC could not compile {filename} ({msg.decode()}), options {options}:\n{log}",
                               log, source, options)
        (size,) = ok(nv.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
        buf = bytearray(max(size, 1))
        ok(nv.nvrtcGetPTX(prog, buf), "nvrtcGetPTX")
        ptx = strip_nv_target(bytes(buf).split(b"\0", 1)[0].decode())
        names = {}
        for expr in name_expressions:
            (lowered,) = ok(nv.nvrtcGetLoweredName(prog, expr.encode()), f"nvrtcGetLoweredName({expr!r})")
            names[expr] = lowered.decode()
        return ptx, names
    finally:
        nv.nvrtcDestroyProgram(prog)
