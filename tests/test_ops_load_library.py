"""torch.ops.load_library: rawdev.ops keeps its op package and refuses loading C++ operator libraries by name."""
import pytest
import rawdev as torch


def test_load_library_refuses_naming_cpp_extensions():
    with pytest.raises(NotImplementedError, match="C\\+\\+ extensions") as info:
        torch.ops.load_library("build/libwarp_perspective.so")
    assert str(info.value).startswith("torch.ops.load_library: ")
    assert "ATen dispatcher" in str(info.value)


def test_ops_package_still_serves_declared_ops():
    # adding the user-facing name must not hide rawdev's own ops in the same package
    assert "load_library" not in torch.ops.__all__
    x = torch.tensor([1.0, -2.0])
    assert torch.ops.neg(x).tolist() == [-1.0, 2.0]
