"""Statements of TensorIR, including blocks.

A ``Block`` is the unit of computation: iterator variables with domains and kinds, the buffer
regions it reads and writes, an optional ``init`` (for reductions), buffers it allocates and
matches, annotations, and a body. A ``BlockRealize`` binds the iterators to loop expressions
under a predicate.
"""
from __future__ import annotations

import enum
from typing import Mapping, Sequence

from . import buffer as _buffer
from .buffer import Buffer
from .expr import IntImm, IterVar, PrimExpr, Range, Var, convert
from .node import Node, _set


class Stmt(Node):
    """Base class of statements."""

    __slots__ = ()


class ForKind(enum.IntEnum):
    """How a loop runs: ``SERIAL``, ``PARALLEL``, ``VECTORIZED``, ``UNROLLED`` or ``THREAD_BINDING``."""

    SERIAL = 0
    PARALLEL = 1
    VECTORIZED = 2
    UNROLLED = 3
    THREAD_BINDING = 4


def _frozen(mapping: Mapping | None) -> dict:
    return dict(mapping) if mapping else {}


class BufferStore(Stmt):
    """``buffer[indices] = value``."""

    __slots__ = ("buffer", "value", "indices", "predicate")
    _fields = ("buffer", "value", "indices", "predicate")
    _type_key = "tir.BufferStore"

    def __init__(self, buffer: Buffer, value, indices: Sequence, predicate=None, span=None):
        _set(self, "buffer", buffer)
        _set(self, "value", convert(value))
        _set(self, "indices", tuple(convert(i) for i in indices))
        _set(self, "predicate", predicate)
        _set(self, "span", span)


class For(Stmt):
    """``for loop_var in range(min, min + extent)`` of a ``ForKind``; thread-bound loops carry an IterVar."""

    __slots__ = ("loop_var", "min", "extent", "kind", "body", "thread_binding", "annotations")
    _fields = ("loop_var", "min", "extent", "kind", "thread_binding", "annotations", "body")
    _type_key = "tir.For"

    def __init__(self, loop_var: Var, min, extent, kind=ForKind.SERIAL, body=None, thread_binding=None,
                 annotations: Mapping | None = None, span=None):
        if isinstance(min, int) and isinstance(loop_var, Var) and loop_var.dtype != "int32":
            min = IntImm(loop_var.dtype, min)
        if isinstance(extent, int) and isinstance(loop_var, Var) and loop_var.dtype != "int32":
            extent = IntImm(loop_var.dtype, extent)
        _set(self, "loop_var", loop_var)
        _set(self, "min", convert(min))
        _set(self, "extent", convert(extent))
        _set(self, "kind", ForKind(int(kind)))
        _set(self, "body", body)
        _set(self, "thread_binding", thread_binding)
        _set(self, "annotations", _frozen(annotations))
        _set(self, "span", span)

    @property
    def thread_tag(self) -> str:
        """The thread this loop is bound to (``"threadIdx.x"``, ``"blockIdx.y"``, ...); ``""`` when unbound."""
        if self.kind != ForKind.THREAD_BINDING or self.thread_binding is None:
            return ""
        return self.thread_binding.thread_tag


class While(Stmt):
    """``while condition: body``."""
    __slots__ = ("condition", "body")
    _fields = ("condition", "body")
    _type_key = "tir.While"

    def __init__(self, condition, body, span=None):
        _set(self, "condition", convert(condition))
        _set(self, "body", body)
        _set(self, "span", span)


class SeqStmt(Stmt):
    """Statements run in order."""

    __slots__ = ("seq",)
    _fields = ("seq",)
    _type_key = "tir.SeqStmt"

    def __init__(self, seq: Sequence[Stmt], span=None):
        _set(self, "seq", tuple(seq))
        _set(self, "span", span)

    def __len__(self) -> int:
        return len(self.seq)

    def __getitem__(self, i: int) -> Stmt:
        return self.seq[i]

    @staticmethod
    def flatten(*stmts) -> Stmt:
        """One statement for ``stmts``: nested sequences are spliced, no-ops dropped, a single statement returned as is.

        Parameters
        ----------
        *stmts : Stmt or list of Stmt
            The statements.

        Returns
        -------
        Stmt
            The statement.
        """
        out: list[Stmt] = []

        def push(s):
            if s is None:
                return
            if isinstance(s, (list, tuple)):
                for x in s:
                    push(x)
            elif isinstance(s, SeqStmt):
                for x in s.seq:
                    push(x)
            elif isinstance(s, Evaluate) and isinstance(s.value, IntImm):
                return
            else:
                out.append(s)

        push(stmts)
        if not out:
            return Evaluate(0)
        return out[0] if len(out) == 1 else SeqStmt(out)


class IfThenElse(Stmt):
    """``if condition: then_case else: else_case`` (no else when ``else_case`` is None)."""
    __slots__ = ("condition", "then_case", "else_case")
    _fields = ("condition", "then_case", "else_case")
    _type_key = "tir.IfThenElse"

    def __init__(self, condition, then_case: Stmt, else_case: Stmt | None = None, span=None):
        _set(self, "condition", convert(condition))
        _set(self, "then_case", then_case)
        _set(self, "else_case", else_case)
        _set(self, "span", span)


class Evaluate(Stmt):
    """Evaluate an expression for its side effect (a call)."""

    __slots__ = ("value",)
    _fields = ("value",)
    _type_key = "tir.Evaluate"

    def __init__(self, value, span=None):
        _set(self, "value", convert(value))
        _set(self, "span", span)


class LetStmt(Stmt):
    """``var = value`` bound over ``body``."""
    __slots__ = ("var", "value", "body")
    _fields = ("var", "value", "body")
    _type_key = "tir.LetStmt"

    def __init__(self, var: Var, value, body: Stmt, span=None):
        _set(self, "var", var)
        _set(self, "value", convert(value))
        _set(self, "body", body)
        _set(self, "span", span)


class AttrStmt(Stmt):
    """An attribute on a region of code (``thread_extent`` after GPU lowering, pragmas)."""

    __slots__ = ("node", "attr_key", "value", "body")
    _fields = ("node", "attr_key", "value", "body")
    _type_key = "tir.AttrStmt"

    def __init__(self, node, attr_key: str, value, body: Stmt, span=None):
        _set(self, "node", node)
        _set(self, "attr_key", attr_key)
        _set(self, "value", convert(value))
        _set(self, "body", body)
        _set(self, "span", span)


class AssertStmt(Stmt):
    """Check ``condition`` at run time (failing with ``message``), then run ``body``."""
    __slots__ = ("condition", "message", "body")
    _fields = ("condition", "message", "body")
    _type_key = "tir.AssertStmt"

    def __init__(self, condition, message, body: Stmt, span=None):
        _set(self, "condition", convert(condition))
        _set(self, "message", convert(message))
        _set(self, "body", body)
        _set(self, "span", span)


class Allocate(Stmt):
    """Allocate ``extents`` elements of ``dtype`` behind the pointer ``buffer_var`` for the scope of ``body``."""

    __slots__ = ("buffer_var", "dtype", "extents", "condition", "body", "annotations")
    _fields = ("buffer_var", "dtype", "extents", "condition", "annotations", "body")
    _type_key = "tir.Allocate"

    def __init__(self, buffer_var: Var, dtype: str, extents: Sequence, condition, body: Stmt,
                 annotations: Mapping | None = None, span=None):
        _set(self, "buffer_var", buffer_var)
        _set(self, "dtype", dtype)
        _set(self, "extents", tuple(convert(e) for e in extents))
        _set(self, "condition", convert(condition))
        _set(self, "body", body)
        _set(self, "annotations", _frozen(annotations))
        _set(self, "span", span)


class DeclBuffer(Stmt):
    """Declare ``buffer`` (a view of an existing data pointer) for the scope of ``body``."""

    __slots__ = ("buffer", "body")
    _fields = ("buffer", "body")
    _type_key = "tir.DeclBuffer"

    def __init__(self, buffer: Buffer, body: Stmt, span=None):
        _set(self, "buffer", buffer)
        _set(self, "body", body)
        _set(self, "span", span)


class BufferRegion(Node):
    """A rectangular region of a buffer: one ``Range`` per axis."""

    __slots__ = ("buffer", "region")
    _fields = ("buffer", "region")
    _type_key = "tir.BufferRegion"

    def __init__(self, buffer: Buffer, region: Sequence[Range], span=None):
        _set(self, "buffer", buffer)
        _set(self, "region", tuple(region))
        _set(self, "span", span)

    @staticmethod
    def full_region(buffer: Buffer) -> "BufferRegion":
        """The whole of ``buffer`` as a region.

        Parameters
        ----------
        buffer : Buffer
            The buffer.

        Returns
        -------
        BufferRegion
            The region.
        """
        return BufferRegion(buffer, [Range.from_min_extent(0, s) for s in buffer.shape])

    @staticmethod
    def from_point(buffer: Buffer, indices: Sequence) -> "BufferRegion":
        """The one element of ``buffer`` at ``indices`` as a region.

        Parameters
        ----------
        buffer : Buffer
            The buffer.
        indices : list of PrimExpr
            One index per axis.

        Returns
        -------
        BufferRegion
            The region.
        """
        return BufferRegion(buffer, [Range.from_min_extent(i, 1) for i in indices])


class MatchBufferRegion(Node):
    """``buffer = T.match_buffer(source[region], ...)`` inside a block: ``buffer`` views ``source``."""

    __slots__ = ("buffer", "source")
    _fields = ("buffer", "source")
    _type_key = "tir.MatchBufferRegion"

    def __init__(self, buffer: Buffer, source: BufferRegion, span=None):
        _set(self, "buffer", buffer)
        _set(self, "source", source)
        _set(self, "span", span)


class Block(Stmt):
    """A block: ``with T.block(name_hint):`` and what it declares.

    ``iter_vars`` are IterVars (domain and kind: ``IterVar.DataPar`` spatial, ``IterVar.CommReduce``
    reduce); ``reads``/``writes`` are BufferRegions over them; ``init`` runs before the first
    reduction step."""

    __slots__ = ("iter_vars", "reads", "writes", "name_hint", "body", "init", "alloc_buffers",
                 "match_buffers", "annotations")
    _fields = ("iter_vars", "alloc_buffers", "match_buffers", "reads", "writes", "name_hint", "annotations",
               "init", "body")
    _type_key = "tir.Block"

    def __init__(self, iter_vars: Sequence[IterVar], reads: Sequence[BufferRegion], writes: Sequence[BufferRegion],
                 name_hint: str, body: Stmt, init: Stmt | None = None, alloc_buffers: Sequence[Buffer] = (),
                 match_buffers: Sequence[MatchBufferRegion] = (), annotations: Mapping | None = None, span=None):
        _set(self, "iter_vars", tuple(iter_vars))
        _set(self, "reads", tuple(reads))
        _set(self, "writes", tuple(writes))
        _set(self, "name_hint", name_hint)
        _set(self, "body", body)
        _set(self, "init", init)
        _set(self, "alloc_buffers", tuple(alloc_buffers or ()))
        _set(self, "match_buffers", tuple(match_buffers or ()))
        _set(self, "annotations", _frozen(annotations))
        _set(self, "span", span)


class BlockRealize(Stmt):
    """Runs ``block`` with its iterators bound to ``iter_values`` when ``predicate`` holds."""

    __slots__ = ("iter_values", "predicate", "block")
    _fields = ("iter_values", "predicate", "block")
    _type_key = "tir.BlockRealize"

    def __init__(self, iter_values: Sequence, predicate, block: Block, span=None):
        _set(self, "iter_values", tuple(convert(v) for v in iter_values))
        _set(self, "predicate", convert(True if predicate is None else predicate))
        _set(self, "block", block)
        _set(self, "span", span)


# TVM spells these SBlock/SBlockRealize in its newest versions.
SBlock = Block
SBlockRealize = BlockRealize


def stmt_seq(*stmts) -> Stmt:
    """``SeqStmt.flatten(*stmts)``: one statement for several.

    Parameters
    ----------
    *stmts : Stmt
        The statements.

    Returns
    -------
    Stmt
        The statement.
    """
    return SeqStmt.flatten(*stmts)


def stmt_list(stmt: Stmt) -> list[Stmt]:
    """The statements of ``stmt`` as a list (a SeqStmt's items, or the statement alone).

    Parameters
    ----------
    stmt : Stmt
        The statement.

    Returns
    -------
    list of Stmt
        The statements.
    """
    if isinstance(stmt, SeqStmt):
        return list(stmt.seq)
    return [stmt]


__all__ = [n for n in dir() if not n.startswith("_")] + ["PrimExpr"]


_buffer._STATEMENTS.update(BufferRegion=BufferRegion, BufferStore=BufferStore)
