"""The importer's state: ONNX names to graph values, each in its layout (NCHW as in ONNX, or NHWC).

Convolutions and pooling run in NHWC on a CPU. A 4-D value produced by them stays NHWC while
elementwise operators consume it (their constants are rewritten once, at load); an operator that
needs ONNX's layout (reshape, flatten, transpose, ...) gets a transpose back, or a free reshape
when the spatial extent is 1.
"""
from __future__ import annotations

import numpy as np

from ..errors import TVMValueError
from ..graph.ir import Graph

__all__ = ["ImportContext", "TO_NHWC", "TO_NCHW"]

TO_NHWC, TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)


class ImportContext:
    """What the converters share: the graph, ``values`` (ONNX name -> (graph value, layout)),
    ``consts`` (ONNX name -> folded numpy array)."""

    def __init__(self):
        self.graph = Graph()
        self.values: dict[str, tuple[str, str]] = {}
        self.consts: dict[str, np.ndarray] = {}
        self._converted: dict[tuple, str] = {}

    def is_const(self, name: str) -> bool:
        """Whether ``name`` is a constant (an initializer or a value folded at load).

        Parameters
        ----------
        name : str
            An ONNX value name.

        Returns
        -------
        bool
            True when ``name`` has a numpy value in ``consts``.
        """
        return name in self.consts

    def const(self, name: str) -> np.ndarray:
        """The numpy value of the constant ``name``.

        Parameters
        ----------
        name : str
            An ONNX value name.

        Returns
        -------
        numpy.ndarray
            Its folded value.

        Raises
        ------
        TVMValueError
            When ``name`` is a run-time value, not a constant.
        """
        if name not in self.consts:
            raise TVMValueError(f"input {name!r} must be a constant (an initializer or computable at load); "
                                "a run-time value is not supported there")
        return self.consts[name]

    def shape(self, name: str) -> tuple:
        """The ONNX (NCHW) shape of ``name``.

        Parameters
        ----------
        name : str
            An ONNX value name (a constant or a graph value).

        Returns
        -------
        tuple of int
            Its shape in ONNX's layout, whatever layout the graph value has.
        """
        if name in self.consts:
            return self.consts[name].shape
        value, layout = self.values[name]
        shape = self.graph.types[value][0]
        return tuple(shape[i] for i in TO_NCHW) if layout == "NHWC" else shape

    def layout(self, name: str) -> str:
        """The layout ``name`` is held in.

        Parameters
        ----------
        name : str
            An ONNX value name.

        Returns
        -------
        str
            ``"const"`` for a constant, else ``"NCHW"`` or ``"NHWC"``.
        """
        return "const" if name in self.consts else self.values[name][1]

    def get(self, name: str, layout: str = "NCHW") -> str:
        """The graph value of ``name`` in ``layout`` (constants are added to the graph).

        A value held in the other layout gets a transpose (or a reshape when only axes of extent 1 move);
        conversions are made once and reused.

        Parameters
        ----------
        name : str
            An ONNX value name.
        layout : str
            ``"NCHW"`` (ONNX's layout) or ``"NHWC"``.

        Returns
        -------
        str
            The name of the graph value.
        """
        if name in self.consts:
            array = self.consts[name]
            if layout == "NHWC":
                array = np.transpose(array, TO_NHWC)
            key = (name, layout)
            if key not in self._converted:
                self._converted[key] = self.graph.add_constant(_clean(name), array)
            return self._converted[key]
        value, have = self.values[name]
        if have == layout:
            return value
        key = (name, layout)
        if key not in self._converted:
            shape = self.graph.types[value][0]
            perm = TO_NCHW if layout == "NCHW" else TO_NHWC
            if sum(d > 1 for d in shape[1:]) <= 1:  # moving axes of extent 1: a view
                new_shape = [shape[p] for p in perm]
                self._converted[key] = self.graph.add_node("reshape", [value], {"shape": new_shape})
            else:
                self._converted[key] = self.graph.add_node("transpose", [value], {"perm": list(perm)})
        return self._converted[key]

    def set(self, name: str, value: str, layout: str = "NCHW") -> None:
        """Record that the ONNX value ``name`` is the graph value ``value``, held in ``layout``.

        Parameters
        ----------
        name : str
            An ONNX value name.
        value : str
            The graph value computing it.
        layout : str
            ``"NCHW"`` or ``"NHWC"``.
        """
        self.values[name] = (value, layout)

    def set_const(self, name: str, array) -> None:
        """Record that the ONNX value ``name`` is the constant ``array``.

        Parameters
        ----------
        name : str
            An ONNX value name.
        array : array_like
            Its value (kept as a numpy array).
        """
        self.consts[name] = np.asarray(array)


def _clean(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "c"
