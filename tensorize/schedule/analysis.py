"""Facts about block iterators and loop nests that several schedule primitives ask: iterator kinds
and their names, the block realizes directly under a statement, the variables an expression uses,
and index simplification (through ``tensorize.arith``).

>>> from tensorize.ir.expr import Var
>>> iter_kind_name(COMM_REDUCE)
'reduction'
>>> const_value(simplify(Var("i") * 0 + 4))
4
"""
from __future__ import annotations

from ..arith.block_regions import const_value, simplify  # noqa: F401  (shared with the primitives)
from ..ir import expr as E
from ..ir.functor import collect_vars, uses_any  # noqa: F401  (uses_any: shared with the primitives)
from ..ir.stmt import Block, BlockRealize, SeqStmt, Stmt

DATA_PAR = E.IterVar.DataPar
COMM_REDUCE = E.IterVar.CommReduce


def conjoin(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    """``a and b`` with ``True`` operands dropped.

    Parameters
    ----------
    a : PrimExpr
        A condition.
    b : PrimExpr
        Another condition.

    Returns
    -------
    PrimExpr
        ``a and b``, with a constant true side dropped.
    """
    return E.logical_and(a, b)


# -- variables and iterators ----------------------------------------------------------------------
def var_ids(node) -> set[int]:
    """Ids of the variables ``node`` uses.

    Parameters
    ----------
    node : Node
        An expression or statement.

    Returns
    -------
    set of int
        The ``id`` of every Var used in it.
    """
    return {id(v) for v in collect_vars(node)}


def iter_kind_name(iter_type: int) -> str:
    """The name of a block iterator type (``'spatial'``, ``'reduce'``, ...).

    Parameters
    ----------
    iter_type : int
        The IterVar type constant.

    Returns
    -------
    str
        Its name.
    """
    return {DATA_PAR: "spatial", COMM_REDUCE: "reduction", E.IterVar.Ordered: "scan",
            E.IterVar.Opaque: "opaque"}.get(iter_type, f"kind {iter_type}")


def block_realizes_under(stmt: Stmt) -> list[BlockRealize]:
    """Block realizes in ``stmt`` not nested inside another block, in program order.

    Parameters
    ----------
    stmt : Stmt
        The statement.

    Returns
    -------
    list of BlockRealize
        The block realizes, in program order.
    """
    out: list[BlockRealize] = []

    def walk(s):
        if isinstance(s, BlockRealize):
            out.append(s)
        elif isinstance(s, SeqStmt):
            for c in s.seq:
                walk(c)
        elif not isinstance(s, Block):
            for name in ("body", "then_case", "else_case"):
                child = getattr(s, name, None)
                if isinstance(child, Stmt):
                    walk(child)

    walk(stmt)
    return out


