"""torch.distributed.fsdp.wrap: the auto-wrap policies (pure functions of a module: whether to descend into it
and whether to wrap it) and the manual enable_wrap / wrap pair. FullyShardedDataParallel(auto_wrap_policy=...)
runs `_recursive_wrap` over its module's children, bottom-up, so every unit is built before its parent."""
import contextlib
from collections.abc import Iterable

from ...nn import Module, ModuleDict, ModuleList, MultiheadAttention

__all__ = ["always_wrap_policy", "lambda_auto_wrap_policy", "transformer_auto_wrap_policy",
           "size_based_auto_wrap_policy", "ModuleWrapPolicy", "enable_wrap", "wrap"]


def always_wrap_policy(module, recurse, nonwrapped_numel, *args, **kwargs) -> bool:
    """Wrap every module (descend into every one).

    Args:
        module: the candidate module.
        recurse: True when asked whether to descend into `module`, False when asked whether to wrap it.
        nonwrapped_numel: the elements of its parameters not already wrapped.

    Returns:
        True.

    Example:
        >>> FSDP(model, auto_wrap_policy=always_wrap_policy)
    """
    return True


def _module_wrap_policy(module, recurse, nonwrapped_numel, module_classes) -> bool:
    if recurse:
        return True
    return isinstance(module, tuple(module_classes))


def lambda_auto_wrap_policy(module, recurse, nonwrapped_numel, lambda_fn) -> bool:
    """Wrap the modules for which `lambda_fn(module)` is true (descend into all), used through functools.partial.

    Args:
        module: the candidate module.
        recurse: True when asked whether to descend, False when asked whether to wrap.
        nonwrapped_numel: the elements of its parameters not already wrapped.
        lambda_fn: module -> bool.

    Returns:
        Whether to descend (always) or wrap.

    Example:
        >>> policy = functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda m: isinstance(m, nn.Linear))
    """
    if recurse:
        return True
    return bool(lambda_fn(module))


def transformer_auto_wrap_policy(module, recurse, nonwrapped_numel, transformer_layer_cls) -> bool:
    """Wrap every instance of the classes in `transformer_layer_cls` (a set of module classes).

    Args:
        module: the candidate module.
        recurse: True when asked whether to descend, False when asked whether to wrap.
        nonwrapped_numel: the elements of its parameters not already wrapped.
        transformer_layer_cls: the classes to wrap.

    Returns:
        Whether to descend (always) or wrap.

    Example:
        >>> policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
    """
    return _module_wrap_policy(module, recurse, nonwrapped_numel, transformer_layer_cls)


def size_based_auto_wrap_policy(module, recurse, nonwrapped_numel, min_num_params=100000000,
                                force_leaf_modules=None, exclude_wrap_modules=None) -> bool:
    """Wrap a module once the parameters it would hold (those not already in a nested unit) reach
    `min_num_params`.

    Args:
        module: the candidate module.
        recurse: True when asked whether to descend, False when asked whether to wrap.
        nonwrapped_numel: the elements of its parameters not already wrapped.
        min_num_params: the threshold (default 1e8).
        force_leaf_modules: classes never descended into (default: {MultiheadAttention}).
        exclude_wrap_modules: classes never wrapped (default: {ModuleList, ModuleDict}).

    Returns:
        Whether to descend or wrap.

    Example:
        >>> policy = functools.partial(size_based_auto_wrap_policy, min_num_params=20000)
    """
    force_leaf_modules = (size_based_auto_wrap_policy.FORCE_LEAF_MODULES  # type: ignore[attr-defined]
                          if force_leaf_modules is None else force_leaf_modules)
    exclude_wrap_modules = (size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES  # type: ignore[attr-defined]
                            if exclude_wrap_modules is None else exclude_wrap_modules)
    is_large = nonwrapped_numel >= min_num_params
    if recurse:
        return is_large and not isinstance(module, tuple(force_leaf_modules))
    return is_large and not isinstance(module, tuple(exclude_wrap_modules))


size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES = {ModuleList, ModuleDict}  # type: ignore[attr-defined]
size_based_auto_wrap_policy.FORCE_LEAF_MODULES = {MultiheadAttention}  # type: ignore[attr-defined]


def _or_policy(module, recurse, nonwrapped_numel, policies) -> bool:
    return any(policy(module=module, recurse=recurse, nonwrapped_numel=nonwrapped_numel) for policy in policies)


def _wrap_module_cls_individually(module, module_classes, recurse, *args, **kwargs) -> bool:
    if recurse:
        return True
    return isinstance(module, tuple(module_classes))


class ModuleWrapPolicy:
    """Wrap every module whose class is one of `module_classes`.

    Args:
        module_classes: an iterable of module classes.

    Example:
        >>> FSDP(model, auto_wrap_policy=ModuleWrapPolicy({TransformerBlock}))
    """

    def __init__(self, module_classes: Iterable[type]):
        self._module_classes = set(module_classes)
        self._module_classes_str = str(self._module_classes)

    def __call__(self, module, recurse, *args, **kwargs):
        return _module_wrap_policy(module, recurse, nonwrapped_numel=-1, module_classes=self._module_classes)

    def __repr__(self):
        return super().__repr__() + f"({self._module_classes_str})"


class _ConfigAutoWrap:
    in_autowrap_context = False
    wrapper_cls = None
    kwargs: dict = {}


@contextlib.contextmanager
def enable_wrap(*, wrapper_cls, **wrapper_kwargs):
    """Inside the block, `wrap(module)` wraps with `wrapper_cls(module, **wrapper_kwargs)`.

    Args:
        wrapper_cls: the wrapper class (FullyShardedDataParallel).
        **wrapper_kwargs: arguments every wrap() passes on.

    Example:
        >>> with enable_wrap(wrapper_cls=FSDP, process_group=pg):
        ...     layer = wrap(nn.Linear(4, 4))
    """
    if _ConfigAutoWrap.in_autowrap_context:
        raise NotImplementedError("You are already within an autowrap context and we currently do not supported "
                                  "nested autowrap.")
    _ConfigAutoWrap.in_autowrap_context = True
    _ConfigAutoWrap.wrapper_cls = wrapper_cls
    _ConfigAutoWrap.kwargs = dict(wrapper_kwargs)
    try:
        yield
    finally:
        _ConfigAutoWrap.in_autowrap_context = False
        _ConfigAutoWrap.wrapper_cls = None
        _ConfigAutoWrap.kwargs = {}


def wrap(module, **wrap_overrides):
    """Wrap `module` with the enclosing enable_wrap's wrapper (its kwargs, updated by `wrap_overrides`); outside
    an enable_wrap block, return `module` unchanged.

    Args:
        module: the module to wrap.
        **wrap_overrides: arguments that replace the enable_wrap ones for this module.

    Returns:
        The wrapped module (or `module`).

    Example:
        >>> with enable_wrap(wrapper_cls=FSDP):
        ...     model = wrap(Net())
    """
    if _ConfigAutoWrap.in_autowrap_context:
        kwargs = {**_ConfigAutoWrap.kwargs, **wrap_overrides}
        return _wrap(module, _ConfigAutoWrap.wrapper_cls, **kwargs)
    return module


def _wrap(module, wrapper_cls, **kwargs):
    overrides = getattr(module, "_wrap_overrides", None)
    if overrides:
        kwargs = {**kwargs, **overrides}
    return wrapper_cls(module, **kwargs)


def _recursive_wrap(module: Module, auto_wrap_policy, wrapper_cls, ignored_modules, ignored_params,
                    only_wrap_children=False, **kwargs):
    """Wrap `module`'s subtree bottom-up as the policy says; returns (module or its wrapper, the number of
    parameter elements now wrapped). Parameters in ignored modules, or already inside a unit, do not count."""
    nonwrapped_numel = sum(p.numel() for p in module.parameters()
                           if id(p) not in ignored_params and not getattr(p, "_is_flat_param", False))
    if not auto_wrap_policy(module=module, recurse=True, nonwrapped_numel=nonwrapped_numel):
        return module, 0
    total_wrapped = 0
    for name, child in list(module.named_children()):
        if child is None or id(child) in ignored_modules or isinstance(child, wrapper_cls):
            continue
        wrapped, n = _recursive_wrap(child, auto_wrap_policy, wrapper_cls, ignored_modules, ignored_params,
                                     **kwargs)
        if wrapped is not child:
            setattr(module, name, wrapped)
        total_wrapped += n
    remainder = nonwrapped_numel - total_wrapped
    if not only_wrap_children and auto_wrap_policy(module=module, recurse=False, nonwrapped_numel=remainder):
        return _wrap(module, wrapper_cls, **kwargs), nonwrapped_numel
    return module, total_wrapped
