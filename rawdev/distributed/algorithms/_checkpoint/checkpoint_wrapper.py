"""`torch.distributed.algorithms._checkpoint.checkpoint_wrapper`: activation checkpointing as a module wrapper.
`checkpoint_wrapper(module)` returns a CheckpointWrapper whose forward runs the module through
rawdev.utils.checkpoint.checkpoint (activations are dropped and recomputed in backward), and
`apply_activation_checkpointing(model, check_fn=...)` swaps the matching submodules of a model for wrapped ones in
place. The wrapper holds the module as `_checkpoint_wrapped_module` but its state_dict and named_parameters use
the module's own names, so checkpoints load into the plain model and back, as PyTorch's do.

rawdev has one checkpoint implementation (recompute in backward, RNG state restored); CheckpointImpl.REENTRANT
and NO_REENTRANT both run it, REENTRANT packing keyword arguments into positional ones as PyTorch does.
`offload_wrapper(module)` returns an OffloadWrapper, whose forward runs under save_on_cpu(pin_memory=True):
the activations the module saves for backward wait in pinned host memory instead of on the device."""
import enum
import functools
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from ....nn.module import Module
from ....utils.checkpoint import checkpoint as _utils_checkpoint

__all__ = ["CheckpointImpl", "ActivationWrapper", "CheckpointWrapper", "checkpoint_wrapper",
           "apply_activation_checkpointing", "offload_wrapper", "OffloadWrapper"]

_CHECKPOINT_WRAPPED_MODULE = "_checkpoint_wrapped_module"
_CHECKPOINT_PREFIX = _CHECKPOINT_WRAPPED_MODULE + "."


class CheckpointImpl(enum.Enum):
    """Which torch.utils.checkpoint variant the wrapper asks for (`use_reentrant=` True or False)."""
    REENTRANT = enum.auto()
    NO_REENTRANT = enum.auto()


def _replace_by_prefix(state_dict, old_prefix, new_prefix):
    """Rename, in place, every key starting with old_prefix to start with new_prefix instead."""
    if old_prefix == new_prefix:
        raise ValueError("old_prefix and new_prefix must be distinct")
    for key in list(state_dict.keys()):
        if key.startswith(old_prefix):
            state_dict[new_prefix + key[len(old_prefix):]] = state_dict.pop(key)


class ActivationWrapper(Module):
    """The base of CheckpointWrapper: holds the wrapped module, forwards attribute lookups and indexing to it,
    and hides its `_checkpoint_wrapped_module.` prefix from state_dict and named_parameters (adding it back when
    a state_dict is loaded). Not meant to be instantiated directly.

    Args:
        mod: the module to wrap.
    """

    def __init__(self, mod: Module) -> None:
        super().__init__()
        self._checkpoint_wrapped_module = mod
        self._register_state_dict_hook(self._post_state_dict_hook)
        self._register_load_state_dict_pre_hook(self._pre_load_state_dict_hook, with_module=True)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Subclasses run the wrapped module here."""
        raise ValueError("Subclasses should implement forward().")

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._checkpoint_wrapped_module, name)

    def __getitem__(self, key: int) -> Any:
        return self._checkpoint_wrapped_module.__getitem__(key)

    def named_parameters(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """The wrapped module's parameters under their unwrapped names (the wrapper's prefix removed).

        Args:
            *args: as Module.named_parameters (prefix, recurse, remove_duplicate).
            **kwargs: as Module.named_parameters.

        Returns:
            An iterator of (name, Parameter).
        """
        for name, param in super().named_parameters(*args, **kwargs):
            yield name.replace(_CHECKPOINT_PREFIX, ""), param

    @staticmethod
    def _post_state_dict_hook(module, state_dict, prefix, *args):
        # strip the wrapper's level so the entries load into an unwrapped module
        _replace_by_prefix(state_dict, f"{prefix}{_CHECKPOINT_PREFIX}", prefix)
        return state_dict

    @staticmethod
    def _pre_load_state_dict_hook(module, state_dict, prefix, *args):
        # put the level back, so a plain module's state_dict (or the stripped one above) loads into the wrapper
        _replace_by_prefix(state_dict, prefix, prefix + _CHECKPOINT_PREFIX)


def _pack_kwargs(*args, **kwargs):
    """args and kwargs as one flat tuple, plus the keyword names (the last len(keys) entries)."""
    return args + tuple(kwargs.values()), tuple(kwargs.keys())


def _unpack_kwargs(flat_args, kwarg_keys):
    n = len(flat_args) - len(kwarg_keys)
    return flat_args[:n], dict(zip(kwarg_keys, flat_args[n:]))


class CheckpointWrapper(ActivationWrapper):
    """A module that runs the module it wraps with activation checkpointing. Made by `checkpoint_wrapper`.

    Args:
        mod: the module to wrap.
        checkpoint_impl: CheckpointImpl.NO_REENTRANT (default) or REENTRANT (ignored with a checkpoint_fn).
        checkpoint_fn: a function called as `checkpoint_fn(module, *args, **checkpoint_fn_kwargs, **kwargs)`
            instead of rawdev.utils.checkpoint.checkpoint.
        **checkpoint_fn_kwargs: keyword arguments for the checkpoint function (e.g. preserve_rng_state).
    """

    def __init__(self, mod: Module, checkpoint_impl: CheckpointImpl = CheckpointImpl.NO_REENTRANT,
                 checkpoint_fn: Any = None, **checkpoint_fn_kwargs: Any) -> None:
        super().__init__(mod)
        self.checkpoint_impl = checkpoint_impl
        self.checkpoint_fn: Callable[..., Any]
        if checkpoint_fn is None:
            self.checkpoint_fn = functools.partial(
                _utils_checkpoint, use_reentrant=(checkpoint_impl == CheckpointImpl.REENTRANT),
                **checkpoint_fn_kwargs)
        else:
            self.checkpoint_fn = functools.partial(checkpoint_fn, **checkpoint_fn_kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the wrapped module through the checkpoint function.

        Args:
            *args: the wrapped module's positional arguments.
            **kwargs: its keyword arguments (with REENTRANT they are passed as positional ones to the
                checkpoint, so tensors among them get gradients, as in PyTorch).

        Returns:
            The wrapped module's output.
        """
        if self.checkpoint_impl == CheckpointImpl.REENTRANT and kwargs:
            flat_args, keys = _pack_kwargs(*args, **kwargs)

            def run(*inputs):
                a, k = _unpack_kwargs(inputs, keys)
                return self._checkpoint_wrapped_module(*a, **k)

            return self.checkpoint_fn(run, *flat_args)
        return self.checkpoint_fn(self._checkpoint_wrapped_module, *args, **kwargs)


def checkpoint_wrapper(module: Module, checkpoint_impl: CheckpointImpl = CheckpointImpl.NO_REENTRANT,
                       checkpoint_fn: Any = None, **checkpoint_fn_kwargs: Any) -> Module:
    """Wrap `module` so that every call runs it with activation checkpointing.

    Args:
        module: the module to wrap.
        checkpoint_impl: CheckpointImpl.NO_REENTRANT (default) or REENTRANT (which warns, as PyTorch's does,
            that it will stop being supported).
        checkpoint_fn: a checkpoint function to use instead of rawdev.utils.checkpoint.checkpoint.
        **checkpoint_fn_kwargs: keyword arguments passed to the checkpoint function.

    Returns:
        A CheckpointWrapper around `module`.

    Example:
        >>> block = checkpoint_wrapper(nn.Sequential(nn.Linear(8, 8), nn.ReLU()))
        >>> y = block(x)   # block's activations are recomputed during backward
    """
    if checkpoint_impl == CheckpointImpl.REENTRANT:
        warnings.warn(f"Please specify {CheckpointImpl.NO_REENTRANT} as {CheckpointImpl.REENTRANT} will soon be "
                      "removed as the default and eventually deprecated.", FutureWarning, stacklevel=2)
    return CheckpointWrapper(module, checkpoint_impl, checkpoint_fn, **checkpoint_fn_kwargs)


def _numel(module):
    return sum(p.numel() for p in module.parameters())


def _recursive_wrap(module, policy, wrapper_fn, only_wrap_children=False):
    """PyTorch's FSDP auto-wrap walk: when policy(recurse=True) lets it descend, children are wrapped first
    (post-order), then this module if policy(recurse=False) accepts the parameters its children left unwrapped.
    Returns (module or its wrapper, number of parameter elements now inside wrappers)."""
    nonwrapped = _numel(module)
    if not policy(module=module, recurse=True, nonwrapped_numel=nonwrapped):
        return module, 0
    wrapped = 0
    for name, child in list(module.named_children()):
        new_child, n = _recursive_wrap(child, policy, wrapper_fn)
        setattr(module, name, new_child)
        wrapped += n
    if not only_wrap_children and policy(module=module, recurse=False, nonwrapped_numel=nonwrapped - wrapped):
        return wrapper_fn(module), nonwrapped
    return module, wrapped


def apply_activation_checkpointing(model: Module, checkpoint_wrapper_fn: Callable = checkpoint_wrapper,
                                   check_fn: Callable = lambda _: True, auto_wrap_policy: Any = None) -> None:
    """Replace, in place, the submodules of `model` that check_fn (or auto_wrap_policy) selects with
    `checkpoint_wrapper_fn(submodule)`. The root module itself is never wrapped; a selected submodule's own
    selected submodules are wrapped first (inside it).

    Args:
        model: the model to change.
        checkpoint_wrapper_fn: called with each selected module; returns its replacement.
        check_fn: called with each submodule; True selects it.
        auto_wrap_policy: instead of check_fn, a callable `policy(module=, recurse=, nonwrapped_numel=)` as
            PyTorch's FSDP wrap policies: with recurse=True it says whether to look inside the module, with
            recurse=False whether to wrap it (nonwrapped_numel: its parameter elements not already wrapped).

    Returns:
        None (model is modified in place).

    Example:
        >>> model = nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 10))
        >>> apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, nn.Linear))
        >>> type(model[0]).__name__
        'CheckpointWrapper'
    """
    if auto_wrap_policy is not None:
        policy = auto_wrap_policy
    else:
        def policy(module, recurse, nonwrapped_numel):   # PyTorch's lambda_auto_wrap_policy
            return True if recurse else check_fn(module)
    if not callable(policy):
        raise ValueError(f"Expected {policy} to be callable or be a pre-defined wrap policy")
    _recursive_wrap(model, policy, checkpoint_wrapper_fn, only_wrap_children=True)


class OffloadWrapper(ActivationWrapper):
    """A module that runs the module it wraps under autograd.graph.save_on_cpu(pin_memory=True): what its ops
    save for backward is kept in pinned host memory and copied back when backward needs it. Made by
    `offload_wrapper`.

    Args:
        mod: the module to wrap.
    """

    def __init__(self, mod: Module) -> None:
        super().__init__(mod)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the wrapped module with its saved activations offloaded to the cpu."""
        from ....autograd.graph import save_on_cpu
        with save_on_cpu(pin_memory=True):
            return self._checkpoint_wrapped_module(*args, **kwargs)


def offload_wrapper(module: Module) -> OffloadWrapper:
    """Wrap a module so that the activations it saves for backward are offloaded to (pinned) cpu memory.

    Args:
        module: the module to wrap.

    Returns:
        An OffloadWrapper around it (its state_dict uses the module's own names).

    Example:
        >>> block = offload_wrapper(block)
    """
    return OffloadWrapper(module)
