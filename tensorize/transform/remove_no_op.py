"""``RemoveNoOp``: drop statements that do nothing (empty loops, ``if`` with empty branches,
``A[i] = A[i]``, allocations and lets around nothing)."""
from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.expr import IntImm
from ..ir.functor import StmtExprMutator
from .common_subexpr_elim import expr_key
from .pass_infra import func_pass


def is_no_op(stmt) -> bool:
    """Whether ``stmt`` does nothing (None, or evaluating a constant).

    Parameters
    ----------
    stmt : Stmt or None
        The statement.

    Returns
    -------
    bool
        True for a no-op.
    """
    return stmt is None or (isinstance(stmt, S.Evaluate) and isinstance(stmt.value, (IntImm, E.FloatImm)))


_NOP = S.Evaluate(0)


class _NoOpRemover(StmtExprMutator):
    def visit_for_(self, op):
        op = super().visit_for_(op)
        if is_no_op(op.body) or (isinstance(op.extent, IntImm) and op.extent.value <= 0):
            return _NOP
        return op

    def visit_if_then_else_(self, op):
        op = super().visit_if_then_else_(op)
        else_case = None if is_no_op(op.else_case) else op.else_case
        if is_no_op(op.then_case):
            if else_case is None:
                return _NOP
            return S.IfThenElse(E.logical_not(op.condition), else_case)
        return op if else_case is op.else_case else op.replace(else_case=else_case)

    def visit_let_stmt_(self, op):
        op = super().visit_let_stmt_(op)
        return _NOP if is_no_op(op.body) else op

    def visit_allocate_(self, op):
        op = super().visit_allocate_(op)
        return _NOP if is_no_op(op.body) else op

    def visit_decl_buffer_(self, op):
        op = super().visit_decl_buffer_(op)
        return _NOP if is_no_op(op.body) else op

    def visit_attr_stmt_(self, op):
        op = super().visit_attr_stmt_(op)
        return _NOP if is_no_op(op.body) else op

    def visit_buffer_store_(self, op):
        value = op.value
        if (isinstance(value, E.BufferLoad) and value.buffer.data is op.buffer.data and value.predicate is None
                and op.predicate is None
                and [expr_key(i) for i in value.indices] == [expr_key(i) for i in op.indices]):
            return _NOP
        return op

    def visit_seq_stmt_(self, op):
        seq = [self.visit_stmt(s) for s in op.seq]
        return S.SeqStmt.flatten(*[s for s in seq if not is_no_op(s)])


def remove_no_op(func):
    """``func`` without no-op statements (the PrimFunc-level form of ``RemoveNoOp``).

    Parameters
    ----------
    func : PrimFunc
        The function.

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    return func.with_body(_NoOpRemover().visit(func.body))


def RemoveNoOp():  # noqa: N802 - TVM's pass name
    """Remove statements without effect.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).
    """
    return func_pass(remove_no_op, "tir.RemoveNoOp")
