"""CUDA graphs as PyTorch names them: `CUDAGraph`, the `graph` context manager, `graph_pool_handle`,
`make_graphed_callables`. The driver work is rawdev.runtime.graphs (capture on the compute stream, a
private memory pool, one cuGraphLaunch per replay).

What a captured region may do is what a GPU allows: queue kernels and device copies. A host read
(`.item()`, `.cpu()`, printing a cuda tensor), a synchronize, or a copy from pageable host memory inside
the capture ends it with the driver's error (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED / _IMPLICIT /
_ISOLATION), as on a GPU. Inputs go in by `static_input.copy_(new)` before `replay()`; outputs are the
tensors the capture made, overwritten by each replay.
"""
import contextlib

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "make_graphed_callables", "is_current_stream_capturing"]


def _rdev(device=None):
    from .device_arg import _dev
    return _dev(device)


class CUDAGraph:
    """A CUDA graph: capture once (`capture_begin`/`capture_end`, or `with rawdev.cuda.graph(g):`), then
    `replay()` launches all of it with one driver call.

    Example:
        >>> g = rawdev.cuda.CUDAGraph()
        >>> static_x = rawdev.zeros(8, 4, device="cuda")
        >>> with rawdev.cuda.graph(g):
        ...     static_y = model(static_x)
        >>> static_x.copy_(batch); g.replay()     # static_y now holds model(batch)
    """

    def __init__(self, keep_graph=False):
        self._g = None
        self.keep_graph = keep_graph

    def capture_begin(self, pool=None, capture_error_mode="global", pool_size=None):
        """Begin capturing the current device's work. pool: a handle from graph_pool_handle() or
        other_graph.pool() to share memory with; pool_size: bytes of a new private pool (rawdev's)."""
        from ..runtime.graphs import CapturedGraph
        modes = {"global": 0, "thread_local": 1, "relaxed": 2}
        if capture_error_mode not in modes:
            raise ValueError(f"capture_error_mode must be one of {sorted(modes)}, got {capture_error_mode!r}")
        rdev = _rdev()
        shared = pool._pool(rdev, pool_size) if isinstance(pool, _PoolHandle) else None
        self._g = CapturedGraph(rdev)
        self._g.begin(pool=shared, pool_bytes=pool_size, mode=modes[capture_error_mode])

    def capture_end(self):
        self._require("capture_end").end()

    def replay(self):
        """Launch the captured work on the compute stream (after everything queued before it)."""
        if self._g is None:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful capture.")
        self._g.replay()

    def reset(self):
        """Free the graph; its private pool goes once no tensor uses it."""
        if self._g is not None:
            self._g.reset()
            self._g = None

    def pool(self):
        """A handle to this graph's memory pool, to share it with a later capture (`pool=`)."""
        g = self._require("pool")
        return _PoolHandle(g.pool)

    def num_nodes(self):
        """How many nodes the captured graph has (rawdev's: kernels, copies and memsets)."""
        return self._require("num_nodes").nodes

    def _require(self, what):
        if self._g is None:
            raise RuntimeError(f"CUDAGraph.{what}() needs a capture (capture_begin) first")
        return self._g

    def __del__(self):
        try:
            self.reset()
        except Exception:
            pass


class _PoolHandle:
    """What graph_pool_handle() and CUDAGraph.pool() return: a memory pool captures can share."""

    def __init__(self, pool=None):
        self.p = pool

    def _pool(self, rdev, nbytes):
        if self.p is None:
            from ..runtime.graphs import DEFAULT_POOL_BYTES, GraphPool
            self.p = GraphPool(rdev, nbytes or DEFAULT_POOL_BYTES)
            self.p.graphs += 1   # the handle itself keeps the pool open until it is collected
            self._owned = True
        return self.p

    def __del__(self):
        if getattr(self, "_owned", False) and self.p is not None:
            try:
                self.p.close()
            except Exception:
                pass


def graph_pool_handle():
    """A memory pool handle to pass as `pool=` to several captures, so they share one private pool."""
    return _PoolHandle()


def is_current_stream_capturing():
    """True while a CUDA graph is being captured on the current device."""
    from ..runtime import is_available
    if not is_available():
        return False
    return _rdev().allocator.capture_pool is not None


@contextlib.contextmanager
def graph(cuda_graph, pool=None, stream=None, capture_error_mode="global", pool_size=None):
    """Capture the work of the `with` body into cuda_graph (PyTorch's torch.cuda.graph).

    Args:
        cuda_graph: a CUDAGraph.
        pool: a pool handle to share (graph_pool_handle() or another graph's pool()).
        stream: accepted for PyTorch's signature; rawdev captures on the device's compute stream, where all
            of its work is ordered.
        capture_error_mode: "global" (default), "thread_local" or "relaxed", as cuStreamBeginCapture's mode.
        pool_size: bytes for a new private pool (rawdev's; default RAWDEV_GRAPH_POOL_BYTES or 64 MiB).
    """
    cuda_graph.capture_begin(pool=pool, capture_error_mode=capture_error_mode, pool_size=pool_size)
    try:
        yield cuda_graph
    except BaseException:
        g = cuda_graph._g
        cuda_graph._g = None
        if g is not None:
            g.abort()
        raise
    cuda_graph.capture_end()


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False, pool=None):
    """Graph a callable's forward and backward (PyTorch's make_graphed_callables, for one callable or a tuple).

    The callable (a function or Module) is run num_warmup_iters times on sample_args, then its forward and its
    backward are captured as two graphs. The returned callable copies its arguments into the static inputs,
    replays the forward graph and returns outputs whose backward replays the backward graph, giving gradients
    to the inputs that require them and accumulating the parameters' .grad as eager autograd would.
    """
    single = not isinstance(callables, tuple)
    if single:
        callables, sample_args = (callables,), (sample_args,)
    mempool = pool if pool is not None else graph_pool_handle()
    out = [_graph_one(fn, args, mempool, num_warmup_iters, allow_unused_input)
           for fn, args in zip(callables, sample_args)]
    return out[0] if single else tuple(out)


def _graph_one(fn, args, mempool, num_warmup_iters, allow_unused_input):
    """make_graphed_callables for one callable: warm up, capture forward and backward, wrap."""
    from ..autograd import grad as autograd_grad
    from ..autograd.function import Function
    from ..autograd.grad_mode import no_grad
    from ..tensor.core import Tensor

    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    if not all(isinstance(a, Tensor) and a.is_cuda for a in args):
        raise TypeError("make_graphed_callables: sample_args must be CUDA tensors")
    params = tuple(p for p in fn.parameters() if p.requires_grad) if hasattr(fn, "parameters") else ()
    if hasattr(fn, "_forward_hooks") and (fn._forward_hooks or fn._forward_pre_hooks):
        raise RuntimeError("Modules must not have hooks registered at the time they are passed. However, "
                           "registering hooks on modules after passing them through make_graphed_callables "
                           "is allowed.")
    grad_inputs = tuple(a for a in args if a.requires_grad) + params
    for _ in range(num_warmup_iters):
        outputs = fn(*args)
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        diff = tuple(o for o in outs if o.requires_grad)
        if diff and grad_inputs:
            autograd_grad(diff, grad_inputs, grad_outputs=tuple(o.new_ones(o.shape) for o in diff),
                          allow_unused=allow_unused_input)
    fwd_graph, bwd_graph = CUDAGraph(), CUDAGraph()
    with graph(fwd_graph, pool=mempool):
        static_outputs = fn(*args)
    single_out = not isinstance(static_outputs, tuple)
    outs = (static_outputs,) if single_out else static_outputs
    diff_idx = [i for i, o in enumerate(outs) if o.requires_grad]
    static_grad_outputs = tuple(outs[i].new_zeros(outs[i].shape) for i in diff_idx)
    with graph(bwd_graph, pool=mempool):
        grads = autograd_grad(tuple(outs[i] for i in diff_idx), grad_inputs, grad_outputs=static_grad_outputs,
                              allow_unused=allow_unused_input) if diff_idx and grad_inputs else ()
    static_grads = tuple(grads)
    n_args = len(args)
    arg_needs = [a.requires_grad for a in args]

    class Graphed(Function):
        node_name = "GraphedBackward"

        @staticmethod
        def forward(ctx, *inputs):
            with no_grad():
                for static, new in zip(args, inputs[:n_args]):
                    if static.data_ptr() != new.data_ptr():
                        static.copy_(new)
            fwd_graph.replay()
            return tuple(o.detach() for o in outs)

        @staticmethod
        def backward(ctx, *gouts):
            with no_grad():
                for static, i in zip(static_grad_outputs, diff_idx):
                    if gouts[i] is None:
                        static.zero_()
                    elif static.data_ptr() != gouts[i].data_ptr():
                        static.copy_(gouts[i])
            bwd_graph.replay()
            it = iter(static_grads)
            res = [next(it).detach() if need else None for need in arg_needs]
            res += [next(it).detach() for _ in params]
            return tuple(res)

    def run(*user_args):
        if len(user_args) != n_args:
            raise TypeError(f"the graphed callable takes {n_args} arguments, got {len(user_args)}")
        res = Graphed.apply(*user_args, *params)
        return res[0] if single_out else res

    run._graphs = (fwd_graph, bwd_graph)
    if hasattr(fn, "forward") and hasattr(fn, "training"):   # a Module: graphed in training, eager in eval
        orig = fn.forward

        def forward(*a):
            return run(*a) if fn.training else orig(*a)
        fn.forward = forward
        return fn
    return run
