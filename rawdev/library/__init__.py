"""`torch.library`: custom operators written in Python, registered into `torch.ops.<namespace>`.

rawdev has no ATen dispatcher, but an op registered here behaves as PyTorch's does from Python: it is reached as
``torch.ops.<ns>.<name>`` (rawdev.ops.torch_ops), runs the kernel registered for the device of its tensor
arguments (``"cpu"``/``"CPU"``, ``"cuda"``/``"CUDA"``, else ``CompositeExplicitAutograd``, else
``CompositeImplicitAutograd``), and is differentiable through ``register_autograd`` (a CompositeImplicitAutograd
kernel is differentiable through the ops it calls). ``register_fake``/``impl_abstract`` and the ``Meta`` key hold
the shape function PyTorch's tracers use; rawdev keeps it (``op._fake``) and runs real kernels when it traces.
The ops live in rawdev/library/registry.py; the two APIs (``Library``/``impl``/``define`` and ``custom_op``) are
both front ends of it.
"""
from .custom_ops import CustomOpDef, custom_op, register_autograd, register_fake, register_kernel
from .registry import Library, define, get_op, impl, impl_abstract

__all__ = ["Library", "define", "impl", "impl_abstract", "custom_op", "CustomOpDef", "register_fake",
           "register_kernel", "register_autograd", "get_op"]
