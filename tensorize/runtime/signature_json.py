"""Function signatures as JSON, so a shared library written by ``export_library`` can be loaded back
(``load_module``) with the same argument checks in any process.

Shape, stride and offset expressions are written as small JSON trees: ``["int", dtype, value]``,
``["var", index]`` (an index into the function's ``vars`` table, so one variable keeps one identity),
``["cast", dtype, expr]`` and ``[op, a, b]`` for the integer operations shapes use (``Add``, ``Sub``,
``Mul``, ``FloorDiv``, ``FloorMod``, ``Div``, ``Mod``, ``Min``, ``Max``).

>>> from tensorize.ir.expr import Var
>>> n = Var("n")
>>> sig = FunctionSignature("f", [BufferParam("A", "float32", (n, n * 2)), ScalarParam("alpha", "float32")], [n])
>>> back = signature_from_json(signature_to_json(sig))
>>> back.describe(), back.params[0].shape[1].a is back.implicit[0]
('f(A, alpha)', True)
"""
from __future__ import annotations

from typing import Any

from ..ir import expr as E
from .signature import BufferParam, FunctionSignature, ScalarParam

__all__ = ["signature_to_json", "signature_from_json", "FORMAT_VERSION"]

FORMAT_VERSION = 1
_OPS = {cls.__name__: cls for cls in (E.Add, E.Sub, E.Mul, E.FloorDiv, E.FloorMod, E.Div, E.Mod, E.Min, E.Max)}


class _Writer:
    def __init__(self):
        self.vars: list[dict] = []
        self._index: dict[int, int] = {}
        self._alive: list = []  # keeps the variables alive, so their ids stay unique while writing

    def expr(self, value: Any):
        if value is None:
            return None
        if isinstance(value, bool):
            return ["int", "bool", int(value)]
        if isinstance(value, int):
            return ["int", "int32", value]
        if isinstance(value, E.IntImm):
            return ["int", value.dtype, value.value]
        if isinstance(value, E.Var):
            key = id(value)
            if key not in self._index:
                self._index[key] = len(self.vars)
                self.vars.append({"name": value.name, "dtype": value.dtype,
                                  "size_var": isinstance(value, E.SizeVar)})
                self._alive.append(value)
            return ["var", self._index[key]]
        if isinstance(value, E.Cast):
            return ["cast", value.dtype, self.expr(value.value)]
        name = type(value).__name__
        if name in _OPS and isinstance(value, _OPS[name]):
            return [name, self.expr(value.a), self.expr(value.b)]
        raise TypeError(f"cannot store the shape expression {value!r} ({name}) in a library's metadata; "
                        "use integer arithmetic (+, -, *, //, %, min, max) on shape variables")


class _Reader:
    def __init__(self, table: list[dict]):
        self.vars = [(E.SizeVar if item.get("size_var") else E.Var)(item["name"], item["dtype"]) for item in table]

    def expr(self, node):
        if node is None:
            return None
        kind = node[0]
        if kind == "int":
            return E.IntImm(node[1], node[2])
        if kind == "var":
            return self.vars[node[1]]
        if kind == "cast":
            return E.Cast(node[1], self.expr(node[2]))
        if kind in _OPS:
            return _OPS[kind](self.expr(node[1]), self.expr(node[2]))
        raise ValueError(f"unknown expression kind {kind!r} in a library's metadata (written by a newer version?)")


def signature_to_json(signature: FunctionSignature) -> dict:
    """A JSON-ready dict describing ``signature`` (see the module docstring).

    Parameters
    ----------
    signature : FunctionSignature
        The function's parameters.

    Returns
    -------
    dict
        The description.
    """
    writer = _Writer()
    params = []
    for param in signature.params:
        if isinstance(param, BufferParam):
            params.append({"kind": "buffer", "name": param.name, "dtype": param.dtype,
                           "shape": [writer.expr(d) for d in param.shape],
                           "strides": [writer.expr(s) for s in param.strides],
                           "elem_offset": writer.expr(param.elem_offset), "alignment": int(param.alignment)})
        else:
            params.append({"kind": "scalar", "name": param.name, "dtype": param.dtype})
    implicit = [writer.expr(v) for v in signature.implicit]
    return {"name": signature.name, "params": params, "implicit": implicit, "vars": writer.vars}


def signature_from_json(data: dict) -> FunctionSignature:
    """The ``FunctionSignature`` written by ``signature_to_json``.

    Parameters
    ----------
    data : dict
        ``signature_to_json`` output.

    Returns
    -------
    FunctionSignature
        The signature.
    """
    reader = _Reader(data.get("vars", []))
    params: list = []
    for item in data["params"]:
        if item["kind"] == "buffer":
            params.append(BufferParam(item["name"], item["dtype"], tuple(reader.expr(d) for d in item["shape"]),
                                      tuple(reader.expr(s) for s in item["strides"]),
                                      reader.expr(item["elem_offset"]), int(item["alignment"])))
        elif item["kind"] == "scalar":
            params.append(ScalarParam(item["name"], item["dtype"]))
        else:
            raise ValueError(f"unknown parameter kind {item['kind']!r} in a library's metadata")
    return FunctionSignature(data["name"], params, [reader.expr(v) for v in data["implicit"]])
