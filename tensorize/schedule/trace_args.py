"""The values of trace instructions: handles, constants and registered types, printed as Python and
serialised to JSON (``register_codec`` teaches traces a new argument type).

>>> _py([1, "x"], {})
'[1, "x"]'
"""
from __future__ import annotations

import json
from typing import Any, Callable

from ..errors import TVMTypeError
from .rv import RV_TYPES

# Argument types that serialise themselves: name -> (type, to_json, from_json).
_CODECS: dict[str, tuple[type, Callable[[Any], Any], Callable[[Any], Any]]] = {}


def register_codec(name: str, cls: type, to_json: Callable[[Any], Any], from_json: Callable[[Any], Any]) -> None:
    """Teach traces to serialise arguments of type ``cls`` (index maps, ...).

    Parameters
    ----------
    name : str
        The tag of the type in JSON.
    cls : type
        The argument type.
    to_json : callable
        Turns a value into JSON-ready data.
    from_json : callable
        Turns that data back into a value.
    """
    _CODECS[name] = (cls, to_json, from_json)


def _flatten_outputs(result) -> list:
    if result is None:
        return []
    if isinstance(result, RV_TYPES):
        return [result]
    if isinstance(result, (list, tuple)):
        out = []
        for r in result:
            out.extend(_flatten_outputs(r))
        return out
    return []


def _map_rvs(value, rv_map):
    if isinstance(value, RV_TYPES):
        mapped = rv_map.get(id(value))
        if mapped is None:
            from .error import TraceError

            raise TraceError(f"trace uses {value!r} before any instruction produced it")
        return mapped
    if isinstance(value, list):
        return [_map_rvs(v, rv_map) for v in value]
    if isinstance(value, tuple):
        return tuple(_map_rvs(v, rv_map) for v in value)
    return value


def _py(value, names) -> str:
    if isinstance(value, RV_TYPES):
        return names.get(id(value), repr(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))  # TVM prints probs=[1], not probs=[1.0]
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_py(v, names) for v in value)
        return f"[{inner}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_py(k, names)}: {_py(v, names)}" for k, v in value.items()) + "}"
    for _name, (cls, to_json, _from) in _CODECS.items():
        if isinstance(value, cls):
            return str(value)
    from ..ir.expr import IntImm

    if type(value) is IntImm and value.dtype in ("int32", "bool"):  # TVM prints T.int32(32) as 32
        return repr(bool(value.value)) if value.dtype == "bool" else str(value.value)
    return repr(value)


def _to_json(value, names):
    if isinstance(value, RV_TYPES):
        return {"rv": names[id(value)]}
    if isinstance(value, (list, tuple)):
        return [_to_json(v, names) for v in value]
    if isinstance(value, dict):
        return {"dict": [[_to_json(k, names), _to_json(v, names)] for k, v in value.items()]}
    for name, (cls, to_json, _from) in _CODECS.items():
        if isinstance(value, cls):
            return {"codec": name, "value": to_json(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    from ..ir.expr import FloatImm, IntImm

    if isinstance(value, (IntImm, FloatImm)):
        return {"imm": value.dtype, "value": value.value}
    raise TVMTypeError(f"cannot serialise a trace argument of type {type(value).__name__}; register a codec")


def _from_json(value, rvs):
    if isinstance(value, dict):
        if "rv" in value:
            return rvs[value["rv"]]
        if "dict" in value:
            return {_from_json(k, rvs): _from_json(v, rvs) for k, v in value["dict"]}
        if "codec" in value:
            return _CODECS[value["codec"]][2](value["value"])
        if "imm" in value:
            from ..ir.expr import make_const

            return make_const(value["imm"], value["value"])
    if isinstance(value, list):
        return [_from_json(v, rvs) for v in value]
    return value
