"""`torch.fx.passes.shape_prop`: run a GraphModule on example inputs and record each node's tensor shape and
dtype in node.meta['tensor_meta']."""
from typing import Any, NamedTuple

from ..interpreter import Interpreter
from ..node import Node, map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    """What ShapeProp records for a tensor value."""
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple[int, ...]
    memory_format: Any | None
    is_quantized: bool
    qparams: dict[str, Any]


def _extract_tensor_metadata(result: Any) -> TensorMetadata:
    from ...tensor.memfmt import contiguous_format
    fmt = contiguous_format if result.is_contiguous() else None
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, tuple(result.stride()), fmt, False, {})


class ShapeProp(Interpreter):
    """Runs the module and stores, for each node producing tensors, node.meta['tensor_meta'] (a TensorMetadata,
    or a structure of them) and node.meta['type'].

    Args:
        gm: the GraphModule.

    Example:
        >>> ShapeProp(gm).propagate(torch.randn(2, 3))   # doctest: +SKIP
        >>> [n.meta['tensor_meta'].shape for n in gm.graph.nodes if 'tensor_meta' in n.meta]
    """

    def run_node(self, n: Node) -> Any:
        from ...tensor import Tensor
        result = super().run_node(n)
        found = False

        def extract(obj: Any) -> Any:
            nonlocal found
            if isinstance(obj, Tensor):
                found = True
                return _extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Run on args, recording shapes.

        Args:
            *args: example inputs.

        Returns:
            The module's output.

        Example:
            >>> ShapeProp(gm).propagate(x)   # doctest: +SKIP
        """
        return super().run(*args)
