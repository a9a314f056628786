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
        super().__init__(msg)


class OutOfMemoryError(CudaError):
    """CUDA_ERROR_OUT_OF_MEMORY, with what was asked for and what the device had."""


class IllegalAddressError(CudaError):
    """CUDA_ERROR_ILLEGAL_ADDRESS: a kernel touched memory outside every allocation (sticky)."""


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
