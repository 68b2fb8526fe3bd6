"""What the ``T.xxx`` constructs that only make sense inside a prim_func return.

``T.block("C")``, ``T.axis.spatial(128, i)``, ``T.reads(...)``, ``T.serial(8)`` and friends are
ordinary Python functions: called from plain Python they return one of these small records,
and the parser turns the record into IR in the context where it appears (a loop, a block
iterator, a block's read regions, ...). This keeps the ``T`` namespace free of parser state.
"""
from __future__ import annotations

from typing import Any

from ...ir.expr import StringImm


class Spec:
    """Base of the records; ``__repr__`` names the construct for error messages."""

    __slots__ = ()
    construct = "T.?"

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"<{self.construct}({fields})>"


class ForSpec(Spec):
    """One loop: ``range``/``T.serial``/``T.parallel``/``T.vectorized``/``T.unroll``/``T.thread_binding``."""

    __slots__ = ("kind", "start", "stop", "thread", "annotations")
    construct = "T.serial"

    def __init__(self, kind, start, stop, thread: str | None = None, annotations: dict | None = None):
        self.kind, self.start, self.stop, self.thread, self.annotations = kind, start, stop, thread, annotations


class AxisSpec(Spec):
    """``T.axis.spatial(dom, value)``: a block iterator of ``kind`` over ``dom`` bound to ``value``."""

    __slots__ = ("kind", "dom", "value", "dtype")
    construct = "T.axis"

    def __init__(self, kind: int, dom, value, dtype: str | None = None):
        self.kind, self.dom, self.value, self.dtype = kind, dom, value, dtype


class RemapSpec(Spec):
    """``T.axis.remap("SSR", [i, j, k])``: iterators whose domains are the bound loops' ranges."""

    __slots__ = ("kinds", "values")
    construct = "T.axis.remap"

    def __init__(self, kinds: str, values: list):
        self.kinds, self.values = kinds, values


class BlockSpec(Spec):
    """The value of ``T.block(name)``, to be used in ``with``."""
    __slots__ = ("name", "no_realize")
    construct = "T.block"

    def __init__(self, name: str, no_realize: bool = False):
        self.name, self.no_realize = name, no_realize


class InitSpec(Spec):
    """The value of ``T.init()``, to be used in ``with``."""
    __slots__ = ()
    construct = "T.init"


class RegionsSpec(Spec):
    """``T.reads(...)`` (``is_write`` False) or ``T.writes(...)``."""

    __slots__ = ("regions", "is_write")
    construct = "T.reads"

    def __init__(self, regions: list, is_write: bool):
        self.regions, self.is_write = regions, is_write


class AttrsSpec(Spec):
    """``T.func_attr({...})`` (``target`` "func") or ``T.block_attr({...})`` (``target`` "block")."""

    __slots__ = ("attrs", "target")
    construct = "T.func_attr"

    def __init__(self, attrs: dict, target: str):
        self.attrs, self.target = attrs, target


class WhereSpec(Spec):
    """The value of ``T.where(predicate)``: the block's predicate."""
    __slots__ = ("predicate",)
    construct = "T.where"

    def __init__(self, predicate):
        self.predicate = predicate


class MatchBufferSpec(Spec):
    """``T.match_buffer(param_or_region, shape, dtype, ...)``."""

    __slots__ = ("source", "shape", "dtype", "kwargs")
    construct = "T.match_buffer"

    def __init__(self, source, shape, dtype: str, kwargs: dict[str, Any]):
        self.source, self.shape, self.dtype, self.kwargs = source, shape, dtype, kwargs


class AllocBufferSpec(Spec):
    """``T.alloc_buffer(shape, dtype, scope=...)``: ``buffer`` is declared, named by the assignment."""

    __slots__ = ("buffer",)
    construct = "T.alloc_buffer"

    def __init__(self, buffer):
        self.buffer = buffer


class DeclBufferSpec(Spec):
    """``T.decl_buffer(...)``: a buffer for the rest of the scope (allocated when it has no ``data``)."""

    __slots__ = ("buffer", "allocate")
    construct = "T.decl_buffer"

    def __init__(self, buffer, allocate: bool):
        self.buffer, self.allocate = buffer, allocate


class AllocateSpec(Spec):
    """The value of ``T.allocate(...)``: an Allocate over the statements that follow."""
    __slots__ = ("extents", "dtype", "scope", "condition", "annotations")
    construct = "T.allocate"

    def __init__(self, extents, dtype: str, scope: str, condition, annotations):
        self.extents, self.dtype, self.scope, self.condition, self.annotations = extents, dtype, scope, condition, annotations


class LetSpec(Spec):
    """``with T.LetStmt(value) as x:`` / ``with T.LetStmt(value, var=x):``."""

    __slots__ = ("value", "var")
    construct = "T.LetStmt"

    def __init__(self, value, var=None):
        self.value, self.var = value, var


class AttrStmtSpec(Spec):
    """The value of ``T.attr(node, key, value)``: an AttrStmt over the statements that follow."""
    __slots__ = ("node", "key", "value")
    construct = "T.attr"

    def __init__(self, node, key: str, value):
        # a string node is a StringImm in the IR the passes build (``T.attr("default", "async_scope", 1)``)
        self.node = StringImm(node) if isinstance(node, str) else node
        self.key, self.value = key, value


class LaunchThreadSpec(Spec):
    """``T.launch_thread("threadIdx.x", 32)`` or ``T.launch_thread(tx, 32)`` with ``tx = T.env_thread(...)``."""

    __slots__ = ("thread", "extent")
    construct = "T.launch_thread"

    def __init__(self, thread, extent):
        self.thread, self.extent = thread, extent


class AssertSpec(Spec):
    """The value of ``T.Assert(condition, message)``: an AssertStmt over the statements that follow."""
    __slots__ = ("condition", "message")
    construct = "T.Assert"

    def __init__(self, condition, message):
        self.condition, self.message = condition, message
