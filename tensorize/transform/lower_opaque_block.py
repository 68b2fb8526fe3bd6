"""``LowerOpaqueBlock``: blocks become plain statements.

A ``BlockRealize`` becomes its body with block iterators replaced by their bindings, a non-trivial
predicate becomes an ``IfThenElse``, and each ``alloc_buffer`` becomes ``Allocate`` + ``DeclBuffer``
around the body. Loops (and their annotations, kinds and thread bindings) are kept, but for a loop of one
iteration without annotations or thread binding, which becomes its body with the loop variable replaced by
the loop's start, as TVM's pass does (the tile levels of extent 1 that a schedule leaves behind would
otherwise reach the code generator as loops).
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import StmtExprMutator, substitute
from .lower_init_block import _InitLowerer
from .pass_infra import func_pass


class _BlockLowerer(StmtExprMutator):
    def __init__(self):
        self._unit_loops: dict = {}  # the variable of each enclosing unit loop -> the loop's start

    def visit_var_(self, op):
        return self._unit_loops.get(op, op)

    visit_size_var_ = visit_var_

    def visit_for_(self, op):
        if (isinstance(op.extent, E.IntImm) and op.extent.value == 1 and not op.annotations
                and op.kind != S.ForKind.THREAD_BINDING):
            self._unit_loops[op.loop_var] = self.visit_expr(op.min)
            try:
                return self.visit_stmt(op.body)
            finally:
                del self._unit_loops[op.loop_var]
        return super().visit_for_(op)

    def visit_block_realize_(self, op):
        block = op.block
        if block.init is not None:
            block = _InitLowerer().visit_block_(block)
        body = self.visit_stmt(block.body)
        bindings = {iv.var: self.visit_expr(v) for iv, v in zip(block.iter_vars, op.iter_values)}
        if bindings:
            body = substitute(body, bindings)
        predicate = self.visit_expr(op.predicate)
        if bindings:
            predicate = substitute(predicate, bindings)
        for buf in reversed(block.alloc_buffers):
            body = S.Allocate(buf.data, buf.dtype, buf.shape, True, S.DeclBuffer(buf, body))
        if not (isinstance(predicate, E.IntImm) and predicate.value):
            body = S.IfThenElse(predicate, body)
        return body

    def visit_block_(self, op):  # a bare block (no realize) only happens at a function's root
        body = self.visit_stmt(op.body)
        for buf in reversed(op.alloc_buffers):
            body = S.Allocate(buf.data, buf.dtype, buf.shape, True, S.DeclBuffer(buf, body))
        return body


def lower_opaque_block(func):
    """``func`` without blocks (the PrimFunc-level form of ``LowerOpaqueBlock``).

    Parameters
    ----------
    func : PrimFunc
        The function.

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    return func.with_body(_BlockLowerer().visit(func.body))


def LowerOpaqueBlock():  # noqa: N802 - TVM's pass name
    """Remove blocks: substitute iterators, turn predicates into ``if`` and allocations into ``Allocate``.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).
    """
    return func_pass(lower_opaque_block, "tir.LowerOpaqueBlock")
