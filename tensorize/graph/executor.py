"""The graph executor: compiled kernels run in order over preallocated buffers.

Graph inputs own a buffer each (copied in on each run), constants a kernel reads are copied in once
(weights packed at load take the place of the originals they were packed from), and a view (reshape)
shares its source's memory. Kernel outputs share one arena by liveness, as onnxruntime's and TVM's memory
planners do: once a value's last reader has run, its bytes serve the next output that fits, at the lowest
free offset (first fit), so the arena stays small and its low end, which the last kernels touched, in
cache (MobileNet-V2 allocated 27 MiB of outputs, one buffer per value, and its kernels ran twice as slowly
in sequence as alone, their output lines fetched from memory before being written; its arena is 6.5 MiB).
Each kernel call is bound to its buffers once (``PackedFunc.prepare``), so a run is one loop of C calls
with no per-element Python and no copies between kernels.
"""
from __future__ import annotations

import bisect
import logging

import numpy as np

from ..errors import TVMValueError
from ..runtime.ndarray import aligned_empty

logger = logging.getLogger(__name__)

__all__ = ["GraphExecutor"]

_ALIGN = 64


class GraphExecutor:
    """Runs ``calls`` (``(packed_func, arg_values, output_value)``, in order) over buffers for ``graph``'s
    values; ``packed`` names arrays (packed weights) that calls read beside the graph's values.

    Attributes
    ----------
    buffers : dict of str to numpy.ndarray
        Every value's array (values planned into one storage block share its memory).
    num_packed : int
        How many packed weights the calls read.
    planned_bytes, unplanned_bytes : int
        The arena the kernels' outputs share, and what one buffer per output would take.
    """

    def __init__(self, graph, calls, packed: dict | None = None):
        self.graph = graph
        self.buffers: dict[str, np.ndarray] = dict(packed or {})
        self.num_packed = len(self.buffers)
        self._producers = graph.producers()
        for name in graph.inputs:
            self._alloc(name)
        self._plan([args for _, args, _ in calls], [out for _, _, out in calls])
        self._runs = [func.prepare(*[self._buffer(v) for v in args], self._buffer(out)) for func, args, out in calls]
        for name in graph.outputs:  # an output no kernel writes (a constant, a view of an input)
            self._buffer(name)

    def _root(self, name: str) -> str:
        """The value whose memory ``name`` views (itself unless it is a reshape)."""
        node = self._producers.get(name)
        while node is not None and node.op == "reshape":
            name = node.inputs[0]
            node = self._producers.get(name)
        return name

    def _plan(self, call_args, call_outputs) -> None:
        """Give every kernel output (view roots only) a place in one arena, shared between values whose
        lives do not overlap: each output takes the lowest offset free for it (first fit), so the low end
        of the arena, which the last few kernels touched, serves most outputs while it is still in cache."""
        last_use: dict[str, float] = {}
        for i, args in enumerate(call_args):
            for value in args:
                last_use[self._root(value)] = i
        for value in self.graph.outputs:
            last_use[self._root(value)] = float("inf")
        live: list[tuple[int, int, str]] = []  # (offset, bytes, value), sorted by offset
        places: dict[str, tuple[int, int]] = {}
        arena = self.unplanned_bytes = 0
        for i, out in enumerate(call_outputs):
            root = self._root(out)
            if root in self.buffers or root in places:
                continue
            shape, dtype = self.graph.types[root]
            nbytes = max(1, int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize)
            self.unplanned_bytes += nbytes
            offset = 0
            for start, size, _ in live:  # the first gap that holds it
                if start - offset >= nbytes:
                    break
                offset = max(offset, -(-(start + size) // _ALIGN) * _ALIGN)
            bisect.insort(live, (offset, nbytes, root))
            places[root] = (offset, nbytes)
            arena = max(arena, offset + nbytes)
            done = {self._root(v) for v in set(call_args[i]) | {out}}  # what this call read (or wrote) last
            live = [entry for entry in live if not (entry[2] in done and last_use.get(entry[2], -1) <= i)]
        self.planned_bytes = arena
        storage = aligned_empty((max(arena, 1),), np.dtype("uint8"), _ALIGN)
        for root, (offset, nbytes) in places.items():
            shape, dtype = self.graph.types[root]
            self.buffers[root] = storage[offset:offset + nbytes].view(np.dtype(dtype)).reshape(shape)
        logger.debug("graph storage: a %d-byte arena for %d bytes of outputs", arena, self.unplanned_bytes)

    def _alloc(self, name: str) -> np.ndarray:
        shape, dtype = self.graph.types[name]
        self.buffers[name] = aligned_empty(shape, np.dtype(dtype), _ALIGN)
        if name in self.graph.constants:
            np.copyto(self.buffers[name], self.graph.constants[name])
        return self.buffers[name]

    def _buffer(self, name: str) -> np.ndarray:
        if name in self.buffers:
            return self.buffers[name]
        node = self._producers.get(name)
        if node is not None and node.op == "reshape":
            self.buffers[name] = self._buffer(node.inputs[0]).reshape(self.graph.types[name][0])
            return self.buffers[name]
        return self._alloc(name)

    def set_input(self, name: str, value) -> None:
        """Copy ``value`` into the buffer of graph input ``name``.

        Parameters
        ----------
        name : str
            A graph input.
        value : array_like
            Its value, of the input's shape (cast to its dtype).

        Raises
        ------
        TVMValueError
            When the shape differs.
        """
        shape, dtype = self.graph.types[name]
        value = np.asarray(value)
        if value.shape != shape:
            raise TVMValueError(f"input {name!r}: expected shape {shape}, got {value.shape}")
        np.copyto(self.buffers[name], value, casting="same_kind" if value.dtype.kind == np.dtype(dtype).kind
                  else "unsafe")

    def run(self) -> list:
        """Run every kernel in order on the current inputs.

        Returns
        -------
        list of numpy.ndarray
            Copies of the graph's outputs, in order.
        """
        for run in self._runs:
            run()
        return [self.buffers[name].copy() for name in self.graph.outputs]
