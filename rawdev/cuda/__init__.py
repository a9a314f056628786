"""`rawdev.cuda`: PyTorch's `torch.cuda` names over rawdev's runtime. Importing it touches no driver."""
from __future__ import annotations

from typing import Any

from ..runtime import is_available
from ..tensor.legacy import LEGACY_CUDA as _LEGACY_CUDA
from .device_arg import _dev

# PyTorch's legacy typed constructors of cuda tensors: rawdev.cuda.FloatTensor(2, 3), rawdev.cuda.LongTensor([1])
FloatTensor = _LEGACY_CUDA["FloatTensor"]
HalfTensor = _LEGACY_CUDA["HalfTensor"]
BFloat16Tensor = _LEGACY_CUDA["BFloat16Tensor"]
DoubleTensor = _LEGACY_CUDA["DoubleTensor"]
LongTensor = _LEGACY_CUDA["LongTensor"]
IntTensor = _LEGACY_CUDA["IntTensor"]
ShortTensor = _LEGACY_CUDA["ShortTensor"]
CharTensor = _LEGACY_CUDA["CharTensor"]
ByteTensor = _LEGACY_CUDA["ByteTensor"]
BoolTensor = _LEGACY_CUDA["BoolTensor"]


def current_device() -> int:
    """The index of the calling thread's current CUDA device (0 unless set_device chose another)."""
    from ..device import current_cuda_index
    return current_cuda_index()


def set_device(device: Any) -> None:
    from ..device import set_current_cuda_index
    set_current_cuda_index(_dev(device).index)


def device_count() -> int:
    """Number of CUDA devices: 0 when auto mode found no GPU; raises if RAWDEV_DRIVER=cuda and there is none."""
    from ..runtime import device_count as n
    from ..runtime import seam
    return 0 if seam.driver_name() == "none" else n()


def get_device_name(device: Any = None) -> str:
    return _dev(device).name


def get_device_capability(device: Any = None) -> tuple[int, int]:
    return _dev(device).capability


def synchronize(device: Any = None) -> None:
    """Wait for all work on the device to finish."""
    _dev(device).synchronize()


class device:
    """`with rawdev.cuda.device(1):` makes a device current for the block (PyTorch's torch.cuda.device); -1 or
    None leaves the current device alone."""

    def __init__(self, device: Any):
        from ..device import as_device
        self.idx = -1 if device is None or device == -1 else (device if isinstance(device, int)
                                                               else as_device(device).index or 0)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx != -1:
            self.prev_idx = current_device()
            set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx != -1:
            set_device(self.prev_idx)
        return False


class device_of(device):
    """`with rawdev.cuda.device_of(t):` makes t's device current when t is a cuda tensor."""

    def __init__(self, obj: Any):
        super().__init__(obj.get_device() if obj.is_cuda else -1)


def init() -> None:
    """Initialize CUDA now rather than at first use (opens device 0; raises when there is no GPU)."""
    from ..runtime import get_device
    get_device(0)


def is_initialized() -> bool:
    """Whether a device has been opened in this process."""
    from ..runtime import device as _d
    return bool(_d._devices)


def ipc_collect() -> None:
    """No-op: rawdev shares no CUDA memory between processes."""


def get_arch_list() -> list[str]:
    """The architectures rawdev's kernels are built for: PTX for compute_75 (sm_80 for the TF32 GEMM), JIT-compiled
    by the driver for the GPU at hand."""
    return ["compute_75", "compute_80"]


def is_tf32_supported() -> bool:
    """True on sm_80 or newer (where rawdev has a TF32 GEMM)."""
    return is_available() and get_device_capability() >= (8, 0)


def can_device_access_peer(device: Any, peer_device: Any) -> bool:
    """False: rawdev enables no peer access (copies between GPUs go through the host)."""
    return False


def is_simulated() -> bool:
    """True when rawdev runs on its simulated GPU."""
    from ..runtime import seam
    return is_available() and seam.driver_name() == "sim"


# The memory tool: PyTorch's torch.cuda memory names, with owners; nvtx ranges become its timeline marks.
from ..errors import CudaError, OutOfMemoryError  # noqa: E402,F401  (torch.cuda's exception names)
from . import memory, nvtx  # noqa: E402,F401
from .memory import (  # noqa: E402,F401
    empty_cache,
    get_per_process_memory_fraction,
    max_memory_allocated,
    max_memory_cached,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_cached,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_stats_as_nested_dict,
    memory_summary,
    pointer_info,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_cached,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)


# Random state: one Philox generator per device (rawdev.random).
def manual_seed(seed: int) -> None:
    """Seed the current cuda device's generator."""
    from .. import random
    random.manual_seed_cuda(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every cuda device's generator."""
    from .. import random
    random.manual_seed_all(seed)


def seed() -> int:
    from .. import random
    return random.cuda_generator().seed()


def seed_all() -> None:
    from .. import random
    s = random.cuda_generator().seed()
    random.manual_seed_all(s)


def initial_seed() -> int:
    from .. import random
    return random.cuda_generator().initial_seed()


def get_rng_state_all() -> list[Any]:
    """Every cuda device's generator state."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states: Any) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def get_rng_state(device: Any = "cuda") -> Any:
    from .. import random
    from ..device import as_device
    return random.cuda_generator(as_device(device).index or 0).get_state()


def set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    from .. import random
    from ..device import as_device
    random.cuda_generator(as_device(device).index or 0).set_state(new_state)

# torch.cuda.amp (autocast / GradScaler) and torch.cuda.nccl (version() and friends) as submodules
from . import amp, nccl  # noqa: E402,F401

# CUDA graphs: capture once, replay with one driver call.
from .graphs import (  # noqa: E402,F401
    CUDAGraph,
    graph,
    graph_pool_handle,
    is_current_stream_capturing,
    make_graphed_callables,
)

# NCCL behind process groups: importing it registers it with rawdev.distributed (which cannot import this layer).
from .process_group_nccl import ProcessGroupNccl as _ProcessGroupNccl  # noqa: E402,F401

# Streams, events and device properties, as torch.cuda's.
from .streams import (  # noqa: E402,F401
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    get_device_properties,
    is_bf16_supported,
    stream,
)
