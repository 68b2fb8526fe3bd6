"""``Simplify``: simplify every expression under what is known about the enclosing loops.

Uses ``tensorize.arith.Analyzer`` (loop variables are bound to their ranges, so ``(i * 4 + j) // 4``
with ``j < 4`` becomes ``i``). Constant conditions are resolved: ``if True`` keeps its then-branch,
``if False`` its else-branch.
"""
from __future__ import annotations

import logging

from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.expr import IntImm, Range
from ..ir.functor import StmtExprMutator
from ..arith.linear import simplify_linear
from .expr_shapes import ExprShapes
from .pass_infra import func_pass

logger = logging.getLogger(__name__)


def _make_analyzer():
    try:
        from ..arith import Analyzer
    except ImportError:  # the analyzer package is optional at this layer
        logger.debug("tensorize.arith is unavailable; Simplify only folds linear index arithmetic")
        return None
    return Analyzer()


class _Simplifier(StmtExprMutator):
    def __init__(self):
        self.analyzer = _make_analyzer()
        self.shapes = ExprShapes()
        self.cache: dict[int, E.PrimExpr] = {}  # shape id -> simplified expression
        self.bound: set = set()

    def simplify(self, e):
        if self.analyzer is not None:
            try:
                return self.analyzer.simplify(e)
            except (NotImplementedError, TypeError, ValueError) as err:
                logger.debug("analyzer could not simplify %r: %s", type(e).__name__, err)
                return e
        if dt.is_int(e.dtype) and dt.lanes_of(e.dtype) == 1:
            return simplify_linear(e)
        return e

    def visit_expr(self, e):
        if isinstance(e, (E.Var, E.IntImm, E.FloatImm, E.StringImm)):
            return e
        if isinstance(e, E.BufferLoad):
            indices = tuple(self.visit_expr(i) for i in e.indices)
            return e if all(a is b for a, b in zip(indices, e.indices)) else E.BufferLoad(e.buffer, indices, e.predicate)
        if isinstance(e, E.Ramp):
            base = self.visit_expr(e.base)
            return e if base is e.base else E.Ramp(base, e.stride, e.lanes)
        if isinstance(e, E.Broadcast):
            value = self.visit_expr(e.value)
            return e if value is e.value else E.Broadcast(value, e.lanes)
        if dt.lanes_of(e.dtype) > 1 or dt.is_float(e.dtype) or isinstance(e, E.Call):
            return super().visit_expr(e)
        shape_id = self.shapes.info(e)[0]
        if shape_id is None:  # reads memory or calls: simplify the parts
            return self.simplify(super().visit_expr(e))
        # Unrolled code repeats the same index arithmetic many times: simplify each distinct
        # expression once (the result only depends on the loop ranges, fixed while it is cached).
        new = self.cache.get(shape_id)
        if new is None:
            new = self.cache[shape_id] = self.simplify(super().visit_expr(e))
        return new

    def visit_for_(self, op):
        if self.analyzer is not None and isinstance(op.loop_var, E.Var):
            if op.loop_var in self.bound:  # a range changes: cached results may no longer hold
                self.cache.clear()
            self.bound.add(op.loop_var)
            self.analyzer.bind(op.loop_var, Range.from_min_extent(op.min, op.extent), allow_override=True)
        return super().visit_for_(op)

    def visit_let_stmt_(self, op):
        return super().visit_let_stmt_(op)

    def visit_if_then_else_(self, op):
        op = super().visit_if_then_else_(op)
        if isinstance(op.condition, IntImm):
            if op.condition.value:
                return op.then_case
            return op.else_case if op.else_case is not None else S.Evaluate(0)
        return op


def simplify_func(func):
    """``func`` with its expressions simplified (the PrimFunc-level form of ``Simplify``).

    Parameters
    ----------
    func : PrimFunc
        The function.

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    return func.with_body(_Simplifier().visit(func.body))


def Simplify():  # noqa: N802 - TVM's pass name
    """Simplify index arithmetic and conditions (``tvm.tir.transform.Simplify``).

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).

    Examples
    --------
    >>> mod = tvm.tir.transform.Simplify()(tvm.IRModule({"main": matmul()}))
    >>> mod.function_names()
    ['main']
    """
    return func_pass(simplify_func, "tir.Simplify")
