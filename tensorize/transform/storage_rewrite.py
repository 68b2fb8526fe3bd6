"""``StorageRewrite`` (scalar promotion): a one-element buffer that is written once, first, and only read
afterwards becomes a ``LetStmt`` register. Other one-element buffers stay ``Allocate`` (LLVM promotes
them to registers itself).

For example::

    x = T.allocate([1]); x[0] = A[i] * 2; B[i] = x[0] + x[0]
    becomes: x_1 = A[i] * 2; B[i] = x_1 + x_1
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.expr import IntImm
from ..ir.functor import StmtExprMutator, post_order_visit
from .pass_infra import PassContext, func_pass


def _uses(stmt, data) -> tuple[int, int, bool]:
    """(stores, loads, escapes) of the buffer behind ``data`` in ``stmt``."""
    stores, loads, other = [0], [0], [0]
    access_vars = set()

    def f(n):
        if isinstance(n, S.BufferStore) and n.buffer.data is data:
            stores[0] += 1
        elif isinstance(n, E.BufferLoad) and n.buffer.data is data:
            loads[0] += 1
        elif isinstance(n, E.Var) and n is data:
            other[0] += 1

    post_order_visit(stmt, f)
    return stores[0], loads[0], other[0] > len(access_vars)


class _ScalarPromoter(StmtExprMutator):
    def visit_allocate_(self, op):
        op = super().visit_allocate_(op)
        if len(op.extents) != 1 or not isinstance(op.extents[0], IntImm) or op.extents[0].value != 1:
            return op
        body = op.body.body if isinstance(op.body, S.DeclBuffer) else op.body
        seq = list(body.seq) if isinstance(body, S.SeqStmt) else [body]
        first = seq[0]
        if not (isinstance(first, S.BufferStore) and first.buffer.data is op.buffer_var and first.predicate is None):
            return op
        rest = S.SeqStmt.flatten(*seq[1:])
        stores, _, escapes = _uses(rest, op.buffer_var)
        first_stores, first_loads, first_escapes = _uses(first.value, op.buffer_var)
        if stores or escapes or first_loads or first_escapes:
            return op
        var = E.Var(op.buffer_var.name, first.value.dtype)

        def replace(n):
            if isinstance(n, E.BufferLoad) and n.buffer.data is op.buffer_var:
                return var
            return None

        from ..ir.functor import ir_transform

        return S.LetStmt(var, first.value, ir_transform(rest, None, replace, ["tir.BufferLoad"]))


def storage_rewrite(func):
    """``func`` with write-once one-element buffers promoted to lets (the PrimFunc-level form of ``StorageRewrite``).

    Parameters
    ----------
    func : PrimFunc
        The function.

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    if PassContext.current().config.get("tir.disable_storage_rewrite", False):
        return func
    return func.with_body(_ScalarPromoter().visit(func.body))


def StorageRewrite():  # noqa: N802 - TVM's pass name
    """Promote write-once one-element buffers to scalar lets.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).
    """
    return func_pass(storage_rewrite, "tir.StorageRewrite")
