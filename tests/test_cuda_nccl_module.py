"""torch.cuda.nccl: the NCCL library's version and unique ids when the `distributed` extra is installed, a clear
error when it is not, and the single-process multi-GPU collectives refused by name."""
import pytest
import rawdev
from rawdev.distributed import nccl as dist_nccl


def _have_nccl():
    try:
        dist_nccl.load()
        return True
    except dist_nccl.NcclUnavailable:
        return False


@pytest.mark.skipif(not _have_nccl(), reason="needs the distributed extra (nvidia-nccl-cu12)")
def test_version_and_unique_id_come_from_the_library():
    major, minor, patch = rawdev.cuda.nccl.version()
    assert major == 2 and minor >= 0 and patch >= 0
    a, b = rawdev.cuda.nccl.unique_id(), rawdev.cuda.nccl.unique_id()
    assert isinstance(a, bytes) and len(a) == 128 and a != b
    assert rawdev.cuda.nccl.is_available([]) is True
    assert rawdev.cuda.nccl.is_available([rawdev.ones(2)]) is False      # a cpu tensor


def test_without_the_library_version_says_how_to_install(monkeypatch):
    def missing(path=None):
        raise dist_nccl.NcclUnavailable("NCCL is not installed: install it with `pip install 'rawdev[distributed]'`")
    monkeypatch.setattr(dist_nccl, "load", missing)
    monkeypatch.setattr(dist_nccl, "_lib", None)
    with pytest.raises(RuntimeError, match=r"torch.cuda.nccl.version: NCCL is not installed.*rawdev\[distributed\]"):
        rawdev.cuda.nccl.version()
    assert rawdev.cuda.nccl.is_available([]) is False


def test_multi_gpu_collectives_of_one_process_are_refused():
    with pytest.raises(NotImplementedError, match="one rank per process"):
        rawdev.cuda.nccl.all_reduce([rawdev.ones(2)])
