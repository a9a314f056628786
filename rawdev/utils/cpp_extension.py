"""`torch.utils.cpp_extension`: building C++/CUDA extensions against ATen (load, load_inline, CppExtension), which
rawdev refuses: it has no ATen to link against. A CUDA kernel of one's own goes through rawdev.rawkernel."""
from ..refusals import refusing_getattr

_WHY = ("rawdev has no ATen/C++ API to compile against; write CUDA kernels with rawdev.rawkernel, or the op in Python "
        "over rawdev tensors")
__getattr__ = refusing_getattr("torch.utils.cpp_extension", "C++ extensions (torch.utils.cpp_extension)", _WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
