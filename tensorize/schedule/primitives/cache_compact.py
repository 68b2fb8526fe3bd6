"""Caches inside a non-root scope block, as TVM makes them: shaped like the region they hold.

``cache_read``/``cache_write`` of a buffer accessed in a block scope other than the function's root
allocate the cache in that scope with the (constant) extents of the region copied, and the served
blocks index it relative to the region's start: ``A[i * 16 + x, ...]`` becomes
``A_local[vi - i * 16, ...]``.
"""
from __future__ import annotations

from ...arith import Analyzer
from ...ir import expr as E
from ...ir.buffer import Buffer
from ...ir.stmt import BufferRegion, BufferStore
from ..surgery import BufferReplacer


def compact_region(tree, scope, region: list[E.Range], ana) -> list[E.Range] | None:
    """``region`` simplified when the cache should be compact (``scope`` is not the function's root
    block and every extent is a constant), else None.

    Parameters
    ----------
    tree : StmtIndex
        The function's statements.
    scope : BlockRealize or None
        The scope block of the cached access.
    region : list of Range
        The region the cache holds.
    ana : Analyzer
        Knows the variables around the copy.

    Returns
    -------
    list of Range or None
        The region with simplified bounds, or None for a full-shape cache.

    Examples
    --------
    >>> compact_region(None, None, [], Analyzer()) is None
    True
    """
    if scope is None or tree.parent_block_realize(scope) is None:
        return None
    out = [E.Range.from_min_extent(ana.simplify(r.min), ana.simplify(r.extent)) for r in region]
    if not all(isinstance(r.extent, E.IntImm) for r in out):
        return None
    return out


class OffsetReplacer(BufferReplacer):
    """Accesses of ``old`` become accesses of the compact ``new`` at ``index - region.min``."""

    def __init__(self, old: Buffer, new: Buffer, mins):
        super().__init__({id(old): new})
        self.old, self.new, self.mins, self.ana = old, new, list(mins), Analyzer()

    def _shift(self, indices):
        return [self.ana.simplify(E.sub(i, m)) for i, m in zip(indices, self.mins)]

    def visit_buffer_load_(self, op):
        if op.buffer is self.old:
            op = E.BufferLoad(self.old, [self.visit_expr(i) for i in op.indices])
            return E.BufferLoad(self.new, self._shift(op.indices))
        return super().visit_buffer_load_(op)

    def visit_buffer_store_(self, op):
        if op.buffer is self.old:
            indices = [self.visit_expr(i) for i in op.indices]
            return BufferStore(self.new, self.visit_expr(op.value), self._shift(indices))
        return super().visit_buffer_store_(op)

    def visit_buffer_region(self, region):
        if region.buffer is self.old:
            return BufferRegion(self.new, [E.Range.from_min_extent(self.ana.simplify(E.sub(r.min, m)), r.extent)
                                           for r, m in zip(region.region, self.mins)])
        return super().visit_buffer_region(region)
