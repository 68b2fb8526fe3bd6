"""What the parser collects while inside a function or a block, before it builds the node."""
from __future__ import annotations

from typing import Any

from ...ir.buffer import Buffer
from ...ir.expr import IterVar, PrimExpr, Var
from ...ir.stmt import BufferRegion, MatchBufferRegion, Stmt


class FunctionFrame:
    """A prim_func being parsed: parameters, the buffers behind them, attributes and the buffers
    the implicit root block allocates."""

    def __init__(self, name: str):
        self.name = name
        self.params: list[Var] = []
        self.buffer_map: dict[Var, Buffer] = {}
        self.attrs: dict[str, Any] = {}
        self.root_alloc_buffers: list[Buffer] = []
        self.has_blocks = False


class BlockFrame:
    """A ``with T.block(name):`` being parsed."""

    def __init__(self, name: str):
        self.name = name
        self.iter_vars: list[IterVar] = []
        self.iter_values: list[PrimExpr] = []
        self.reads: list[BufferRegion] | None = None
        self.writes: list[BufferRegion] | None = None
        self.init: Stmt | None = None
        self.alloc_buffers: list[Buffer] = []
        self.match_buffers: list[MatchBufferRegion] = []
        self.annotations: dict[str, Any] = {}
        self.predicate: PrimExpr | None = None


class Consumed:
    """A statement that took the rest of its body as its own body."""

    __slots__ = ("stmt",)

    def __init__(self, stmt: Stmt):
        self.stmt = stmt
