"""Loop-nest helpers of rfactor: the copy of the nest around the rfactor block, the write-back
nest made from the original one, and the check that a predicate leaves every rfactor entry initialised."""
from __future__ import annotations

from itertools import product
from math import prod

from ...arith.evaluate import evaluate
from ...ir import expr as E
from ...ir.functor import substitute
from ...ir.stmt import BlockRealize, For, SeqStmt, Stmt
from ..analysis import const_value, uses_any


def copy_nest(loops: list, realize: BlockRealize):
    """``realize`` wrapped in copies of ``loops`` (outermost first) with fresh loop variables.

    Parameters
    ----------
    loops : list of For
        The loops around the block, outermost first.
    realize : BlockRealize
        The block realize, bound to the loops' variables.

    Returns
    -------
    Stmt
        The new loop nest (its bindings and predicate use the fresh variables).
    """
    fresh = {f.loop_var: E.Var(f.loop_var.name, f.loop_var.dtype) for f in loops}
    stmt = realize.replace(iter_values=tuple(substitute(v, fresh) for v in realize.iter_values),
                           predicate=substitute(realize.predicate, fresh))
    for f in reversed(loops):
        stmt = f.replace(loop_var=fresh[f.loop_var], min=substitute(f.min, fresh),
                         extent=substitute(f.extent, fresh), body=stmt)
    return stmt


def rewrite_nest(stmt, loop_ids: set, removed: set, realize, new_realize):
    """``stmt`` with ``realize`` replaced by ``new_realize`` and the loops whose variables are in
    ``removed`` taken out (their bodies stay); only the loops of ``loop_ids`` are entered.

    Parameters
    ----------
    stmt : Stmt
        The outermost loop of the block (or a statement under it).
    loop_ids : set of int
        ``id`` of the loop variables of the loops around the block.
    removed : set of int
        ``id`` of the loop variables of the loops to take out.
    realize : BlockRealize
        The block realize to replace.
    new_realize : BlockRealize
        Its replacement.

    Returns
    -------
    Stmt
        The rewritten statement.
    """
    if isinstance(stmt, For):
        if id(stmt.loop_var) not in loop_ids:
            return stmt
        body = rewrite_nest(stmt.body, loop_ids, removed, realize, new_realize)
        return body if id(stmt.loop_var) in removed else stmt.replace(body=body)
    if stmt is realize:
        return new_realize
    if isinstance(stmt, SeqStmt):
        return SeqStmt.flatten([rewrite_nest(s, loop_ids, removed, realize, new_realize) for s in stmt.seq])
    changes = {name: rewrite_nest(child, loop_ids, removed, realize, new_realize)
               for name in ("body", "then_case", "else_case")
               if isinstance(child := getattr(stmt, name, None), Stmt)}
    return stmt.replace(**changes) if changes else stmt


def every_rf_value_runs(predicate, rf_loop, loops, limit: int = 1 << 14) -> bool:
    """True when, for each value of the rfactor loop, some values of the other loops satisfy the
    block predicate (so each rfactor entry gets its init). Decided by enumerating the loops the
    predicate uses; False (refuse) when they are not constant or too many to enumerate.

    Parameters
    ----------
    predicate : PrimExpr
        The block predicate.
    rf_loop : For
        The rfactor loop.
    loops : list of For
        The loops around the block.
    limit : int
        The most points to enumerate.

    Returns
    -------
    bool
        Whether every value of the rfactor loop runs the block at least once.
    """
    used = [lp for lp in loops if uses_any(predicate, {id(lp.loop_var)})]
    ranges = []
    for lp in used:
        lo, ext = const_value(lp.min), const_value(lp.extent)
        if lo is None or ext is None:
            return False
        ranges.append(range(lo, lo + ext))
    if prod(len(r) for r in ranges) > limit:
        return False
    covered = set()
    rf_pos = next(k for k, lp in enumerate(used) if lp.loop_var is rf_loop.loop_var)
    for point in product(*ranges):
        if point[rf_pos] not in covered and evaluate(predicate, {lp.loop_var: v for lp, v in zip(used, point)}):
            covered.add(point[rf_pos])
    return len(covered) == len(ranges[rf_pos])
