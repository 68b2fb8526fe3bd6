"""Hash-consing of expressions: structurally identical pure expressions share one small integer id.

Passes that compare or cache many expressions (common subexpression elimination, simplification
of unrolled code) use it to stay linear in the program size: each node's id is computed once, from
its children's ids, instead of re-walking its subtree.

For example::

    shapes = ExprShapes(); shapes.info(i * 4 + 1)[0] == shapes.info(i * 4 + 1)[0]   -> True
"""
from __future__ import annotations

from ..ir import dtype as dt
from ..ir import expr as E

_LEAVES = (E.Var, E.IntImm, E.FloatImm, E.StringImm)
_IMPURE = (E.BufferLoad, E.Call, E.Let, E.Ramp, E.Broadcast, E.Shuffle)


class ExprShapes:
    """Hash-consing of expressions: structurally identical pure expressions (no loads, calls or vectors) get
    the same small integer id, computed once per node (so a whole pass stays linear in the size of
    the statement instead of re-walking every subtree at every node)."""

    def __init__(self):
        self._ids: dict[tuple, int] = {}
        self._memo: dict[int, tuple] = {}  # id(node) -> (node, shape id or None if impure, size)

    def info(self, e) -> tuple:
        """``(shape_id, size)`` of ``e``; ``shape_id`` is None when ``e`` loads, calls or builds vectors.

        Parameters
        ----------
        e : PrimExpr
            The expression.

        Returns
        -------
        tuple of (int or None, int)
            The shape id and the size.
        """
        entry = self._memo.get(id(e))
        if entry is not None and entry[0] is e:
            return entry[1], entry[2]
        if isinstance(e, E.Var):
            key, size = ("var", id(e)), 1
        elif isinstance(e, (E.IntImm, E.FloatImm, E.StringImm)):
            key, size = (type(e).__name__, e.dtype, e.value), 1
        elif isinstance(e, _IMPURE):
            key, size = None, 1
        else:
            parts, size = [type(e).__name__, e.dtype], 1
            for f in e._fields:
                child = getattr(e, f)
                if isinstance(child, E.PrimExpr):
                    child_id, child_size = self.info(child)
                    if child_id is None:
                        parts = None
                        break
                    parts.append(child_id)
                    size += child_size
                else:
                    parts.append(child)
            key = None if parts is None else tuple(parts)
        shape_id = None if key is None else self._ids.setdefault(key, len(self._ids))
        self._memo[id(e)] = (e, shape_id, size)
        return shape_id, size

    def eligible(self, e):
        """The shape id of ``e`` if it is a CSE candidate (a pure, non-trivial scalar integer computation).

        Parameters
        ----------
        e : PrimExpr
            The expression.

        Returns
        -------
        int or None
            The shape id, or None when not a candidate.
        """
        if isinstance(e, _LEAVES) or dt.lanes_of(e.dtype) != 1 or not dt.is_int(e.dtype):
            return None
        return self.info(e)[0]
