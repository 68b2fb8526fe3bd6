"""The graph IR: a list of operator nodes over named values, with the weights as constants.

A ``Graph`` is what a frontend produces and what ``tensorize.graph.build`` compiles. Every value
has a static shape and dtype (``graph.types[name]``); a value is a graph input, a constant
(``graph.constants[name]``, a numpy array) or the output of exactly one ``Node``. Nodes are kept in
a topological order. The operators are those of ``tensorize.graph.ops`` (``OPS``), each lowered to
a ``te`` computation; their layout is the one the frontend chose (NHWC for convolutions on a CPU).

>>> import numpy as np
>>> g = Graph()
>>> x = g.add_input("x", (2, 3), "float32")
>>> w = g.add_constant("w", np.ones((3, 4), "float32"))
>>> y = g.add_node("dense", [x, w])
>>> g.outputs.append(y)
>>> g.types[y]
((2, 4), 'float32')
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import TVMValueError
from .ops import OPS, infer_type

__all__ = ["Graph", "Node"]


@dataclass
class Node:
    """``output = op(*inputs, **attrs)``: inputs and output are value names of the graph."""

    op: str
    inputs: list
    output: str
    attrs: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        attrs = "".join(f", {k}={v}" for k, v in self.attrs.items())
        return f"{self.output} = {self.op}({', '.join(self.inputs)}{attrs})"


class Graph:
    """Operators over named values; see the module docstring.

    Attributes
    ----------
    inputs : list of str
        The names of the graph inputs, in calling order.
    outputs : list of str
        The names of the values ``run`` returns.
    constants : dict of str to numpy.ndarray
        The weights (folded at import).
    nodes : list of Node
        In topological order.
    types : dict of str to (tuple, str)
        Shape and dtype of every value.
    """

    def __init__(self):
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.constants: dict[str, np.ndarray] = {}
        self.nodes: list[Node] = []
        self.types: dict[str, tuple] = {}
        self._counter = 0

    def fresh(self, hint: str = "v") -> str:
        """A value name not used yet.

        Parameters
        ----------
        hint : str
            The name's prefix; a counter is appended.

        Returns
        -------
        str
            ``f"{hint}_{n}"`` for the next ``n`` not taken.
        """
        while True:
            self._counter += 1
            name = f"{hint}_{self._counter}"
            if name not in self.types:
                return name

    def add_input(self, name: str, shape, dtype: str = "float32") -> str:
        """Declare the graph input ``name``.

        Parameters
        ----------
        name : str
            Its name (must be new).
        shape : sequence of int
            Its static shape.
        dtype : str
            Its dtype.

        Returns
        -------
        str
            ``name``.
        """
        self._declare(name, tuple(int(s) for s in shape), str(dtype))
        self.inputs.append(name)
        return name

    def add_constant(self, name: str, value) -> str:
        """Add a constant (a weight).

        Parameters
        ----------
        name : str
            The preferred name; a fresh one derived from it when it is taken.
        value : array_like
            The constant's value (stored as a contiguous numpy array).

        Returns
        -------
        str
            The constant's name.
        """
        value = np.ascontiguousarray(value).reshape(np.shape(value))
        if name in self.types:
            name = self.fresh(name)
        self._declare(name, value.shape, str(value.dtype))
        self.constants[name] = value
        return name

    def add_node(self, op: str, inputs, attrs: dict | None = None, name: str | None = None) -> str:
        """Append ``op(*inputs, **attrs)``; its output type is inferred.

        Parameters
        ----------
        op : str
            A graph operator (a key of ``tensorize.graph.ops.OPS``).
        inputs : sequence of str
            Values of the graph.
        attrs : dict, optional
            The operator's attributes.
        name : str, optional
            The output's name; a fresh one when omitted or taken.

        Returns
        -------
        str
            The output's name.

        Raises
        ------
        TVMValueError
            For an unknown operator, an input that is not a value of the graph, or ill-typed inputs.
        """
        if op not in OPS:
            raise TVMValueError(f"unknown graph operator {op!r}; known: {sorted(OPS)}")
        for value in inputs:
            if value not in self.types:
                raise TVMValueError(f"operator {op!r}: input {value!r} is not a value of the graph (add it first)")
        attrs = dict(attrs or {})
        shape, dtype = infer_type(op, [self.types[v] for v in inputs], attrs)
        name = name if name is not None and name not in self.types else self.fresh(op)
        self._declare(name, shape, dtype)
        self.nodes.append(Node(op, list(inputs), name, attrs))
        return name

    def _declare(self, name: str, shape, dtype: str) -> None:
        if name in self.types:
            raise TVMValueError(f"value {name!r} is defined twice in the graph")
        self.types[name] = (tuple(int(s) for s in shape), dtype)

    def producers(self) -> dict[str, Node]:
        """The node producing each computed value.

        Returns
        -------
        dict of str to Node
            Value name to its producer (inputs and constants have none).
        """
        return {n.output: n for n in self.nodes}

    def consumers(self) -> dict[str, list[Node]]:
        """The nodes reading each value (graph outputs are not nodes).

        Returns
        -------
        dict of str to list of Node
            Every value name to its readers, each node listed once per value.
        """
        out: dict[str, list[Node]] = {name: [] for name in self.types}
        for node in self.nodes:
            for value in dict.fromkeys(node.inputs):
                out[value].append(node)
        return out

    def prune(self) -> "Graph":
        """Drop the nodes and constants no output depends on (in place).

        Returns
        -------
        Graph
            ``self``.
        """
        producers, live, stack = self.producers(), set(), list(self.outputs)
        while stack:
            value = stack.pop()
            if value in live:
                continue
            live.add(value)
            if value in producers:
                stack.extend(producers[value].inputs)
        self.nodes = [n for n in self.nodes if n.output in live]
        self.constants = {k: v for k, v in self.constants.items() if k in live}
        self.types = {k: v for k, v in self.types.items() if k in live or k in self.inputs}
        return self

    def summary(self) -> str:
        """One line per node, ``output = op(inputs, attrs)``.

        Returns
        -------
        str
            The nodes, newline-separated.
        """
        return "\n".join(repr(n) for n in self.nodes)

    def __repr__(self) -> str:
        return (f"Graph({len(self.inputs)} inputs, {len(self.nodes)} nodes, {len(self.constants)} constants, "
                f"{len(self.outputs)} outputs)")
