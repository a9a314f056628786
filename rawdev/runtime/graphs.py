"""CUDA graphs: capture the work queued on a device's compute stream once, replay it with one driver call.

A capture (`CapturedGraph.begin` … `end`) puts the compute stream in capture mode
(cuStreamBeginCapture): kernels, copies and memsets queued on it become graph nodes instead of running.
`end` makes the graph (cuStreamEndCapture) and an executable graph (cuGraphInstantiate); `replay` is one
cuGraphLaunch on the compute stream, after everything queued before it.

Memory: a cuMemAllocFromPoolAsync on a capturing stream would make a graph memory node, whose address
rules differ from ordinary allocations. rawdev does what PyTorch's caching allocator does instead: before
the capture it allocates one block, the graph's private pool (`GraphPool`), and while the capture runs
every allocation on the device is a range of that block (no driver call) and every free gives its range
back. A replay therefore reads and writes the very addresses the capture saw: tensors made during the
capture (static outputs, gradients) keep their storage and are overwritten by each replay. Frees of
ordinary blocks that come due during a capture are held back until it ends (a free is not capturable).
The pool's block is freed when its graph is reset and no tensor uses a range of it any more.
"""
import os
import threading

from ..errors import CudaError
from . import kernels
from .memory import align
from .seam import call
from .trace import fmt_bytes

__all__ = ["GraphPool", "CapturedGraph", "DEFAULT_POOL_BYTES", "capturing"]

DEFAULT_POOL_BYTES = int(os.environ.get("RAWDEV_GRAPH_POOL_BYTES", str(64 << 20)))


def capturing(index=0):
    """True while a CUDA graph is being captured on device `index` (only a device already opened can be)."""
    from .device import _devices
    rdev = _devices.get(index)
    return rdev is not None and rdev.allocator.capture_pool is not None


class GraphPool:
    """One device block that serves the allocations made while capturing (first fit, 256-byte aligned)."""

    def __init__(self, rdev, nbytes, owner="CUDA graph pool"):
        self.rdev, self.nbytes, self.owner = rdev, align(nbytes), owner
        self.block = rdev.allocator.alloc(self.nbytes, rdev.compute_stream, owner)
        self.free_ranges = [(0, self.nbytes)]       # sorted (offset, nbytes)
        self.taken = {}                             # ptr -> (offset, nbytes)
        self.graphs, self.closed = 0, False         # graphs that still use it; no graph will any more
        self.held = []                              # host buffers the captured copies read at every replay
        self.lock = threading.Lock()
        rdev.allocator.graph_pools.append(self)

    def owns(self, ptr):
        return self.block is not None and self.block.ptr <= ptr < self.block.ptr + self.nbytes

    def take(self, nbytes, owner):
        """The address of a free range of nbytes (rounded up to 256), or None when none fits."""
        n = align(max(nbytes, 1))
        with self.lock:
            for i, (off, size) in enumerate(self.free_ranges):
                if size >= n:
                    self.free_ranges[i:i + 1] = [(off + n, size - n)] if size > n else []
                    ptr = self.block.ptr + off
                    self.taken[ptr] = (off, n)
                    self.block.parts.append((off, n, owner))
                    return ptr
        return None

    def give_back(self, ptr):
        with self.lock:
            off, n = self.taken.pop(ptr)
            self.block.parts[:] = [p for p in self.block.parts if p[0] != off]
            ranges = sorted(self.free_ranges + [(off, n)])
            merged = []
            for o, s in ranges:
                if merged and merged[-1][0] + merged[-1][1] == o:
                    merged[-1] = (merged[-1][0], merged[-1][1] + s)
                else:
                    merged.append((o, s))
            self.free_ranges = merged
            last = self.closed and not self.taken
        if last:
            self._release()

    def in_use(self):
        return sum(n for _, n in self.taken.values())

    def close(self):
        """No graph uses the pool any more: free its block now, or when the last tensor in it is freed."""
        self.graphs -= 1
        if self.graphs > 0:
            return
        self.closed = True
        if not self.taken:
            self._release()

    def _release(self):
        if self.block is not None:
            block, self.block = self.block, None
            alloc = self.rdev.allocator
            alloc.graph_pools[:] = [p for p in alloc.graph_pools if p is not self]
            alloc.free(block.ptr, block.stream.handle)

    def __repr__(self):
        return f"<GraphPool {fmt_bytes(self.nbytes)}, {fmt_bytes(self.in_use())} in use>"


class CapturedGraph:
    """A CUDA graph of the work queued on rdev's compute stream between begin() and end()."""

    def __init__(self, rdev):
        self.rdev = rdev
        self.graph = self.exec = self.pool = None
        self.stream = rdev.compute_stream
        self.nodes = 0

    def begin(self, pool=None, pool_bytes=None, mode=0):
        """Start capturing. pool: a GraphPool to share (another graph's); else a new one of pool_bytes."""
        if self.exec is not None or self.graph is not None:
            raise RuntimeError("this CUDA graph was already captured: call reset() before capturing again")
        rdev, alloc = self.rdev, self.rdev.allocator
        if alloc.capture_pool is not None:
            raise RuntimeError(f"a CUDA graph capture is already under way on {rdev}")
        rdev.activate()
        # Every module the captured work may need is loaded first: a module load during the capture would be
        # refused and invalidate it, and which kernels run must not depend on what ran before.
        kernels.load_all(rdev)
        rdev.synchronize()   # as PyTorch's capture_begin: no earlier work is pending when the capture starts
        alloc.flush()
        self.pool = pool if pool is not None else GraphPool(rdev, pool_bytes or DEFAULT_POOL_BYTES)
        self.pool.graphs += 1
        alloc.capture_pool = self.pool
        try:
            self.stream = rdev.compute_stream   # the current stream: the capture ends there whatever is current then
            call("cuStreamBeginCapture", self.stream.handle, mode,
                 ctx=f"beginning a CUDA graph capture on {rdev}'s compute stream")
        except BaseException:
            alloc.capture_pool = None
            self._drop_pool()
            raise

    def end(self):
        """Stop capturing; instantiate the graph. On failure nothing is kept and the error says why."""
        rdev, alloc = self.rdev, self.rdev.allocator
        try:
            self.graph = call("cuStreamEndCapture", self.stream.handle,
                              ctx=f"ending the CUDA graph capture on {rdev}")
        except BaseException:
            alloc.capture_pool = None
            self._leave_capture()
            self._drop_pool()
            raise
        alloc.capture_pool = None
        try:
            self.nodes = call("cuGraphGetNodes", self.graph, 0, ctx="counting the captured graph's nodes")[1]
            self.exec = call("cuGraphInstantiate", self.graph, 0, ctx=f"instantiating a CUDA graph on {rdev}")
        except BaseException:
            self.reset()
            raise
        alloc.flush()   # the frees held back during the capture

    def abort(self):
        """End a capture that failed in the user's code: discard what was captured."""
        alloc = self.rdev.allocator
        if alloc.capture_pool is None:
            return
        alloc.capture_pool = None
        self._leave_capture()
        self._drop_pool()

    def _leave_capture(self):
        """Take the compute stream out of capture mode whatever happened, discarding what was captured."""
        h = self.stream.handle
        for _ in range(2):   # a failed cuStreamEndCapture may leave the stream capturing: try once more
            try:
                if int(call("cuStreamIsCapturing", h, ctx="checking the capture state")) == 0:
                    return
                graph = call("cuStreamEndCapture", h, ctx="abandoning a CUDA graph capture")
                call("cuGraphDestroy", graph, ctx="destroying an abandoned CUDA graph")
                return
            except CudaError:
                pass   # an invalidated capture ends with an error: it holds nothing

    def replay(self):
        if self.exec is None:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful capture.")
        call("cuGraphLaunch", self.exec, self.rdev.compute_stream.handle,
             ctx=f"replaying a CUDA graph of {self.nodes} nodes on {self.rdev}", stream=self.rdev.compute_stream.handle)

    def reset(self):
        """Destroy the graph and executable graph; the private pool goes once nothing uses it."""
        ex, graph = self.exec, self.graph
        self.exec = self.graph = None
        if ex is not None:
            call("cuGraphExecDestroy", ex, ctx="destroying an executable CUDA graph")
        if graph is not None:
            call("cuGraphDestroy", graph, ctx="destroying a CUDA graph")
        self._drop_pool()

    def _drop_pool(self):
        if self.pool is not None:
            pool, self.pool = self.pool, None
            pool.close()
