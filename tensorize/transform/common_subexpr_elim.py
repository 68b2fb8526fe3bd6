"""``CommonSubexprElimTIR``: hoist index expressions computed more than once in a statement into a
``LetStmt`` named ``cse_var_N``.

For example::

    c[Ramp(i_outer * 8, 1, 8)] = a[Ramp(i_outer * 8, 1, 8)] + b[Ramp(i_outer * 8, 1, 8)]
    becomes: cse_var_1: T.int32 = i_outer * 8
             c[cse_var_1:cse_var_1 + 8] = a[cse_var_1:cse_var_1 + 8] + b[cse_var_1:cse_var_1 + 8]

Only pure scalar integer computations are candidates (no loads, no calls), larger ones first.
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import StmtExprMutator, StmtExprVisitor
from .expr_shapes import ExprShapes
from .pass_infra import PassContext, func_pass

def expr_key(e):
    """A hashable key equal for two pure expressions that compute the same thing (variables by identity).

    Parameters
    ----------
    e : PrimExpr
        The expression.

    Returns
    -------
    tuple
        The key.
    """
    if isinstance(e, E.Var):
        return ("var", id(e))
    if isinstance(e, (E.IntImm, E.FloatImm, E.StringImm)):
        return (type(e).__name__, e.dtype, e.value)
    return (type(e).__name__, e.dtype) + tuple(
        expr_key(getattr(e, f)) if isinstance(getattr(e, f), E.PrimExpr) else getattr(e, f) for f in e._fields)


class _Counter(StmtExprVisitor):
    def __init__(self, shapes: ExprShapes):
        self.shapes = shapes
        self.table: dict[int, list] = {}  # shape id -> [expr, count, size], in first-visit order

    def visit_expr(self, e):
        shape_id = self.shapes.eligible(e)
        if shape_id is not None:
            entry = self.table.get(shape_id)
            if entry is None:
                self.table[shape_id] = [e, 1, self.shapes.info(e)[1]]
            else:
                entry[1] += 1
        super().visit_expr(e)


class _Replacer(StmtExprMutator):
    def __init__(self, shapes: ExprShapes, target_id: int, var):
        self.shapes, self.target_id, self.var = shapes, target_id, var

    def visit_expr(self, e):
        if self.shapes.eligible(e) == self.target_id:
            return self.var
        return super().visit_expr(e)


class _CSE(StmtExprMutator):
    def __init__(self):
        self.counter = 0

    def _eliminate(self, stmt):
        shapes = ExprShapes()
        lets = []
        while True:
            counter = _Counter(shapes)
            counter.visit_stmt(stmt)
            repeated = [entry for entry in counter.table.values() if entry[1] >= 2]
            if not repeated:
                break
            target = max(repeated, key=lambda entry: entry[2])[0]
            self.counter += 1
            var = E.Var(f"cse_var_{self.counter}", target.dtype)
            target_id = shapes.info(target)[0]
            stmt = _Replacer(shapes, target_id, var).visit_stmt(stmt)
            lets.append((var, target, target_id))
        # Later (smaller) expressions were found inside earlier ones' uses; bind the smaller first
        # when an earlier value refers to them.
        for k in range(len(lets)):
            var, value, _ = lets[k]
            for later_var, _, later_id in lets[k + 1:]:
                value = _Replacer(shapes, later_id, later_var).visit_expr(value)
            lets[k] = (var, value, None)
        for var, value, _ in lets:
            stmt = S.LetStmt(var, value, stmt)
        return stmt

    def visit_buffer_store_(self, op):
        return self._eliminate(op)

    def visit_evaluate_(self, op):
        return self._eliminate(op)


def common_subexpr_elim(func):
    """``func`` with repeated pure integer subexpressions bound to ``cse_var_N`` lets (the PrimFunc-level form of ``CommonSubexprElimTIR``).

    Parameters
    ----------
    func : PrimFunc
        The function.

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    if PassContext.current().config.get("tir.disable_cse_tir", False):
        return func
    return func.with_body(_CSE().visit(func.body))


def CommonSubexprElimTIR(enable_cse_tir: bool = True, identify_equiv_terms: bool = False):  # noqa: N802
    """Hoist repeated pure integer subexpressions of each statement into ``cse_var_N`` lets.

    Parameters
    ----------
    enable_cse_tir : bool
        Run the pass (False: the identity).
    identify_equiv_terms : bool
        Accepted for TVM compatibility.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).
    """
    if not enable_cse_tir:
        return func_pass(lambda f: f, "tir.CommonSubexprElimTIR")
    return func_pass(common_subexpr_elim, "tir.CommonSubexprElimTIR")
