"""rawdev.distributed.nccl: the one checker's message (call, ncclResult name, error string, last error) and the
library-loading error paths, without a GPU; with the nvidia-nccl-cu12 wheel, the real library's version, unique
id and a failing ncclCommInitRank."""
import ctypes.util

import pytest
from rawdev.distributed import nccl


class FakeLib:
    """Stands in for libnccl's two error-string functions."""

    def ncclGetErrorString(self, code):
        return {5: b"invalid usage (run with NCCL_DEBUG=WARN for details)"}.get(code, b"?")

    def ncclGetLastError(self, comm):
        return b"ncclAllReduce: count 3 is not a multiple of 2" if comm == "comm" else b""


def test_check_names_the_call_the_result_and_the_last_error():
    assert nccl.check(FakeLib(), "ncclAllReduce", 0, "comm") is None
    with pytest.raises(nccl.NcclError) as e:
        nccl.check(FakeLib(), "ncclAllReduce", 5, "comm")
    assert str(e.value) == ("ncclAllReduce failed: ncclInvalidUsage (invalid usage (run with NCCL_DEBUG=WARN for "
                            "details)): ncclAllReduce: count 3 is not a multiple of 2")
    assert (e.value.call, e.value.code, e.value.name) == ("ncclAllReduce", 5, "ncclInvalidUsage")
    with pytest.raises(nccl.NcclError, match=r"^ncclBroadcast failed: ncclResult 42 \(\?\)$"):
        nccl.check(FakeLib(), "ncclBroadcast", 42, None)


def test_loading_errors_say_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(nccl, "library_path", lambda: None)
    monkeypatch.setattr(nccl, "_lib", None)
    monkeypatch.delenv("RAWDEV_NCCL_LIBRARY", raising=False)
    with pytest.raises(nccl.NcclUnavailable, match=r"NCCL is not installed.*pip install 'rawdev\[distributed\]'"):
        nccl.load()
    bogus = tmp_path / "libnccl.so.2"
    bogus.write_bytes(b"not an ELF file")
    with pytest.raises(nccl.NcclUnavailable, match=f"NCCL library {bogus} could not be loaded"):
        nccl.load(str(bogus))
    libc = ctypes.util.find_library("c")
    with pytest.raises(nccl.NcclUnavailable, match="is not an NCCL library: it has no ncclGetVersion"):
        nccl.load(libc)


def _wheel():
    try:
        return nccl.load()
    except nccl.NcclUnavailable as e:
        pytest.skip(f"needs the distributed extra (nvidia-nccl-cu12): {e}")


def test_the_real_library_version_unique_id_and_a_checked_failure():
    lib = _wheel()
    major, minor, _ = nccl.version(lib)
    assert (major, minor) >= (2, 18)
    uid = nccl.unique_id(lib)
    assert len(uid) == nccl.UNIQUE_ID_BYTES
    with pytest.raises(ValueError, match="an ncclUniqueId has 128 bytes, got 3"):
        nccl.NcclComm(b"abc", 1, 0, lib)
    # rank 3 of 1: an invalid argument on a GPU; without one, the CUDA failure comes first — either way checked
    with pytest.raises(nccl.NcclError) as e:
        nccl.NcclComm(uid, 1, 3, lib)
    assert e.value.call == "ncclCommInitRank"
    assert e.value.name in ("ncclUnhandledCudaError", "ncclInvalidArgument", "ncclSystemError"), str(e.value)
    assert str(e.value).startswith(f"ncclCommInitRank failed: {e.value.name} (")
