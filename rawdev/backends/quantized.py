"""`torch.backends.quantized`: the quantized engine switch. `engine` reads and sets the engine the quantized
kernels act as ("x86" by default, as PyTorch on an x86 machine); `supported_engines` lists the names PyTorch's
x86 builds accept. rawdev's quantized kernels are numpy integer arithmetic whatever the engine; what the engine
changes is what it changes in PyTorch's dynamic quantized Linear: fbgemm/x86/onednn quantize its input with
reduce_range (7-bit, 0..127), qnnpack with the full 0..255 range."""
import sys
import types

from ..nn.quantized import engine as _engine


class _QuantizedEngine(types.ModuleType):
    """This module, with `engine` a settable property and `supported_engines` a read-only one (as PyTorch's)."""

    @property
    def engine(self):
        return _engine.current_engine()

    @engine.setter
    def engine(self, value):
        _engine.set_engine(value)

    @property
    def supported_engines(self):
        return _engine.supported_engines()

    @supported_engines.setter
    def supported_engines(self, value):
        raise RuntimeError("Assignment not supported")


sys.modules[__name__].__class__ = _QuantizedEngine
