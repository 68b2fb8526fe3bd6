"""``StmtExprVisitor``: walks statements and expressions in program order, dispatching each node to
``visit_<snake_name>_`` (``visit_for_``, ``visit_buffer_load_``, ``visit_add_`` ...). The dispatch is
shared with the mutator (``mutator.py``); the helpers built on both are in ``functor.py``.
"""
from __future__ import annotations

import re
from functools import lru_cache

from . import expr as E
from . import stmt as S
from .expr import PrimExpr
from .node import Node


def _snake(name: str) -> str:
    special = {"EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge", "IntImm": "int_imm",
               "FloatImm": "float_imm", "StringImm": "string_imm"}
    if name in special:
        return special[name]
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@lru_cache(maxsize=None)
def _method_for(cls: type) -> str:
    """The ``visit_<snake_name>_`` method name for a node class (the same for every functor)."""
    for base in cls.__mro__:
        if (base.__module__.endswith(("ir.expr_scalar", "ir.expr_compound", "ir.stmt"))
                and base not in (E.PrimExpr, S.Stmt, Node, E.BinaryOpExpr, E.CmpOpExpr)):
            return "visit_" + _snake(base.__name__) + "_"
    raise TypeError(f"no visitor method for node type {cls.__name__}")


class _NodeDispatch:
    """The dispatch the visitor and the mutator share: a node goes to ``visit_<snake_name>_``
    (looked up once per functor class and node class, in ``_functions``)."""

    _verb = "visit"  # what an error says this functor could not do
    _functions: dict = {}  # node class -> the (unbound) method of this functor class; one dict per class

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._functions = {}

    def __call__(self, node):
        return self.visit(node)

    def visit(self, node):
        if isinstance(node, PrimExpr):
            return self.visit_expr(node)
        if isinstance(node, S.Stmt):
            return self.visit_stmt(node)
        raise TypeError(f"cannot {self._verb} {type(node).__name__}")

    def _function(self, node_cls: type):
        """The method of this functor's class for ``node_cls`` (found once per pair: the functors run in the
        search's inner loop)."""
        fn = getattr(type(self), _method_for(node_cls))
        type(self)._functions[node_cls] = fn
        return fn

    def visit_stmt(self, stmt: S.Stmt):
        fn = self._functions.get(type(stmt))
        return (fn or self._function(type(stmt)))(self, stmt)

    def visit_expr(self, expr: PrimExpr):
        fn = self._functions.get(type(expr))
        return (fn or self._function(type(expr)))(self, expr)


class StmtExprVisitor(_NodeDispatch):
    """Walks statements and expressions in program order. Override ``visit_<node>_`` and call
    ``super()`` (or ``self.visit_stmt``/``self.visit_expr`` on children) to keep walking."""

    # -- expressions ----------------------------------------------------------------------
    def visit_var_(self, op):
        pass

    visit_size_var_ = visit_var_

    def visit_int_imm_(self, op):
        pass

    visit_float_imm_ = visit_string_imm_ = visit_int_imm_

    def visit_cast_(self, op):
        self.visit_expr(op.value)

    def _visit_binary(self, op):
        self.visit_expr(op.a)
        self.visit_expr(op.b)

    visit_add_ = visit_sub_ = visit_mul_ = visit_div_ = visit_mod_ = _visit_binary
    visit_floor_div_ = visit_floor_mod_ = visit_min_ = visit_max_ = _visit_binary
    visit_eq_ = visit_ne_ = visit_lt_ = visit_le_ = visit_gt_ = visit_ge_ = _visit_binary
    visit_and_ = visit_or_ = _visit_binary

    def visit_not_(self, op):
        self.visit_expr(op.a)

    def visit_select_(self, op):
        self.visit_expr(op.condition)
        self.visit_expr(op.true_value)
        self.visit_expr(op.false_value)

    def visit_buffer_load_(self, op):
        for i in op.indices:
            self.visit_expr(i)
        if op.predicate is not None:
            self.visit_expr(op.predicate)

    def visit_producer_load_(self, op):
        for i in op.indices:
            self.visit_expr(i)

    def visit_ramp_(self, op):
        self.visit_expr(op.base)
        self.visit_expr(op.stride)

    def visit_broadcast_(self, op):
        self.visit_expr(op.value)

    def visit_shuffle_(self, op):
        for v in op.vectors:
            self.visit_expr(v)

    def visit_let_(self, op):
        self.visit_expr(op.value)
        self.visit_expr(op.body)

    def visit_call_(self, op):
        for a in op.args:
            self.visit_expr(a)

    def visit_reduce_(self, op):
        for s in op.source:
            self.visit_expr(s)
        for i in op.init:
            self.visit_expr(i)
        self.visit_expr(op.condition)

    # -- statements -----------------------------------------------------------------------
    def visit_buffer_store_(self, op):
        self.visit_expr(op.value)
        for i in op.indices:
            self.visit_expr(i)
        if op.predicate is not None:
            self.visit_expr(op.predicate)

    def visit_for_(self, op):
        self.visit_expr(op.min)
        self.visit_expr(op.extent)
        self.visit_stmt(op.body)

    def visit_while_(self, op):
        self.visit_expr(op.condition)
        self.visit_stmt(op.body)

    def visit_seq_stmt_(self, op):
        for s in op.seq:
            self.visit_stmt(s)

    def visit_if_then_else_(self, op):
        self.visit_expr(op.condition)
        self.visit_stmt(op.then_case)
        if op.else_case is not None:
            self.visit_stmt(op.else_case)

    def visit_evaluate_(self, op):
        self.visit_expr(op.value)

    def visit_let_stmt_(self, op):
        self.visit_expr(op.value)
        self.visit_stmt(op.body)

    def visit_attr_stmt_(self, op):
        if isinstance(op.node, PrimExpr):
            self.visit_expr(op.node)
        self.visit_expr(op.value)
        self.visit_stmt(op.body)

    def visit_assert_stmt_(self, op):
        self.visit_expr(op.condition)
        self.visit_expr(op.message)
        self.visit_stmt(op.body)

    def visit_allocate_(self, op):
        for e in op.extents:
            self.visit_expr(e)
        self.visit_expr(op.condition)
        self.visit_stmt(op.body)

    def visit_decl_buffer_(self, op):
        self.visit_stmt(op.body)

    def visit_buffer_region(self, region: S.BufferRegion):
        for r in region.region:
            self.visit_expr(r.min)
            self.visit_expr(r.extent)

    def visit_block_(self, op):
        for iv in op.iter_vars:
            self.visit_expr(iv.dom.min)
            self.visit_expr(iv.dom.extent)
        for r in op.reads:
            self.visit_buffer_region(r)
        for r in op.writes:
            self.visit_buffer_region(r)
        for m in op.match_buffers:
            self.visit_buffer_region(m.source)
        if op.init is not None:
            self.visit_stmt(op.init)
        self.visit_stmt(op.body)

    def visit_block_realize_(self, op):
        for v in op.iter_values:
            self.visit_expr(v)
        self.visit_expr(op.predicate)
        self.visit_stmt(op.block)
