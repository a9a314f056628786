"""The named tuples ops return (torch.return_types): one constructor, so every op's result type is made the
same way and reports PyTorch's module name."""
import collections

__all__ = ["return_type"]


def return_type(name, fields=("values", "indices")):
    """A namedtuple class `name` with `fields`, shown as rawdev.return_types.<name> (PyTorch's
    torch.return_types.<name>)."""
    t = collections.namedtuple(name, list(fields))  # type: ignore[misc]
    t.__module__ = "rawdev.return_types"
    return t
