"""Read/write regions of blocks generated from tensor expressions.

Accesses in a te block are points (``A[v_i, v_k]``), so a region per buffer is the union of the
points: identical indices give a point, indices ``base + c`` with a shared ``base`` give the range
``[base + min c, base + max c + 1)``, anything else (data-dependent or unrelated indices) the whole
axis. As in TVM, a block with an ``init`` does not list the buffers it writes among its reads.
"""
from __future__ import annotations

from typing import Iterable

from ..ir.buffer import Buffer
from ..ir.expr import Add, BufferLoad, IntImm, PrimExpr, Ramp, Range, Sub
from ..ir.functor import StmtExprVisitor, post_order_visit
from ..ir.stmt import Block, BufferRegion, BufferStore
from ..ir.structural import structural_equal


class _AccessCollector(StmtExprVisitor):
    _methods: dict = {}

    def __init__(self):
        self.reads: dict[Buffer, list[tuple]] = {}
        self.writes: dict[Buffer, list[tuple]] = {}

    def visit_buffer_load_(self, op: BufferLoad):
        self.reads.setdefault(op.buffer, []).append(op.indices)
        super().visit_buffer_load_(op)

    def visit_buffer_store_(self, op: BufferStore):
        self.writes.setdefault(op.buffer, []).append(op.indices)
        super().visit_buffer_store_(op)


def _split_offset(index: PrimExpr) -> tuple[PrimExpr | None, int] | None:
    """``index`` as ``(base, constant offset)``; base None for a constant."""
    if isinstance(index, IntImm):
        return None, index.value
    if isinstance(index, Add) and isinstance(index.b, IntImm):
        return index.a, index.b.value
    if isinstance(index, Add) and isinstance(index.a, IntImm):
        return index.b, index.a.value
    if isinstance(index, Sub) and isinstance(index.b, IntImm):
        return index.a, -index.b.value
    return index, 0


def _has_load(expr: PrimExpr) -> bool:
    found = []
    post_order_visit(expr, lambda n: found.append(n) if isinstance(n, BufferLoad) else None)
    return bool(found)


def _union_axis(indices: list[PrimExpr], extent: PrimExpr) -> Range:
    first = indices[0]
    if all(i is first or structural_equal(i, first) for i in indices[1:]):
        if isinstance(first, Ramp) and isinstance(first.stride, IntImm) and first.stride.value > 0:
            return Range.from_min_extent(first.base, first.stride.value * (first.lanes - 1) + 1)
        if not _has_load(first) and not isinstance(first, Ramp):
            return Range.from_min_extent(first, 1)
    split = [_split_offset(i) for i in indices]
    base = split[0][0]
    same_base = all((b is None) == (base is None) and (b is None or b is base or structural_equal(b, base))
                    for b, _ in split)
    if same_base and (base is None or not _has_load(base)) and not any(isinstance(i, Ramp) for i in indices):
        lo = min(off for _, off in split)
        hi = max(off for _, off in split)
        start = IntImm(first.dtype, lo) if base is None else (base + lo if lo > 0 else base - (-lo) if lo < 0 else base)
        return Range.from_min_extent(start, IntImm(first.dtype, hi - lo + 1))
    return Range.from_min_extent(IntImm(extent.dtype, 0), extent)


def _regions(accesses: dict[Buffer, list[tuple]], skip: Iterable[Buffer]) -> list[BufferRegion]:
    skipped = {id(b) for b in skip}
    out = []
    for buffer, points in accesses.items():
        if id(buffer) in skipped:
            continue
        region = [_union_axis([p[axis] for p in points], buffer.shape[axis]) for axis in range(len(buffer.shape))]
        out.append(BufferRegion(buffer, region))
    return out


def block_access_regions(block: Block) -> tuple[list[BufferRegion], list[BufferRegion]]:
    """``(reads, writes)`` of a block whose accesses are te-style points (see the module doc)."""
    collector = _AccessCollector()
    if block.init is not None:
        collector.visit_stmt(block.init)
    collector.visit_stmt(block.body)
    local = list(block.alloc_buffers)
    writes = _regions(collector.writes, local)
    excluded = local + ([w.buffer for w in writes] if block.init is not None else [])
    reads = _regions(collector.reads, excluded)
    return reads, writes
