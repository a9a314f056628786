"""torch.nn.modules.utils: the argument helpers layer code imports (`_pair(3)` is (3, 3)) and
consume_prefix_in_state_dict_if_present (strip a DataParallel "module." prefix from a state dict)."""
import collections.abc
from itertools import repeat

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n, name="parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """(1, 2) with n=2 -> (2, 2, 1, 1): the padding order F.pad reads."""
    return tuple(x for x in reversed(t) for _ in range(n))


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strip `prefix` from the keys of state_dict (and its _metadata) that start with it, in place.

    Args:
        state_dict: an OrderedDict from `module.state_dict()`.
        prefix: the prefix to remove, e.g. "module.".

    Returns:
        None (state_dict is changed in place).

    Example:
        >>> consume_prefix_in_state_dict_if_present(sd, "module.")
    """
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    meta = getattr(state_dict, "_metadata", None)
    if meta is not None:
        for key in list(meta.keys()):
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                meta[key[len(prefix):]] = meta.pop(key)
