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
        self._n += 1
        return f"{hint}_{self._n}"

    def input(self, name: str, shape, elem=TensorProto.FLOAT) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem, list(shape)))
        return name

    def output(self, name: str, shape, elem=TensorProto.FLOAT) -> None:
        self.outputs.append(helper.make_tensor_value_info(name, elem, list(shape)))

    def const(self, value, hint: str = "c") -> str:
        name = self.fresh(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(self, shape, fan_in: int, hint: str = "w") -> str:
        return self.const((self.rng.standard_normal(shape) / np.sqrt(fan_in)).astype("float32"), hint)

    def small(self, shape, hint: str = "b", scale: float = 0.1, offset: float = 0.0) -> str:
        return self.const((offset + scale * self.rng.standard_normal(shape)).astype("float32"), hint)

    def op(self, op_type: str, inputs, hint: str | None = None, **attrs) -> str:
        out = self.fresh(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def rename_output(self, value: str, name: str) -> str:
        self.nodes.append(helper.make_node("Identity", [value], [name]))
        return name

    def model(self) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="tensorize")
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model
