"""The torch modules and names the corpus scan found in the pytorch/tutorials scripts that rawdev declines by
design: compilers (_inductor, _decomp; of torch._logging all but set_logs), C++
extensions (utils.cpp_extension), nested tensors and mobile optimization (quantization is built: see
tests/test_quantize_*.py). Each imports as a program writes it, and using it raises NotImplementedError naming
the feature and why."""
import importlib

import pytest
import rawdev

MODULES = [
    ("rawdev._inductor", "config", "TorchInductor"), ("rawdev._inductor.config", "cpp", "TorchInductor"),
    ("rawdev._inductor.codecache", "AsyncCompile", "TorchInductor"),
    ("rawdev._decomp", "get_decompositions", "ATen decomp"),
    ("rawdev.utils.cpp_extension", "load_inline", "C\\+\\+ extensions"),
    ("rawdev.utils.mobile_optimizer", "optimize_for_mobile", "mobile optimization"),
    ("rawdev.nested", "nested_tensor", "nested tensors"),
]


@pytest.mark.parametrize("module,name,feature", MODULES)
def test_a_refused_module_imports_and_its_names_raise_naming_the_feature(module, name, feature):
    mod = importlib.import_module(module)
    assert isinstance(mod.__rawdev_refused__, str)
    torch_name = "torch" + module[len("rawdev"):] + "." + name
    with pytest.raises(NotImplementedError, match=rf"^{torch_name.replace('.', '[.]')}: {feature}.* is not "
                                                  r"supported by rawdev: .+"):
        getattr(mod, name)(1, key=2)
    with pytest.raises(AttributeError):   # dunder lookups (import machinery, hasattr) stay AttributeErrors
        mod.__path_not_there__  # noqa: B018


def test_the_modules_are_attributes_of_rawdev_as_of_torch():
    for name in ("export", "library", "nested", "quantization", "_dynamo", "_inductor", "_logging", "functional"):
        assert importlib.import_module("rawdev." + name) is getattr(rawdev, name)
