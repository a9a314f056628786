"""torch modules and names rawdev declines by design: they import (so a program's import lines run), and using
them raises NotImplementedError naming the feature and why; the small pieces the compatibility scan asked for
(torch.version, distributed collectives before init, the dense answers to sparse accessors)."""
import importlib

import pytest
import rawdev


@pytest.mark.parametrize("module,name", [
    ("rawdev.distributed.pipelining", "pipeline"),
    ("rawdev.classes", "load_library"),
])
def test_a_refused_name_imports_and_raises_naming_the_feature(module, name):
    mod = importlib.import_module(module)
    obj = getattr(mod, name)
    assert isinstance(mod.__rawdev_refused__, str)
    torch_name = "torch" + module[len("rawdev"):] + "." + name
    with pytest.raises(NotImplementedError, match=rf"{torch_name.replace('.', '[.]')}: .* is not supported by "
                                                  r"rawdev: .+"):
        obj(1, key=2)
    with pytest.raises(AttributeError):   # dunder lookups (import machinery, hasattr) stay AttributeErrors
        mod.__path_not_there__  # noqa: B018


def test_complex_views_are_refused_with_the_reason():
    with pytest.raises(NotImplementedError, match="torch.view_as_complex: .*no complex dtypes"):
        rawdev.view_as_complex(rawdev.zeros(2, 2))


def test_distributed_before_init_and_version():
    import rawdev.distributed as dist
    assert dist.ReduceOp.SUM.name == "SUM" and dist.get_default_backend_for_device("cuda") == "nccl"
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(rawdev.ones(1), op=dist.ReduceOp.SUM)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.barrier()
    assert rawdev.version.__version__ == rawdev.__version__ and rawdev.version.cuda is None
    from rawdev.utils.data.distributed import DistributedSampler
    assert list(DistributedSampler(range(10), num_replicas=3, rank=1, shuffle=False)) == [1, 4, 7, 0]   # padded


def test_dense_sparse_accessors():
    x = rawdev.randn(4, 3)
    with pytest.raises(RuntimeError, match="values expected sparse coordinate tensor layout but got Strided"):
        x.values()
    assert x.sparse_dim() == 0 and x.dense_dim() == 2 and not x.is_sparse


def test_autograd_profiler_takes_the_legacy_arguments():
    from rawdev.autograd import profiler
    with profiler.profile(use_cuda=False) as prof:
        with profiler.record_function("block"):
            rawdev.ones(3).sum()
    assert prof is not None
    with profiler.profile(enabled=False):
        pass
