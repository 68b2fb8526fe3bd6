"""``LowerInitBlock``: a reduction block's ``init`` becomes a guarded statement before its update.

For example::

    with T.block("C"): ... with T.init(): C[vi] = 0.0 ; C[vi] += A[vi, vk]
    becomes:           if vk == 0: C[vi] = 0.0     ; C[vi] += A[vi, vk]
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import StmtExprMutator
from ..ir.op import all as all_of
from .pass_infra import func_pass


class _InitLowerer(StmtExprMutator):
    def visit_block_(self, op):
        op = super().visit_block_(op)
        if op.init is None:
            return op
        at_min = [iv.var.equal(iv.dom.min) for iv in op.iter_vars if iv.iter_type == E.IterVar.CommReduce]
        init = S.IfThenElse(all_of(*at_min), op.init) if at_min else op.init
        return op.replace(init=None, body=S.SeqStmt.flatten(init, op.body))


def lower_init_block(func):
    """``func`` with block ``init`` statements turned into guarded statements (the PrimFunc-level form of ``LowerInitBlock``).

    Parameters
    ----------
    func : PrimFunc
        The function.

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    return func.with_body(_InitLowerer().visit(func.body))


def LowerInitBlock():  # noqa: N802 - TVM's pass name
    """Turn each block ``init`` into ``if <all reduce iterators at their min>: init`` before the body.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).
    """
    return func_pass(lower_init_block, "tir.LowerInitBlock")
