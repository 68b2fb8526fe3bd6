"""The graph executor: compiled kernels run in order over preallocated buffers.

Every value owns one aligned buffer, allocated once: graph inputs (copied in on each run),
constants a kernel reads (copied in once; weights packed at load take the place of the originals they
were packed from) and each kernel's output; a view (reshape) shares its source's memory.
Each kernel call is bound to its buffers once (``PackedFunc.prepare``), so a run is one loop of C
calls with no per-element Python and no copies between kernels.
"""
from __future__ import annotations

import logging

import numpy as np

from ..errors import TVMValueError
from ..runtime.ndarray import aligned_empty

logger = logging.getLogger(__name__)

__all__ = ["GraphExecutor"]


class GraphExecutor:
    """Runs ``calls`` (``(packed_func, arg_values, output_value)``) over buffers for ``graph``'s values;
    ``packed`` names arrays (packed weights) that calls read beside the graph's values."""

    def __init__(self, graph, calls, packed: dict | None = None):
        self.graph = graph
        self.buffers: dict[str, np.ndarray] = dict(packed or {})
        self.num_packed = len(self.buffers)
        for name in graph.inputs:
            self._alloc(name)
        producers = graph.producers()
        for node in graph.nodes:  # views alias their source (in topological order)
            if node.op == "reshape":
                self.buffers[node.output] = self._buffer(node.inputs[0], producers).reshape(graph.types[node.output][0])
        self._runs = []
        for func, args, out in calls:
            arrays = [self._buffer(v, producers) for v in args] + [self._buffer(out, producers)]
            self._runs.append(func.prepare(*arrays))
        for node in graph.nodes:  # views of values computed after them in the loop above
            if node.op == "reshape" and node.output not in self.buffers:
                self.buffers[node.output] = self._buffer(node.inputs[0], producers).reshape(graph.types[node.output][0])
        for name in graph.outputs:  # an output no kernel writes (a constant)
            self._buffer(name, producers)

    def _alloc(self, name: str) -> np.ndarray:
        shape, dtype = self.graph.types[name]
        self.buffers[name] = aligned_empty(shape, np.dtype(dtype), 64)
        if name in self.graph.constants:
            np.copyto(self.buffers[name], self.graph.constants[name])
        return self.buffers[name]

    def _buffer(self, name: str, producers) -> np.ndarray:
        if name in self.buffers:
            return self.buffers[name]
        node = producers.get(name)
        if node is not None and node.op == "reshape":
            src = self._buffer(node.inputs[0], producers)
            self.buffers[name] = src.reshape(self.graph.types[name][0])
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
