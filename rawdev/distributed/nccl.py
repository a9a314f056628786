"""NCCL through ctypes: libnccl.so.2 from the `nvidia-nccl-cu12` wheel (`pip install 'rawdev[distributed]'`) or the
system, and one checker that every NCCL call goes through, as the driver's calls go through rawdev.runtime's.

A failed call raises NcclError naming the call, the ncclResult_t name, ncclGetErrorString's text and, when a
communicator is at hand, ncclGetLastError's. Buffers and streams are raw handles (device pointers as ints, a
CUstream as an int): this module sits below the tensor layer and never sees a Tensor.

Process groups use it through rawdev.cuda.process_group_nccl (for cuda tensors on the real driver, or wherever
RAWDEV_COMMUNICATOR=nccl asks for it; see docs/INTERNALS.md, "Distributed").
"""
import ctypes
import ctypes.util
import importlib.util
import os
from pathlib import Path

__all__ = ["NcclError", "NcclUnavailable", "RESULT_NAMES", "DTYPES", "OPS", "load", "library_path", "check",
           "version", "NcclComm", "UNIQUE_ID_BYTES"]

RESULT_NAMES = {0: "ncclSuccess", 1: "ncclUnhandledCudaError", 2: "ncclSystemError", 3: "ncclInternalError",
                4: "ncclInvalidArgument", 5: "ncclInvalidUsage", 6: "ncclRemoteError", 7: "ncclInProgress"}
# ncclDataType_t by numpy dtype name, ncclRedOp_t by ReduceOp name
DTYPES = {"int8": 0, "uint8": 1, "int32": 2, "uint32": 3, "int64": 4, "uint64": 5, "float16": 6, "float32": 7,
          "float64": 8, "bfloat16": 9}
OPS = {"SUM": 0, "PRODUCT": 1, "MAX": 2, "MIN": 3, "AVG": 4}
UNIQUE_ID_BYTES = 128


class NcclUnavailable(RuntimeError):
    """libnccl.so.2 cannot be found or loaded."""


class NcclError(RuntimeError):
    """An NCCL call returned something other than ncclSuccess."""

    def __init__(self, call, code, description, last_error="", doing=""):
        self.call, self.code, self.name = call, int(code), RESULT_NAMES.get(int(code), f"ncclResult {int(code)}")
        self.description, self.last_error, self.doing = description, last_error, doing
        detail = f": {last_error}" if last_error else ""
        context = f" (while {doing})" if doing else ""
        super().__init__(f"{call} failed: {self.name} ({description}){detail}{context}")

    def while_doing(self, doing):
        """The same error, saying what rawdev was doing (the collective and the group)."""
        return NcclError(self.call, self.code, self.description, self.last_error, doing)


class _UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


def library_path():
    """Where libnccl.so.2 is: the nvidia-nccl-cu12 wheel's copy, else the system's; None when neither exists."""
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(root) / "nccl" / "lib" / "libnccl.so.2"
        if candidate.exists():
            return str(candidate)
    return ctypes.util.find_library("nccl")


_lib = None


def load(path=None):
    """The loaded NCCL library (cached when `path` is None).

    Args:
        path: a libnccl.so.2 to load instead of the one library_path() finds.

    Returns:
        The ctypes.CDLL.

    Example:
        >>> nccl.version()            # with `pip install 'rawdev[distributed]'`
        (2, 21, 5)
    """
    global _lib
    if path is None and _lib is not None:
        return _lib
    where = path or os.environ.get("RAWDEV_NCCL_LIBRARY") or library_path()
    if where is None:
        raise NcclUnavailable("NCCL is not installed: no libnccl.so.2 in the nvidia-nccl-cu12 wheel or on the system; "
                              "install it with `pip install 'rawdev[distributed]'` (or nvidia-nccl-cu12)")
    try:
        lib = ctypes.CDLL(where)
    except OSError as e:
        raise NcclUnavailable(f"NCCL library {where} could not be loaded: {e}") from None
    for name in ("ncclGetVersion", "ncclGetErrorString", "ncclGetUniqueId"):
        if not hasattr(lib, name):
            raise NcclUnavailable(f"{where} is not an NCCL library: it has no {name}")
    lib.ncclGetErrorString.restype = ctypes.c_char_p
    if hasattr(lib, "ncclGetLastError"):
        lib.ncclGetLastError.restype = ctypes.c_char_p
    if path is None:
        _lib = lib
    return lib


def check(lib, call, result, comm=None):
    """The one checker: raise NcclError when `result` (an ncclResult_t) is not ncclSuccess.

    Args:
        lib: the loaded library (for the error strings).
        call: the NCCL function's name, for the message.
        result: what it returned.
        comm: the communicator handle, for ncclGetLastError (None: the library's last error).

    Returns:
        None.

    Example:
        >>> check(lib, "ncclAllReduce", lib.ncclAllReduce(...), comm)
    """
    result = int(result)
    if result == 0:
        return
    description = (lib.ncclGetErrorString(result) or b"").decode(errors="replace")
    last = ""
    if hasattr(lib, "ncclGetLastError"):
        last = (lib.ncclGetLastError(comm) or b"").decode(errors="replace")
    raise NcclError(call, result, description, last)


def version(lib=None):
    """NCCL's version as (major, minor, patch)."""
    lib = lib or load()
    v = ctypes.c_int()
    check(lib, "ncclGetVersion", lib.ncclGetVersion(ctypes.byref(v)))
    code = v.value
    if code >= 10000:          # NCCL >= 2.9 encodes major*10000 + minor*100 + patch
        return code // 10000, (code % 10000) // 100, code % 100
    return code // 1000, (code % 1000) // 100, code % 100


def unique_id(lib=None):
    """A fresh ncclUniqueId (bytes) for rank 0 to hand to the other ranks (rawdev passes it through the store)."""
    lib = lib or load()
    uid = _UniqueId()
    check(lib, "ncclGetUniqueId", lib.ncclGetUniqueId(ctypes.byref(uid)))
    return bytes(uid)          # all 128 bytes (.internal would stop at the first NUL)


class NcclComm:
    """One rank's NCCL communicator (ncclCommInitRank), with the collectives on raw device pointers.

    Args:
        uid: the ncclUniqueId bytes from rank 0's unique_id().
        nranks: the number of ranks.
        rank: this rank.
        lib: the loaded library (default: load()).

    Example:
        >>> comm = NcclComm(uid, world, rank)          # the current CUDA context's device
        >>> comm.all_reduce(ptr, ptr, n, "float32", "SUM", stream)
    """

    def __init__(self, uid, nranks, rank, lib=None):
        self.lib = lib or load()
        if len(uid) != UNIQUE_ID_BYTES:
            raise ValueError(f"an ncclUniqueId has {UNIQUE_ID_BYTES} bytes, got {len(uid)}")
        self.handle = ctypes.c_void_p()
        self.nranks, self.rank = nranks, rank
        self._call("ncclCommInitRank", ctypes.byref(self.handle), ctypes.c_int(nranks), _UniqueId.from_buffer_copy(uid),
                   ctypes.c_int(rank), comm=None)

    def _call(self, name, *args, comm="self"):
        fn = getattr(self.lib, name)
        check(self.lib, name, fn(*args), self.handle if comm == "self" else comm)

    @staticmethod
    def _enum(table, key, what):
        if isinstance(key, int):       # an op from premul_sum_op()
            return ctypes.c_int(key)
        if key not in table:
            raise ValueError(f"NCCL has no {what} {key!r} (it has {', '.join(table)})")
        return ctypes.c_int(table[key])

    def all_reduce(self, send, recv, count, dtype, op, stream):
        self._call("ncclAllReduce", ctypes.c_void_p(send), ctypes.c_void_p(recv), ctypes.c_size_t(count),
                   self._enum(DTYPES, dtype, "dtype"), self._enum(OPS, op, "reduce op"), self.handle,
                   ctypes.c_void_p(stream))

    def broadcast(self, send, recv, count, dtype, root, stream):
        self._call("ncclBroadcast", ctypes.c_void_p(send), ctypes.c_void_p(recv), ctypes.c_size_t(count),
                   self._enum(DTYPES, dtype, "dtype"), ctypes.c_int(root), self.handle, ctypes.c_void_p(stream))

    def all_gather(self, send, recv, count, dtype, stream):
        self._call("ncclAllGather", ctypes.c_void_p(send), ctypes.c_void_p(recv), ctypes.c_size_t(count),
                   self._enum(DTYPES, dtype, "dtype"), self.handle, ctypes.c_void_p(stream))

    def reduce_scatter(self, send, recv, count, dtype, op, stream):
        self._call("ncclReduceScatter", ctypes.c_void_p(send), ctypes.c_void_p(recv), ctypes.c_size_t(count),
                   self._enum(DTYPES, dtype, "dtype"), self._enum(OPS, op, "reduce op"), self.handle,
                   ctypes.c_void_p(stream))

    def reduce(self, send, recv, count, dtype, op, root, stream):
        self._call("ncclReduce", ctypes.c_void_p(send), ctypes.c_void_p(recv), ctypes.c_size_t(count),
                   self._enum(DTYPES, dtype, "dtype"), self._enum(OPS, op, "reduce op"), ctypes.c_int(root),
                   self.handle, ctypes.c_void_p(stream))

    def send(self, buf, count, dtype, peer, stream):
        self._call("ncclSend", ctypes.c_void_p(buf), ctypes.c_size_t(count), self._enum(DTYPES, dtype, "dtype"),
                   ctypes.c_int(peer), self.handle, ctypes.c_void_p(stream))

    def recv(self, buf, count, dtype, peer, stream):
        self._call("ncclRecv", ctypes.c_void_p(buf), ctypes.c_size_t(count), self._enum(DTYPES, dtype, "dtype"),
                   ctypes.c_int(peer), self.handle, ctypes.c_void_p(stream))

    def group_start(self):
        self._call("ncclGroupStart")

    def group_end(self):
        self._call("ncclGroupEnd")

    def premul_sum_op(self, factor, dtype):
        """A ncclRedOp_t that multiplies each rank's input by `factor` (held in the host, in `dtype`) and sums:
        ncclRedOpCreatePreMulSum with ncclScalarHostImmediate. Destroy it with destroy_op()."""
        import numpy as np
        if dtype == "bfloat16":       # numpy has no bfloat16: its bits are float32's upper half
            raw = (np.array(factor, np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()
        else:
            raw = np.array(factor, dtype).tobytes()
        scalar = ctypes.create_string_buffer(raw, len(raw))
        op = ctypes.c_int()
        self._call("ncclRedOpCreatePreMulSum", ctypes.byref(op), scalar, self._enum(DTYPES, dtype, "dtype"),
                   ctypes.c_int(1), self.handle)           # 1: ncclScalarHostImmediate (read at the call)
        return op.value

    def destroy_op(self, op):
        self._call("ncclRedOpDestroy", ctypes.c_int(op), self.handle)

    def destroy(self):
        if self.handle:
            self._call("ncclCommDestroy", self.handle)
            self.handle = ctypes.c_void_p()
