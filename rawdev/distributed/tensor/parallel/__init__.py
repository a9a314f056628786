"""`torch.distributed.tensor.parallel`: tensor parallelism — parallelize_module and the styles
(ColwiseParallel, RowwiseParallel, SequenceParallel, PrepareModuleInput, PrepareModuleOutput) over a 1-d
DeviceMesh. See docs/INTERNALS.md, "DeviceMesh and DTensor"."""
from ....refusals import Refused
from .api import parallelize_module
from .style import (
    ColwiseParallel,
    ParallelStyle,
    PrepareModuleInput,
    PrepareModuleOutput,
    RowwiseParallel,
    SequenceParallel,
)

__all__ = ["parallelize_module", "ParallelStyle", "ColwiseParallel", "RowwiseParallel", "SequenceParallel",
           "PrepareModuleInput", "PrepareModuleOutput"]

# cross entropy on a class-sharded DTensor is not built: the name imports and says so when used
loss_parallel = Refused("torch.distributed.tensor.parallel.loss_parallel", "loss_parallel (cross entropy over "
                        "class-sharded logits)", "rawdev's DTensor has no sharded cross-entropy rule; use "
                        "ColwiseParallel(output_layouts=Replicate()) on the output layer and a plain loss")
