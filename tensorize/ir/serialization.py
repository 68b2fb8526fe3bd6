"""A JSON serialisation of the IR that is loaded without evaluating anything.

``save_json(node)`` writes a table of nodes: each entry names its class and gives the value of
every slot; a node used in several places (a ``Var``, a ``Buffer``) is written once and referred to
by its index, so sharing survives the round trip. ``load_json(text)`` rebuilds the nodes from
that table, creating only IR node classes and a few enums by name: no code is imported or run,
whatever the text says. Spans (source positions) are not stored.

The format, version 1::

    {"tensorize_ir": 1, "root": VALUE, "nodes": [{"type": "Var", "attrs": {"name": VALUE, ...}}, ...]}

where VALUE is a JSON scalar, a list, ``{"node": i}`` (an earlier entry of ``nodes``),
``{"tuple": [...]}``, ``{"dict": [[k, v], ...]}``, ``{"enum": "ForKind", "value": 0}``,
``{"op": "tir.exp"}`` (a registered operator) or ``{"float": "nan"}``.

>>> from tensorize.ir import Var, load_json, save_json, structural_equal
>>> x = Var("x", "int32")
>>> e = x * 2 + x
>>> back = load_json(save_json(e))
>>> structural_equal(back, e, map_free_vars=True), back.a.a is back.b
(True, True)
"""
from __future__ import annotations

import enum
import json
import math
from typing import Any

from ..errors import TVMError
from .node import Node

FORMAT_VERSION = 1
_set = object.__setattr__


class SerializationError(TVMError, ValueError):
    """A JSON text is not a valid IR serialisation (garbage, truncated, another format or hostile)."""


def _node_classes() -> dict[str, type]:
    out: dict[str, type] = {}
    stack = [Node]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("tensorize.") and sub.__name__ not in out:
                out[sub.__name__] = sub
            stack.append(sub)
    return out


def _enum_classes() -> dict[str, type]:
    from . import expr, stmt

    found = {}
    for module in (expr, stmt):
        for name, value in vars(module).items():
            if isinstance(value, type) and issubclass(value, enum.Enum) and value.__module__ == module.__name__:
                found[name] = value
    return found


def _slots(cls: type) -> tuple[str, ...]:
    return tuple(name for c in cls.__mro__ for name in getattr(c, "__slots__", ()) if name not in ("__weakref__", "span"))


class _Writer:
    def __init__(self):
        self.nodes: list[dict] = []
        self.index: dict[int, int] = {}
        self.keep: list[Any] = []  # keeps encoded objects alive so ids stay unique

    def value(self, value) -> Any:
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, enum.Enum):
            return {"enum": type(value).__name__, "value": value.value}
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            return value if math.isfinite(value) else {"float": repr(value)}
        if isinstance(value, Node) or _is_plain_object(value):
            return {"node": self.node(value)}
        if type(value).__name__ == "Op" and isinstance(getattr(value, "name", None), str):
            return {"op": value.name}  # operators are interned by name
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, tuple):
            return {"tuple": [self.value(v) for v in value]}
        if isinstance(value, dict):
            return {"dict": [[self.value(k), self.value(v)] for k, v in value.items()]}
        raise SerializationError(f"cannot serialise a {type(value).__name__} ({value!r}) as IR JSON")

    def node(self, node) -> int:
        key = id(node)
        if key in self.index:
            return self.index[key]
        attrs = {name: self.value(getattr(node, name)) for name in _slots(type(node)) if hasattr(node, name)}
        self.index[key] = len(self.nodes)
        self.keep.append(node)
        self.nodes.append({"type": type(node).__name__, "attrs": attrs})
        return self.index[key]


def _is_plain_object(value) -> bool:
    """IR values that are not ``Node`` subclasses but have slots (``PointerType``)."""
    return type(value).__name__ in _PLAIN and type(value).__module__.startswith("tensorize.ir")


_PLAIN = {"PointerType", "IRModule"}


def save_json(node) -> str:
    """The JSON text of an IR node (PrimFunc, IRModule, statement, expression, buffer, ...).

    Parameters
    ----------
    node : Node or IRModule
        What to serialise; lists, tuples and dicts of nodes work too.

    Returns
    -------
    str
        A JSON document that ``load_json`` turns back into a structurally equal object.

    Examples
    --------
    >>> from tensorize.ir import IntImm, save_json
    >>> save_json(IntImm("int32", 3))
    '{"tensorize_ir":1,"root":{"node":0},"nodes":[{"type":"IntImm","attrs":{"value":3,"dtype":"int32"}}]}'
    """
    writer = _Writer()
    root = writer.value(node)
    return json.dumps({"tensorize_ir": FORMAT_VERSION, "root": root, "nodes": writer.nodes}, separators=(",", ":"),
                      allow_nan=False)


class _Reader:
    def __init__(self, doc: dict):
        self.classes = {**_node_classes(), **_plain_classes()}
        self.enums = _enum_classes()
        self.built: list[Any] = []
        for position, entry in enumerate(doc["nodes"]):
            self.built.append(self.node(entry, position))

    def node(self, entry, position: int):
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str) or not isinstance(entry.get("attrs"), dict):
            raise SerializationError(f"node {position} is not an object with a 'type' and 'attrs'")
        cls = self.classes.get(entry["type"])
        if cls is None:
            raise SerializationError(f"node {position} has type {entry['type']!r}, which is not an IR node class")
        slots = _slots(cls)
        obj = object.__new__(cls)
        for name, raw in entry["attrs"].items():
            if name not in slots:
                raise SerializationError(f"node {position} ({entry['type']}) has no attribute {name!r}")
            _set(obj, name, self.value(raw, position))
        if "span" in {n for c in cls.__mro__ for n in getattr(c, "__slots__", ())}:
            _set(obj, "span", None)
        missing = [name for name in slots if not hasattr(obj, name) and name in getattr(cls, "_fields", ())]
        if missing:
            raise SerializationError(f"node {position} ({entry['type']}) lacks {', '.join(missing)}")
        return obj

    def value(self, raw, position: int):
        if raw is None or isinstance(raw, (bool, int, float, str)):
            return raw
        if isinstance(raw, list):
            return [self.value(v, position) for v in raw]
        if not isinstance(raw, dict) or len(raw) not in (1, 2):
            raise SerializationError(f"node {position}: unreadable value {str(raw)[:80]!r}")
        if "node" in raw:
            index = raw["node"]
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(self.built):
                raise SerializationError(f"node {position} refers to node {index!r}, which is not an earlier node")
            return self.built[index]
        if "tuple" in raw and isinstance(raw["tuple"], list):
            return tuple(self.value(v, position) for v in raw["tuple"])
        if "dict" in raw and isinstance(raw["dict"], list):
            out = {}
            for pair in raw["dict"]:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise SerializationError(f"node {position}: a dict entry is not a [key, value] pair")
                key = self.value(pair[0], position)
                try:
                    out[key] = self.value(pair[1], position)
                except TypeError:
                    raise SerializationError(f"node {position}: a dict key is not hashable") from None
            return out
        if "enum" in raw:
            cls = self.enums.get(raw["enum"]) if isinstance(raw["enum"], str) else None
            if cls is None:
                raise SerializationError(f"node {position}: {raw['enum']!r} is not an IR enum")
            try:
                return cls(raw.get("value"))
            except (ValueError, TypeError):
                raise SerializationError(f"node {position}: {raw.get('value')!r} is not a {raw['enum']}") from None
        if "op" in raw:
            from .expr import Op

            try:
                return Op.get(raw["op"])
            except (ValueError, TypeError):
                raise SerializationError(f"node {position}: {str(raw['op'])[:80]!r} is not a registered operator") from None
        if "float" in raw and raw["float"] in ("nan", "inf", "-inf"):
            return float(raw["float"])
        raise SerializationError(f"node {position}: unreadable value {str(raw)[:80]!r}")


def _plain_classes() -> dict[str, type]:
    from .expr import PointerType
    from .function import IRModule

    return {"PointerType": PointerType, "IRModule": IRModule}


def load_json(text: str | bytes | dict):
    """Rebuild the IR that ``save_json`` wrote. Nothing in the text is evaluated.

    Parameters
    ----------
    text : str, bytes or dict
        A document written by ``save_json`` (or the dict ``json.loads`` made of it).

    Returns
    -------
    object
        The node (or list/tuple/dict of nodes) that was saved.

    Raises
    ------
    SerializationError
        The text is not such a document (garbage, truncated, another version, a class that is not
        an IR node, a reference to a later node).

    Examples
    --------
    >>> load_json('{"tensorize_ir":1,"root":{"node":0},"nodes":[{"type":"os.system","attrs":{}}]}')
    Traceback (most recent call last):
        ...
    tensorize.ir.serialization.SerializationError: node 0 has type 'os.system', which is not an IR node class
    """
    if isinstance(text, dict):  # already parsed (a document embedded in a larger JSON file)
        doc = text
    else:
        try:
            doc = json.loads(text)
        except (ValueError, TypeError, RecursionError) as err:
            raise SerializationError(f"not JSON: {err}") from None
    if not isinstance(doc, dict) or doc.get("tensorize_ir") != FORMAT_VERSION or not isinstance(doc.get("nodes"), list):
        raise SerializationError(f"not a tensorize IR document of version {FORMAT_VERSION}")
    try:
        reader = _Reader(doc)
        return reader.value(doc.get("root"), len(reader.built))
    except RecursionError:
        raise SerializationError("the document is nested too deeply") from None
