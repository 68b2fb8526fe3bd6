"""``from_onnx(model_or_path, shape_dict=None)``: an ONNX model as a ``tensorize.graph.Graph``.

Initializers and every node computable from them (and from the static shapes: ``Shape``,
``Gather`` of shapes, ...) are folded to constants at load; weights are rewritten to the layouts
the graph operators use (conv weights to ``(KH, KW, C_in/groups, C_out)``, ``Gemm``'s to
``(K, N)``, batch norms to a scale and a shift). Convolutions and pooling run in NHWC; the inputs
and outputs keep ONNX's layout.

>>> import numpy as np, onnx
>>> from onnx import helper, TensorProto
>>> node = helper.make_node("Relu", ["x"], ["y"])
>>> g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
...                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
>>> graph = from_onnx(helper.make_model(g))
>>> graph.summary()
'relu_1 = relu(x)'
"""
from __future__ import annotations

import logging
import os

from ..errors import TVMValueError
from ..graph.ir import Graph
from . import onnx_ops_tensor  # noqa: F401 - registers the layout-free converters
from .onnx_fold import fold
from .onnx_layout import ImportContext
from .onnx_ops import CONVERTERS

logger = logging.getLogger(__name__)

__all__ = ["from_onnx"]


def _onnx():
    try:
        import onnx
    except ImportError as err:
        raise ImportError("from_onnx needs the onnx package: pip install 'tensorize[baselines]' (or pip install onnx)") \
            from err
    return onnx


def _attrs(node) -> dict:
    from onnx import helper, numpy_helper

    out = {}
    for a in node.attribute:
        value = helper.get_attribute_value(a)
        if a.type == a.TENSOR:
            value = numpy_helper.to_array(value)
        out[a.name] = value.decode() if isinstance(value, bytes) else value
    return out


def _input_shape(value_info, shape_dict) -> tuple:
    if shape_dict and value_info.name in shape_dict:
        return tuple(int(s) for s in shape_dict[value_info.name])
    dims = value_info.type.tensor_type.shape.dim
    if any(not d.HasField("dim_value") for d in dims):
        raise TVMValueError(f"input {value_info.name!r} has a symbolic shape "
                            f"{[d.dim_param or d.dim_value for d in dims]}; give it in shape_dict, "
                            f"e.g. shape_dict={{{value_info.name!r}: (1, ...)}}")
    return tuple(d.dim_value for d in dims)


def from_onnx(model_or_path, shape_dict: dict | None = None) -> Graph:
    """Import an ONNX model.

    Parameters
    ----------
    model_or_path : onnx.ModelProto or str or PathLike
        The model, or the path of a ``.onnx`` file.
    shape_dict : dict of str to tuple, optional
        Shapes of the inputs (required for inputs with symbolic dimensions).

    Returns
    -------
    Graph
        With the model's inputs (in order, initializers excluded) and outputs.
    """
    onnx = _onnx()
    from onnx import numpy_helper

    model = onnx.load(os.fspath(model_or_path)) if isinstance(model_or_path, (str, os.PathLike)) else model_or_path
    onnx_graph = model.graph
    ctx = ImportContext()
    for init in onnx_graph.initializer:
        ctx.set_const(init.name, numpy_helper.to_array(init))
    dtypes = {1: "float32", 6: "int32", 7: "int64", 10: "float16", 11: "float64"}
    for vi in onnx_graph.input:
        if vi.name in ctx.consts:
            continue
        elem = vi.type.tensor_type.elem_type
        if elem not in dtypes:
            raise TVMValueError(f"input {vi.name!r}: element type {elem} is not supported")
        ctx.set(vi.name, ctx.graph.add_input(vi.name, _input_shape(vi, shape_dict), dtypes[elem]))
    for node in onnx_graph.node:
        _convert(ctx, node)
    for vi in onnx_graph.output:
        ctx.graph.outputs.append(ctx.get(vi.name))
    logger.info("imported %s: %d nodes, %d constants", onnx_graph.name, len(ctx.graph.nodes), len(ctx.graph.constants))
    return ctx.graph.prune()


def _convert(ctx: ImportContext, node) -> None:
    attrs = _attrs(node)
    if node.op_type == "Constant":
        ctx.set_const(node.output[0], attrs.get("value", attrs.get("value_float", attrs.get("value_int"))))
        return
    if node.op_type == "Shape" and node.input[0] not in ctx.consts:
        import numpy as np

        ctx.set_const(node.output[0], np.array(ctx.shape(node.input[0]), "int64"))
        return
    present = [n for n in node.input if n]
    if present and all(ctx.is_const(n) for n in present):
        value = fold(node.op_type, attrs, [ctx.consts[n] if n else None for n in node.input])
        if value is not None:
            ctx.set_const(node.output[0], value)
            return
    fn = CONVERTERS.get(node.op_type)
    if fn is None:
        raise TVMValueError(f"ONNX operator {node.op_type!r} (node {node.name!r}) is not supported; supported: "
                            f"{sorted(CONVERTERS)}")
    if len(node.output) > 1 and any(node.output[1:]) and node.op_type not in ("Dropout",):
        raise TVMValueError(f"ONNX operator {node.op_type!r} (node {node.name!r}): only the first output is supported")
    fn(ctx, node, attrs)
