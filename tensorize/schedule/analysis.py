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
from ..arith.iter_map import detect_iter_map
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


def nest_blocks(stmt: Stmt) -> list[BlockRealize]:
    """Every block realize under ``stmt`` (nested ones too), parents before their children; a walk
    over statements only.

    Parameters
    ----------
    stmt : Stmt
        The statement.

    Returns
    -------
    list of BlockRealize
        The block realizes, each before the blocks inside it.
    """
    out = []

    def walk(s):
        for realize in block_realizes_under(s):
            out.append(realize)
            walk(realize.block.body)

    walk(stmt)
    return out


def is_affine_binding(realize: BlockRealize, loops) -> bool:
    """TVM's affine-binding test, read structurally: every binding of ``realize`` is affine in the
    variables of ``loops`` (other variables count as constants; ``//`` and ``%`` by constants allowed)
    with a unit-coefficient term when it uses them, and a predicate that uses them bounds one of the
    bindings (``T.where(i_0 * 4 + i_1 < 10)`` after a split).

    Parameters
    ----------
    realize : BlockRealize
        The block realize.
    loops : list of For
        The loops whose variables are the iterators.

    Returns
    -------
    bool
        True when affine.
    """
    ids = {id(f.loop_var) for f in loops}
    if not ids:
        return True
    for value in realize.iter_values:
        if uses_any(value, ids) and not (_affine_in(value, ids) and _has_unit_term(value, ids)):
            return False
    pred = realize.predicate
    if not uses_any(pred, ids):
        return True
    conjuncts = split_conjuncts(pred)
    bounded = [c.a for c in conjuncts if isinstance(c, (E.LT, E.LE)) and uses_any(c.a, ids)]
    others = [c for c in conjuncts if not isinstance(c, (E.LT, E.LE)) and uses_any(c, ids)]
    from ..ir.structural import structural_equal

    return not others and all(
        any(structural_equal(b, v, map_free_vars=False) for v in realize.iter_values) or _is_plain_sum(b, realize.iter_values, ids)
        or _is_fused_sum(b, loops) for b in bounded)


def split_conjuncts(pred) -> list:
    """The conjuncts of ``pred`` (``a && b && ...``), constant-true parts dropped.

    Parameters
    ----------
    pred : PrimExpr
        A condition.

    Returns
    -------
    list of PrimExpr
        Its conjuncts, outermost ``And`` first.

    Examples
    --------
    >>> from tensorize.ir import expr as E
    >>> i, j = E.Var("i", "int32"), E.Var("j", "int32")
    >>> [str(c) for c in split_conjuncts(E.logical_and(i < 5, j < 3))]
    ['i < 5', 'j < 3']
    """
    if isinstance(pred, E.And):
        return split_conjuncts(pred.a) + split_conjuncts(pred.b)
    if isinstance(pred, E.IntImm) and pred.value:
        return []
    return [pred]


def conjoin_all(parts) -> E.PrimExpr:
    """``parts[0] && parts[1] && ...`` (``conjoin`` folded); ``True`` for none.

    Parameters
    ----------
    parts : iterable of PrimExpr
        Conditions.

    Returns
    -------
    PrimExpr
        Their conjunction.
    """
    out: E.PrimExpr = E.IntImm("bool", True)
    for p in parts:
        out = conjoin(out, p)
    return out


def _is_plain_sum(expr, values, ids) -> bool:
    """Whether ``expr`` is an affine sum of loop variables that all feed one binding (a split's bound)."""
    used = {i for i in ids if uses_any(expr, {i})}
    return _affine_in(expr, ids) and any(used <= {i for i in ids if uses_any(v, {i})} for v in values)


def _is_fused_sum(expr, loops) -> bool:
    """Whether ``expr`` is a fusion of several loop variables (``i * 16 + j`` with ``j`` of extent 16): the
    bound of a split whose parts became separate iterators (an rfactor of a masked row), which TVM's
    iterator map also accepts."""
    iters = {f.loop_var: E.Range.from_min_extent(f.min, f.extent) for f in loops if uses_any(expr, {id(f.loop_var)})}
    return len(iters) > 1 and not detect_iter_map([expr], iters).errors


def _affine_in(expr, ids) -> bool:
    """Whether ``expr`` is affine in the variables ``ids`` (others are constants)."""
    if not uses_any(expr, ids):
        return True
    if isinstance(expr, E.Var):
        return True
    if isinstance(expr, (E.Add, E.Sub)):
        return _affine_in(expr.a, ids) and _affine_in(expr.b, ids)
    if isinstance(expr, E.Mul):
        if not uses_any(expr.a, ids):
            return _affine_in(expr.b, ids)
        if not uses_any(expr.b, ids):
            return _affine_in(expr.a, ids)
        return False
    if isinstance(expr, (E.FloorDiv, E.FloorMod)):
        return isinstance(expr.b, E.IntImm) and expr.b.value > 0 and _affine_in(expr.a, ids)
    if isinstance(expr, E.Cast):
        return _affine_in(expr.value, ids)
    return False


def _has_unit_term(expr, ids) -> bool:
    """Whether the affine ``expr`` has a term that is a loop variable with coefficient 1 (``l * 16``
    has none: it skips values), looking through ``//`` and ``%``."""
    if isinstance(expr, E.Var):
        return id(expr) in ids
    if isinstance(expr, E.Add):
        return _has_unit_term(expr.a, ids) or _has_unit_term(expr.b, ids)
    if isinstance(expr, E.Sub):
        return _has_unit_term(expr.a, ids)
    if isinstance(expr, (E.FloorDiv, E.FloorMod)):
        return _has_unit_term(expr.a, ids)
    if isinstance(expr, E.Cast):
        return _has_unit_term(expr.value, ids)
    return False
