"""Count the arithmetic of a program, for GFLOPS figures: every block's store, once per block instance.

>>> from tensorize.script import tir as T
>>> @T.prim_func
... def mm(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
...     for i, j, k in T.grid(8, 8, 8):
...         with T.block("C"):
...             vi, vj, vk = T.axis.remap("SSR", [i, j, k])
...             with T.init():
...                 C[vi, vj] = T.float32(0)
...             C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
>>> estimate_flops(mm)
1024.0
"""
from __future__ import annotations

from tensorize.ir import expr as E
from tensorize.ir.functor import post_order_visit
from tensorize.ir.stmt import Block, BufferStore, For

from .context import as_module

__all__ = ["estimate_flops"]

_ARITH = (E.Add, E.Sub, E.Mul, E.Div, E.FloorDiv, E.FloorMod, E.Min, E.Max)


def _ops(expr) -> int:
    """Arithmetic operations in ``expr`` (index arithmetic inside buffer loads excluded)."""
    count = 0

    def walk(node):
        nonlocal count
        if isinstance(node, E.BufferLoad):
            return
        if isinstance(node, (_ARITH, E.Call)):
            count += 1
        for child in _children(node):
            walk(child)

    walk(expr)
    return count


def _children(node):
    for name in ("a", "b", "value", "condition", "true_value", "false_value"):
        child = getattr(node, name, None)
        if isinstance(child, E.PrimExpr):
            yield child
    for arg in getattr(node, "args", ()) or ():
        if isinstance(arg, E.PrimExpr):
            yield arg


def estimate_flops(mod) -> float:
    """Arithmetic operations of one call of ``mod``'s functions (an IRModule or PrimFunc).

    Each block's stores count once per block instance (the product of its iterator extents) and
    once per iteration of the loops around the block that its iterators do not cover; a program
    without blocks counts its stores times the extents of the loops around them. Inits are not
    counted. Symbolic extents count as 1.
    """
    total = 0.0
    for func in as_module(mod).functions.values():
        body = getattr(func, "body", None)
        if body is not None:
            total += _count(body, 1.0, in_block=False)
    return total


def _extent(value) -> float:
    return float(value.value) if isinstance(value, E.IntImm) else 1.0


def _count(stmt, outer: float, in_block: bool) -> float:
    if isinstance(stmt, For):
        return _count(stmt.body, outer * _extent(stmt.extent), in_block)
    if isinstance(stmt, Block):
        volume = 1.0
        for iv in stmt.iter_vars:
            volume *= _extent(iv.dom.extent)
        inner = _count(stmt.body, 1.0, True)
        # A block whose iterators cover its loops counts its volume, not the loops around it.
        return inner * volume if stmt.iter_vars else inner * outer
    if isinstance(stmt, BufferStore):
        return outer * _ops(stmt.value)
    total = 0.0
    for child in _stmt_children(stmt):
        total += _count(child, outer, in_block)
    return total


def _stmt_children(stmt):
    for name in ("body", "then_case", "else_case", "block"):
        child = getattr(stmt, name, None)
        if child is not None and not isinstance(child, E.PrimExpr):
            yield child
    for child in getattr(stmt, "seq", ()) or ():
        yield child
