"""The predicate a block keeps when ``compute_at`` / ``reverse_compute_at`` gives it new loops.

A block under a split that does not divide carries ``T.where`` over its old loops (an rfactor of a
masked row: ``k_0 * 16 + k_1 < 197``, with ``k_0`` and ``k_1`` bound to two iterators). Moving the
block replaces those loops; the guard must follow, rewritten over the new ones, or the block touches
the elements it guarded (the row max read the next row's first elements).
"""
from __future__ import annotations

from ...ir import expr as E
from ...ir.functor import collect_vars, substitute
from ...ir.stmt import BlockRealize
from ...ir.structural import structural_equal
from ..analysis import split_conjuncts

__all__ = ["carried_predicate"]


def carried_predicate(realize: BlockRealize, bindings: list, removed: set):
    """``(conjuncts, stuck)``: ``realize``'s predicate over the new ``bindings``, as a list of conjuncts.

    A loop variable that was an iterator's whole binding becomes that iterator's new binding. A
    conjunct ``binding < extent`` of one iterator is implied by the new loops' clipping to the
    iterator's domain and is dropped. ``stuck`` is the first conjunct that still reads a ``removed``
    loop (then the predicate cannot follow the block), else None.

    Parameters
    ----------
    realize : BlockRealize
        The block before the move.
    bindings : list of PrimExpr
        Its iterators' bindings over the new loops, in iterator order.
    removed : set of int
        ``id`` of the loop variables the move takes away.

    Returns
    -------
    tuple
        ``(list of PrimExpr, PrimExpr or None)``.

    Examples
    --------
    >>> from tensorize import te, tir
    >>> x = te.placeholder((3, 37), name="x"); k = te.reduce_axis((0, 37), name="k")
    >>> mx = te.compute((3,), lambda i: te.max(x[i, k], axis=k), name="mx")
    >>> sch = tir.Schedule(te.create_prim_func([x, mx])); blk = sch.get_block("mx")
    >>> _, inner = sch.split(sch.get_loops(blk)[1], [None, 8])
    >>> rf = sch.rfactor(inner, factor_axis=1)
    >>> sch.compute_at(rf, sch.get_loops(blk)[0])
    >>> "T.where(ax1 * 8 + ax0 < 37)" in sch.mod.script()
    True
    """
    pred = realize.predicate
    if isinstance(pred, E.IntImm) and pred.value:
        return [], None
    mapping = {value: new for value, new in zip(realize.iter_values, bindings)
               if isinstance(value, E.Var) and id(value) in removed}
    kept = []
    for conjunct in split_conjuncts(pred):
        carried = substitute(conjunct, mapping) if mapping else conjunct
        if not any(id(v) in removed for v in collect_vars(carried)):
            kept.append(carried)
        elif not _within_domain(realize, conjunct):
            return [], conjunct
    return kept, None


def _within_domain(realize: BlockRealize, conjunct) -> bool:
    """Whether ``conjunct`` is ``binding < extent`` (or ``<=``) of one iterator: its domain says as much."""
    if not isinstance(conjunct, (E.LT, E.LE)) or not isinstance(conjunct.b, E.IntImm):
        return False
    limit = int(conjunct.b.value) + (1 if isinstance(conjunct, E.LE) else 0)
    for iv, value in zip(realize.block.iter_vars, realize.iter_values):
        if structural_equal(conjunct.a, value, map_free_vars=False) and isinstance(iv.dom.extent, E.IntImm) \
                and isinstance(iv.dom.min, E.IntImm) and int(iv.dom.min.value) + int(iv.dom.extent.value) <= limit:
            return True
    return False
