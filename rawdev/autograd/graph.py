"""torch.autograd.graph's names that programs touch: Node (a grad_fn's type) and register hooks on nodes."""
from .function import Node

__all__ = ["Node"]


# Hooks on the tensors autograd saves for backward (pack/unpack, offload to cpu): rawdev's ops keep what they save
# inside each op's own context, with no pack/unpack seam to hook, so both context managers are refused.
from ..refusals import Refused as _Refused  # noqa: E402

_NO_SAVED_HOOKS = ("rawdev's autograd keeps saved tensors inside each op's context and has no pack/unpack hooks; "
                   "use rawdev.utils.checkpoint to trade compute for memory")
saved_tensors_hooks = _Refused("torch.autograd.graph.saved_tensors_hooks", "saved-tensor hooks", _NO_SAVED_HOOKS)
save_on_cpu = _Refused("torch.autograd.graph.save_on_cpu", "saved-tensor hooks (save_on_cpu)", _NO_SAVED_HOOKS)
