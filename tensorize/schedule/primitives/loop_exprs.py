"""Expression helpers of the loop transformations: extents that may be ints or symbolic PrimExprs.

>>> from tensorize.ir import expr as E
>>> _product(4, 8, "int32")
32
>>> n = E.Var("n", "int32")
>>> str(_product(_product(n, 128, "int32"), 128, "int32"))
'n * 16384'
"""
from __future__ import annotations

from typing import Sequence

from ...ir import dtype as dt
from ...ir import expr as E
from ...ir.stmt import Stmt
from ..analysis import block_realizes_under, conjoin, simplify
from ..tree import replace_many


def _wider_dtype(dtypes: Sequence[str]) -> str:
    return max(dtypes, key=lambda d: dt.parse(d).bits)


def _as_expr(value, dtype: str) -> E.PrimExpr:
    """An int or a PrimExpr as a PrimExpr of ``dtype``."""
    if isinstance(value, int):
        return E.make_const(dtype, value)
    return value if value.dtype == dtype else E.cast(dtype, value)


def _product(a, b, dtype: str):
    """``a * b`` for ints or (symbolic) PrimExprs: an int when both are constant, else simplified."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if isinstance(a, int) and a == 1:
        return b
    if isinstance(b, int) and b == 1:
        return a
    product = E.mul(_as_expr(a, dtype), _as_expr(b, dtype))
    # Fold constants (n * 128 * 128 -> n * 16384) but keep the order of symbolic factors, as TVM prints it.
    return simplify(product) if isinstance(a, int) or isinstance(b, int) else product


def _add_predicate(stmt: Stmt, pred: E.PrimExpr) -> Stmt:
    """Conjoin ``pred`` to the predicate of every block realize in the nest ``stmt``."""
    replacements = {}
    for realize in block_realizes_under(stmt):
        replacements[id(realize)] = realize.replace(predicate=simplify(conjoin(realize.predicate, pred)))
    return replace_many(stmt, replacements) if replacements else stmt
