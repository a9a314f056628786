"""rawdev.amp: mixed precision as torch.amp has it — autocast regions and dynamic loss scaling.

`autocast(device_type, dtype=None, enabled=True, cache_enabled=None)` opens a region where the ops on PyTorch's
autocast lists run in a chosen precision: matrix products, convolutions, attention and the RNN cells in float16
(cuda default) or bfloat16 (cpu default); exp/log/pow, the norms and the losses in float32; sum/prod/cumsum/
softmax/log_softmax in float32 unless a dtype is given (cuda); a few ops in their widest input type. The casts
happen at the op boundary (rawdev.ops.autocast_mode); the lists are data in `rawdev.amp.lists`, readable and
changeable. Results carry PyTorch's dtypes. Today the cuda kernels still compute 16-bit tensors by widening to
float32 around the launch (rawdev.ops.opmath), so values are right but memory and time are not yet halved.

`GradScaler` scales the loss, unscales the gradients (checking them for inf/NaN on the device), skips steps
with non-finite gradients and adapts the scale, as torch.amp.GradScaler.
"""
from ..ops import autocast_lists as lists
from . import grad_scaler
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd", "is_autocast_available", "lists",
           "grad_scaler"]
