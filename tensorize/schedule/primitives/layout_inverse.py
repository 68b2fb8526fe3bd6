"""The inverse of a padding index map (``transform_layout`` with ``pad_value``).

``lambda i: (i // 4, i % 4)`` on 14 elements is a bijection from the padded shape 16 onto 4 x 4;
its inverse ``lambda i0, i1: (i0 * 4 + i1,)`` gives each new element's original index, past 14
in the padding.
"""
from __future__ import annotations

from ...arith.analyzer import Analyzer
from ...arith.index_map import IndexMap
from ...ir import expr as E
from ...ir.functor import StmtExprMutator, collect_vars


def padded_inverse(imap: IndexMap, shape) -> IndexMap:
    """For a map that pads ``shape``: the inverse map on the padded initial shape the map is a bijection
    on (each initial index is padded to the product of the extents of the final indices it feeds).
    An index used only shifted by a constant (``(i + 1) // 8``, ``(i + 1) % 8``) is padded on both
    sides: the inverse gives ``i = 8 * a + b - 1``.

    Parameters
    ----------
    imap : IndexMap
        The padding map.
    shape : list of int
        The initial shape.

    Returns
    -------
    IndexMap
        The inverse map.

    Raises
    ------
    ValueError
        When the map mixes several indices in one final index or is not a bijection from the padded shape.
    """
    new_shape = [int(s) for s in imap.map_shape(shape)]
    shifted, offsets = _unshift(imap)
    padded = []
    for v, s in zip(shifted.initial_indices, shape):
        total = 1
        for f, ext in zip(shifted.final_indices, new_shape):
            used = collect_vars(f)
            if any(u is v for u in used):
                if len(used) != 1:
                    raise ValueError(f"the padding index map {imap} mixes several indices in {f}; only maps that "
                                     "split indices separately can pad")
                total *= ext
        padded.append(total)
    if [int(s) for s in shifted.map_shape(padded)] != new_shape or not shifted.is_bijective_on(padded):
        raise ValueError(f"index map {imap} is not a bijection from the padded shape {padded} to {new_shape}")
    inverse = shifted.inverse(padded)
    if any(offsets):
        ana = Analyzer()
        finals = [ana.simplify(E.sub(f, E.make_const(f.dtype, c))) if c else f
                  for f, c in zip(inverse.final_indices, offsets)]
        inverse = IndexMap(inverse.initial_indices, finals)
    return inverse


class _Unshift(StmtExprMutator):
    """Replaces ``v + c`` (``c`` a constant) by ``v`` for the given variables, recording ``c``."""

    def __init__(self, variables):
        self.ids = {id(v) for v in variables}
        self.offsets: dict[int, set] = {}
        self.bare: set = set()

    def visit_add_(self, op):
        if isinstance(op.a, E.Var) and id(op.a) in self.ids and isinstance(op.b, E.IntImm):
            self.offsets.setdefault(id(op.a), set()).add(op.b.value)
            return op.a
        return super().visit_add_(op)

    def visit_var_(self, op):
        if id(op) in self.ids:
            self.bare.add(id(op))
        return op


def _unshift(imap: IndexMap) -> tuple[IndexMap, list[int]]:
    """``imap`` with each index used only as ``v + c`` (one constant ``c``) read as ``v``, and the
    offsets ``c`` (0 for the other indices)."""
    probe = _Unshift(imap.initial_indices)
    for f in imap.final_indices:
        probe.visit(f)
    offsets = []
    for v in imap.initial_indices:
        found = probe.offsets.get(id(v), set())
        offsets.append(next(iter(found)) if len(found) == 1 and id(v) not in probe.bare else 0)
    if not any(offsets):
        return imap, offsets
    unshift = _Unshift([v for v, c in zip(imap.initial_indices, offsets) if c])
    return IndexMap(imap.initial_indices, [unshift.visit(f) for f in imap.final_indices]), offsets
