"""``CommonSubexprElimTIR``: hoist index expressions computed more than once in a statement into a
``LetStmt`` named ``cse_var_N``.

>>> # c[Ramp(i_outer * 8, 1, 8)] = a[Ramp(i_outer * 8, 1, 8)] + b[Ramp(i_outer * 8, 1, 8)]
>>> # becomes: cse_var_1: T.int32 = i_outer * 8
>>> #          c[cse_var_1:cse_var_1 + 8] = a[cse_var_1:cse_var_1 + 8] + b[cse_var_1:cse_var_1 + 8]

Only pure scalar integer computations are candidates (no loads, no calls), larger ones first.
"""
from __future__ import annotations

from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import StmtExprMutator, StmtExprVisitor
from .pass_infra import PassContext, func_pass

_LEAVES = (E.Var, E.IntImm, E.FloatImm, E.StringImm)


def _eligible(e) -> bool:
    if isinstance(e, _LEAVES) or dt.lanes_of(e.dtype) != 1 or not dt.is_int(e.dtype):
        return False
    ok = [True]

    def check(n):
        if isinstance(n, (E.BufferLoad, E.Call, E.Let, E.Ramp, E.Broadcast, E.Shuffle)):
            ok[0] = False

    from ..ir.functor import post_order_visit

    post_order_visit(e, check)
    return ok[0]


def _size(e) -> int:
    count = [0]
    from ..ir.functor import post_order_visit

    post_order_visit(e, lambda n: count.__setitem__(0, count[0] + 1))
    return count[0]


def expr_key(e):
    """A hashable key equal for two pure expressions that compute the same thing (variables by identity)."""
    if isinstance(e, E.Var):
        return ("var", id(e))
    if isinstance(e, (E.IntImm, E.FloatImm, E.StringImm)):
        return (type(e).__name__, e.dtype, e.value)
    return (type(e).__name__, e.dtype) + tuple(
        expr_key(getattr(e, f)) if isinstance(getattr(e, f), E.PrimExpr) else getattr(e, f) for f in e._fields)


class _Counter(StmtExprVisitor):
    _methods: dict = {}

    def __init__(self):
        self.table: dict[tuple, list] = {}  # key -> [expr, count]

    def visit_expr(self, e):
        if _eligible(e):
            entry = self.table.setdefault(expr_key(e), [e, 0])
            entry[1] += 1
        super().visit_expr(e)


class _Replacer(StmtExprMutator):
    _methods: dict = {}

    def __init__(self, target, var):
        self.key, self.var = expr_key(target), var

    def visit_expr(self, e):
        if not isinstance(e, _LEAVES) and _eligible(e) and expr_key(e) == self.key:
            return self.var
        return super().visit_expr(e)


class _CSE(StmtExprMutator):
    _methods: dict = {}

    def __init__(self):
        self.counter = 0

    def _eliminate(self, stmt):
        lets = []
        while True:
            counter = _Counter()
            counter.visit_stmt(stmt)
            repeated = [entry[0] for entry in counter.table.values() if entry[1] >= 2]
            if not repeated:
                break
            target = max(repeated, key=_size)
            self.counter += 1
            var = E.Var(f"cse_var_{self.counter}", target.dtype)
            stmt = _Replacer(target, var).visit_stmt(stmt)
            lets.append((var, target))
        # Later (smaller) expressions were found inside earlier ones' uses; bind the smaller first
        # when an earlier value refers to them.
        for k in range(len(lets)):
            var, value = lets[k]
            for later_var, later_value in lets[k + 1:]:
                value = _Replacer(later_value, later_var).visit_expr(value)
            lets[k] = (var, value)
        for var, value in lets:
            stmt = S.LetStmt(var, value, stmt)
        return stmt

    def visit_buffer_store_(self, op):
        return self._eliminate(op)

    def visit_evaluate_(self, op):
        return self._eliminate(op)


def common_subexpr_elim(func):
    if PassContext.current().config.get("tir.disable_cse_tir", False):
        return func
    return func.with_body(_CSE().visit(func.body))


def CommonSubexprElimTIR(enable_cse_tir: bool = True, identify_equiv_terms: bool = False):  # noqa: N802
    """Hoist repeated pure integer subexpressions of each statement into ``cse_var_N`` lets."""
    if not enable_cse_tir:
        return func_pass(lambda f: f, "tir.CommonSubexprElimTIR")
    return func_pass(common_subexpr_elim, "tir.CommonSubexprElimTIR")
