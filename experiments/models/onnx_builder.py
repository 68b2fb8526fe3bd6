"""A small helper to write ONNX graphs with ``onnx.helper`` and seeded random weights."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["OnnxBuilder"]

OPSET = 17


class OnnxBuilder:
    """Appends nodes and initializers; ``model()`` gives the checked ``onnx.ModelProto``.

    Weights are drawn from ``numpy.random.default_rng(seed)``, scaled by ``1/sqrt(fan_in)`` so that
    activations stay of order one through deep networks.
    """

    def __init__(self, name: str, seed: int = 0):
        self.name, self.rng = name, np.random.default_rng(seed)
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self._n = 0

    def fresh(self, hint: str) -> str:
        """A new value name, ``f"{hint}_{n}"`` with a counter.

        Parameters
        ----------
        hint : str
            The name's prefix.

        Returns
        -------
        str
            A name not given before by this builder.
        """
        self._n += 1
        return f"{hint}_{self._n}"

    def input(self, name: str, shape, elem=TensorProto.FLOAT) -> str:
        """Declare a graph input.

        Parameters
        ----------
        name : str
            Its name.
        shape : sequence of int
            Its shape.
        elem : int
            Its ONNX element type (``TensorProto.FLOAT`` by default).

        Returns
        -------
        str
            ``name``.
        """
        self.inputs.append(helper.make_tensor_value_info(name, elem, list(shape)))
        return name

    def output(self, name: str, shape, elem=TensorProto.FLOAT) -> None:
        """Declare a graph output (an existing value's name).

        Parameters
        ----------
        name : str
            The value's name.
        shape : sequence of int
            Its shape.
        elem : int
            Its ONNX element type (``TensorProto.FLOAT`` by default).
        """
        self.outputs.append(helper.make_tensor_value_info(name, elem, list(shape)))

    def const(self, value, hint: str = "c") -> str:
        """Add an initializer holding ``value``.

        Parameters
        ----------
        value : array_like
            The constant (its numpy dtype is kept).
        hint : str
            The prefix of its fresh name.

        Returns
        -------
        str
            The initializer's name.
        """
        name = self.fresh(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(self, shape, fan_in: int, hint: str = "w") -> str:
        """Add a float32 weight drawn from the builder's generator, scaled by ``1/sqrt(fan_in)``.

        Parameters
        ----------
        shape : sequence of int
            The weight's shape.
        fan_in : int
            Inputs summed per output (the scale's denominator).
        hint : str
            The prefix of its fresh name.

        Returns
        -------
        str
            The initializer's name.
        """
        return self.const((self.rng.standard_normal(shape) / np.sqrt(fan_in)).astype("float32"), hint)

    def small(self, shape, hint: str = "b", scale: float = 0.1, offset: float = 0.0) -> str:
        """Add a float32 constant ``offset + scale * N(0, 1)`` (biases, normalisation parameters).

        Parameters
        ----------
        shape : sequence of int
            Its shape.
        hint : str
            The prefix of its fresh name.
        scale : float
            The standard deviation.
        offset : float
            The mean.

        Returns
        -------
        str
            The initializer's name.
        """
        return self.const((offset + scale * self.rng.standard_normal(shape)).astype("float32"), hint)

    def op(self, op_type: str, inputs, hint: str | None = None, **attrs) -> str:
        """Append a node with one output.

        Parameters
        ----------
        op_type : str
            The ONNX operator, e.g. ``"Conv"``.
        inputs : sequence of str
            Its input names (``""`` for an omitted optional input).
        hint : str, optional
            The prefix of the output's fresh name (default: the operator, lower case).
        **attrs
            The node's attributes.

        Returns
        -------
        str
            The output's name.
        """
        out = self.fresh(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def rename_output(self, value: str, name: str) -> str:
        """Give ``value`` the name ``name`` through an Identity node (e.g. to name a graph output).

        Parameters
        ----------
        value : str
            An existing value.
        name : str
            The new name.

        Returns
        -------
        str
            ``name``.
        """
        self.nodes.append(helper.make_node("Identity", [value], [name]))
        return name

    def model(self) -> onnx.ModelProto:
        """The checked ONNX model (opset 17) of the nodes and initializers added so far.

        Returns
        -------
        onnx.ModelProto
            The model, validated by ``onnx.checker``.
        """
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="tensorize")
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model
