"""rawdev's error types. Importable from every layer; nothing here touches a driver."""


class CudaError(RuntimeError):
    """A driver call returned something other than CUDA_SUCCESS.

    Carries the call, the numeric code, its name and description, and what rawdev was doing.
    """

    def __init__(self, call, code, name, description, context=None, detail=None):
        self.call, self.code, self.name, self.description = call, int(code), name, description
        self.context, self.detail = context, detail
        msg = f"{call} failed: {name} ({int(code)}): {description}"
        if context:
            msg += f" — while {context}"
        if detail:
            msg += f"\n{detail}"
        hint = self._hint()
        if hint:
            msg += f"\n{hint}"
        super().__init__(msg)

    def _hint(self):
        """A line for the user after the detail, or None (subclasses say more)."""
        return None


class OutOfMemoryError(CudaError):
    """CUDA_ERROR_OUT_OF_MEMORY, with what was asked for and what the device had."""


class IllegalAddressError(CudaError):
    """CUDA_ERROR_ILLEGAL_ADDRESS: a kernel touched memory outside every allocation (sticky)."""


class DeviceAssertError(CudaError):
    """CUDA_ERROR_ASSERT: a kernel's device-side assert() failed, e.g. on a target or index out of range
    (sticky: the context runs nothing more). Reported by the call that synchronized, not the launch."""

    def _hint(self):
        return ("CUDA kernel errors are reported asynchronously: the assert failed in a kernel launched earlier "
                "(by this call at the latest) and surfaced at the next synchronizing call, so the traceback may "
                "point past the op that launched it. For debugging consider passing CUDA_LAUNCH_BLOCKING=1 "
                "(each launch then waits for its kernel and reports its error). The CUDA context is unusable from "
                "now on: every later call fails the same way (restart the process).")


class NoDriverError(CudaError):
    """No CUDA driver library could be loaded on this machine."""

    def __init__(self, message):
        RuntimeError.__init__(self, message)
        self.call, self.code, self.name, self.description = "cuInit", 35, "CUDA_ERROR_INSUFFICIENT_DRIVER", message
        self.context = self.detail = None


class NoDeviceError(CudaError):
    """The driver loaded but there is no usable CUDA device (or none was selected)."""

    def __init__(self, message):
        RuntimeError.__init__(self, message)
        self.call, self.code, self.name, self.description = "cuDeviceGetCount", 100, "CUDA_ERROR_NO_DEVICE", message
        self.context = self.detail = None


class LinAlgError(RuntimeError):
    """A linear-algebra routine met a matrix it cannot handle (singular, not positive-definite); PyTorch's
    torch.linalg.LinAlgError, a RuntimeError."""


# numpy function names -> the aten op a program would have called
_ATEN = {"add": "aten::add.Tensor", "subtract": "aten::sub.Tensor", "multiply": "aten::mul.Tensor",
         "true_divide": "aten::div.Tensor", "divide": "aten::div.Tensor", "matmul": "aten::mm", "dot": "aten::mm",
         "sub": "aten::sub.Tensor", "mul": "aten::mul.Tensor", "div": "aten::div.Tensor", "mm": "aten::mm",
         "negative": "aten::neg", "power": "aten::pow.Tensor_Scalar", "maximum": "aten::maximum",
         "minimum": "aten::minimum", "sum": "aten::sum", "mean": "aten::mean", "exp": "aten::exp"}


def quantized_cpu_error(op=None):
    """PyTorch's error for an op a quantized tensor has no kernel for (rawdev.tensor.quantized).

    Args:
        op: the op's name ("add", "aten::mm", ...), None where it is not known.

    Returns:
        The NotImplementedError to raise.

    Example:
        >>> raise quantized_cpu_error("add")
        Traceback (most recent call last):
        NotImplementedError: Could not run 'aten::add.Tensor' with arguments from the 'QuantizedCPU' backend...
    """
    if op is None:   # caught where the op's result is made, which does not know the op's name
        a = "aten::<this operator>"
    elif op.startswith("aten::"):
        a = op
    else:
        a = _ATEN.get(op, f"aten::{op}")
    return NotImplementedError(
        f"Could not run '{a}' with arguments from the 'QuantizedCPU' backend. This could be because the operator "
        f"doesn't exist for this backend, or was omitted during the selective/custom build process (if using "
        f"custom build). (rawdev: a quantized tensor answers dequantize(), int_repr(), q_scale(), q_zero_point(), "
        f"q_per_channel_scales(), q_per_channel_zero_points(), q_per_channel_axis() and qscheme(); call "
        f".dequantize() to compute on its values.)")
