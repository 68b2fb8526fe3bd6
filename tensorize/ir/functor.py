"""Visitors and mutators over statements and expressions, and the functional helpers of
``tvm.tir.stmt_functor``: ``post_order_visit``, ``ir_transform``, ``substitute``.

Subclass ``StmtExprVisitor`` / ``StmtExprMutator`` and override ``visit_<node>_`` methods
(``visit_for_``, ``visit_buffer_load_``, ``visit_add_`` ...). Mutators rebuild a node only when
one of its children changed, so untouched subtrees keep their identity.

>>> from tensorize.ir.expr import Var
>>> i = Var("i")
>>> e = substitute(i * 2 + 1, {i: Var("j")})
>>> e.a.a.name
'j'
"""
from __future__ import annotations

import re
from typing import Callable, Iterable, Mapping

from . import expr as E
from . import expr_scalar
from . import stmt as S
from .buffer import Buffer
from .expr import PrimExpr, Range
from .node import Node


def _snake(name: str) -> str:
    special = {"EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge", "IntImm": "int_imm",
               "FloatImm": "float_imm", "StringImm": "string_imm"}
    if name in special:
        return special[name]
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _method_for(cls: type, table: dict) -> str:
    name = table.get(cls)
    if name is None:
        for base in cls.__mro__:
            if base.__module__.endswith(("ir.expr_scalar", "ir.expr_compound", "ir.stmt")) and base not in (E.PrimExpr, S.Stmt, Node, E.BinaryOpExpr, E.CmpOpExpr):
                name = "visit_" + _snake(base.__name__) + "_"
                break
        else:
            raise TypeError(f"no visitor method for node type {cls.__name__}")
        table[cls] = name
    return name


class _NodeDispatch:
    """The dispatch the visitor and the mutator share: a node goes to ``visit_<snake_name>_``
    (looked up once per node class in ``_methods``)."""

    _methods: dict = {}
    _verb = "visit"  # what an error says this functor could not do

    def __call__(self, node):
        return self.visit(node)

    def visit(self, node):
        if isinstance(node, PrimExpr):
            return self.visit_expr(node)
        if isinstance(node, S.Stmt):
            return self.visit_stmt(node)
        raise TypeError(f"cannot {self._verb} {type(node).__name__}")

    def visit_stmt(self, stmt: S.Stmt):
        return getattr(self, _method_for(type(stmt), self._methods))(stmt)

    def visit_expr(self, expr: PrimExpr):
        return getattr(self, _method_for(type(expr), self._methods))(expr)


class StmtExprVisitor(_NodeDispatch):
    """Walks statements and expressions in program order. Override ``visit_<node>_`` and call
    ``super()`` (or ``self.visit_stmt``/``self.visit_expr`` on children) to keep walking."""

    _methods: dict = {}

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


class StmtExprMutator(_NodeDispatch):
    """Rebuilds statements and expressions bottom-up. Override ``visit_<node>_`` to return a
    replacement; the default rebuilds a node only if a child changed."""

    _methods: dict = {}
    _verb = "mutate"

    def _exprs(self, items) -> tuple:
        new = tuple(self.visit_expr(x) for x in items)
        return items if all(a is b for a, b in zip(new, items)) else new

    # -- expressions ----------------------------------------------------------------------
    def visit_var_(self, op):
        return op

    visit_size_var_ = visit_int_imm_ = visit_float_imm_ = visit_string_imm_ = visit_var_

    def visit_cast_(self, op):
        v = self.visit_expr(op.value)
        return op if v is op.value else E.Cast(op.dtype, v)

    def _mutate_binary(self, op):
        a, b = self.visit_expr(op.a), self.visit_expr(op.b)
        if a is op.a and b is op.b:
            return op
        return type(op)(a, b)

    visit_add_ = visit_sub_ = visit_mul_ = visit_div_ = visit_mod_ = _mutate_binary
    visit_floor_div_ = visit_floor_mod_ = visit_min_ = visit_max_ = _mutate_binary
    visit_eq_ = visit_ne_ = visit_lt_ = visit_le_ = visit_gt_ = visit_ge_ = _mutate_binary
    visit_and_ = visit_or_ = _mutate_binary

    def visit_not_(self, op):
        a = self.visit_expr(op.a)
        return op if a is op.a else E.Not(a)

    def visit_select_(self, op):
        c, t, f = self.visit_expr(op.condition), self.visit_expr(op.true_value), self.visit_expr(op.false_value)
        if c is op.condition and t is op.true_value and f is op.false_value:
            return op
        return E.Select(c, t, f)

    def visit_buffer_load_(self, op):
        indices = self._exprs(op.indices)
        pred = None if op.predicate is None else self.visit_expr(op.predicate)
        if indices is op.indices and pred is op.predicate:
            return op
        return E.BufferLoad(op.buffer, indices, pred)

    def visit_producer_load_(self, op):
        indices = self._exprs(op.indices)
        return op if indices is op.indices else E.ProducerLoad(op.producer, indices)

    def visit_ramp_(self, op):
        base, stride = self.visit_expr(op.base), self.visit_expr(op.stride)
        return op if base is op.base and stride is op.stride else E.Ramp(base, stride, op.lanes)

    def visit_broadcast_(self, op):
        v = self.visit_expr(op.value)
        return op if v is op.value else E.Broadcast(v, op.lanes)

    def visit_shuffle_(self, op):
        vectors = self._exprs(op.vectors)
        return op if vectors is op.vectors else E.Shuffle(vectors, op.indices)

    def visit_let_(self, op):
        value, body = self.visit_expr(op.value), self.visit_expr(op.body)
        return op if value is op.value and body is op.body else E.Let(op.var, value, body)

    def visit_call_(self, op):
        args = self._exprs(op.args)
        return op if args is op.args else E.Call(op.dtype, op.op, args)

    def visit_reduce_(self, op):
        source, init = self._exprs(op.source), self._exprs(op.init)
        condition = self.visit_expr(op.condition)
        if source is op.source and init is op.init and condition is op.condition:
            return op
        return E.Reduce(op.combiner, source, op.axis, condition, op.value_index, init)

    # -- statements -----------------------------------------------------------------------
    def visit_buffer_store_(self, op):
        value = self.visit_expr(op.value)
        indices = self._exprs(op.indices)
        pred = None if op.predicate is None else self.visit_expr(op.predicate)
        if value is op.value and indices is op.indices and pred is op.predicate:
            return op
        return S.BufferStore(op.buffer, value, indices, pred)

    def visit_for_(self, op):
        mn, ext, body = self.visit_expr(op.min), self.visit_expr(op.extent), self.visit_stmt(op.body)
        if mn is op.min and ext is op.extent and body is op.body:
            return op
        return op.replace(min=mn, extent=ext, body=body)

    def visit_while_(self, op):
        c, body = self.visit_expr(op.condition), self.visit_stmt(op.body)
        return op if c is op.condition and body is op.body else op.replace(condition=c, body=body)

    def visit_seq_stmt_(self, op):
        seq = tuple(self.visit_stmt(s) for s in op.seq)
        if all(a is b for a, b in zip(seq, op.seq)):
            return op
        return S.SeqStmt.flatten(*seq)

    def visit_if_then_else_(self, op):
        c = self.visit_expr(op.condition)
        t = self.visit_stmt(op.then_case)
        f = None if op.else_case is None else self.visit_stmt(op.else_case)
        if c is op.condition and t is op.then_case and f is op.else_case:
            return op
        return op.replace(condition=c, then_case=t, else_case=f)

    def visit_evaluate_(self, op):
        v = self.visit_expr(op.value)
        return op if v is op.value else S.Evaluate(v)

    def visit_let_stmt_(self, op):
        v, body = self.visit_expr(op.value), self.visit_stmt(op.body)
        return op if v is op.value and body is op.body else op.replace(value=v, body=body)

    def visit_attr_stmt_(self, op):
        node = self.visit_expr(op.node) if isinstance(op.node, PrimExpr) else op.node
        v, body = self.visit_expr(op.value), self.visit_stmt(op.body)
        if node is op.node and v is op.value and body is op.body:
            return op
        return op.replace(node=node, value=v, body=body)

    def visit_assert_stmt_(self, op):
        c, m, body = self.visit_expr(op.condition), self.visit_expr(op.message), self.visit_stmt(op.body)
        if c is op.condition and m is op.message and body is op.body:
            return op
        return op.replace(condition=c, message=m, body=body)

    def visit_allocate_(self, op):
        extents = self._exprs(op.extents)
        c, body = self.visit_expr(op.condition), self.visit_stmt(op.body)
        if extents is op.extents and c is op.condition and body is op.body:
            return op
        return op.replace(extents=extents, condition=c, body=body)

    def visit_decl_buffer_(self, op):
        body = self.visit_stmt(op.body)
        return op if body is op.body else op.replace(body=body)

    def visit_range(self, r: Range) -> Range:
        mn, ext = self.visit_expr(r.min), self.visit_expr(r.extent)
        return r if mn is r.min and ext is r.extent else Range.from_min_extent(mn, ext)

    def visit_buffer_region(self, region: S.BufferRegion) -> S.BufferRegion:
        ranges = tuple(self.visit_range(r) for r in region.region)
        if all(a is b for a, b in zip(ranges, region.region)):
            return region
        return S.BufferRegion(region.buffer, ranges)

    def _regions(self, regions):
        new = tuple(self.visit_buffer_region(r) for r in regions)
        return regions if all(a is b for a, b in zip(new, regions)) else new

    def visit_block_(self, op):
        iter_vars = []
        for iv in op.iter_vars:
            dom = self.visit_range(iv.dom)
            iter_vars.append(iv if dom is iv.dom else iv.replace(dom=dom))
        iter_vars = tuple(iter_vars)
        if all(a is b for a, b in zip(iter_vars, op.iter_vars)):
            iter_vars = op.iter_vars
        reads, writes = self._regions(op.reads), self._regions(op.writes)
        match_buffers = []
        for m in op.match_buffers:
            src = self.visit_buffer_region(m.source)
            match_buffers.append(m if src is m.source else S.MatchBufferRegion(m.buffer, src))
        match_buffers = tuple(match_buffers)
        if all(a is b for a, b in zip(match_buffers, op.match_buffers)):
            match_buffers = op.match_buffers
        init = None if op.init is None else self.visit_stmt(op.init)
        body = self.visit_stmt(op.body)
        if (iter_vars is op.iter_vars and reads is op.reads and writes is op.writes and init is op.init
                and body is op.body and match_buffers is op.match_buffers):
            return op
        return op.replace(iter_vars=iter_vars, reads=reads, writes=writes, init=init, body=body,
                          match_buffers=match_buffers)

    def visit_block_realize_(self, op):
        values = self._exprs(op.iter_values)
        pred = self.visit_expr(op.predicate)
        block = self.visit_stmt(op.block)
        if values is op.iter_values and pred is op.predicate and block is op.block:
            return op
        return S.BlockRealize(values, pred, block)


# Aliases with TVM's names.
ExprVisitor = StmtVisitor = StmtExprVisitor
ExprMutator = StmtMutator = StmtExprMutator


class _PostOrderVisitor(StmtExprVisitor):
    _methods: dict = {}

    def __init__(self, fvisit: Callable):
        self.fvisit = fvisit

    def visit_stmt(self, stmt):
        super().visit_stmt(stmt)
        self.fvisit(stmt)

    def visit_expr(self, expr):
        super().visit_expr(expr)
        self.fvisit(expr)


def post_order_visit(stmt, fvisit: Callable[[Node], None]) -> None:
    """Call ``fvisit`` on every statement and expression under ``stmt``, children first.

    >>> from tensorize.ir.expr import Var
    >>> seen = []
    >>> post_order_visit(Var("x") + 1, lambda n: seen.append(type(n).__name__))
    >>> seen
    ['Var', 'IntImm', 'Add']
    """
    _PostOrderVisitor(fvisit).visit(stmt)


def _type_key_matches(node, keys: frozenset | None) -> bool:
    if keys is None:
        return True
    key = type(node)._type_key
    return key in keys or key.split(".")[-1] in keys


class _IRTransformer(StmtExprMutator):
    _methods: dict = {}

    def __init__(self, preorder, postorder, keys):
        self.preorder, self.postorder, self.keys = preorder, postorder, keys

    def _apply(self, node, visit_children):
        enabled = _type_key_matches(node, self.keys)
        if enabled and self.preorder is not None:
            result = self.preorder(node)
            if result is not None:
                return result
        new = visit_children(node)
        if enabled and self.postorder is not None:
            result = self.postorder(new)
            if result is not None:
                return result
        return new

    def visit_stmt(self, stmt):
        return self._apply(stmt, super().visit_stmt)

    def visit_expr(self, expr):
        return self._apply(expr, super().visit_expr)


def ir_transform(stmt, preorder: Callable | None, postorder: Callable | None, only_enable: Iterable[str] | None = None):
    """Rewrite ``stmt``: for each node whose type key is in ``only_enable`` (``["tir.For"]``; all nodes when
    empty), call ``preorder(node)``: a non-None result replaces the node and skips its children;
    otherwise the children are rewritten and ``postorder(new_node)`` may return a replacement."""
    keys = frozenset(only_enable) if only_enable else None
    return _IRTransformer(preorder, postorder, keys).visit(stmt)


class _Substituter(StmtExprMutator):
    _methods: dict = {}

    def __init__(self, lookup: Callable):
        self.lookup = lookup

    def visit_var_(self, op):
        new = self.lookup(op)
        return op if new is None else E.convert(new)

    visit_size_var_ = visit_var_


def substitute(node, value_map: Mapping | Callable):
    """Replace variables in ``node`` (a statement, an expression, or a list/Range/BufferRegion of them)
    by the expressions ``value_map`` gives (a dict from Var, or a function returning None to keep)."""
    if callable(value_map) and not isinstance(value_map, Mapping):
        lookup = value_map
    else:
        if not value_map:
            return node
        table = {id(k): v for k, v in value_map.items()}
        lookup = lambda v: table.get(id(v))  # noqa: E731
    mutator = _Substituter(lookup)
    if isinstance(node, (list, tuple)):
        return type(node)(substitute_with(mutator, x) for x in node)
    return substitute_with(mutator, node)


def substitute_with(mutator: StmtExprMutator, node):
    if isinstance(node, Range):
        return mutator.visit_range(node)
    if isinstance(node, S.BufferRegion):
        return mutator.visit_buffer_region(node)
    if isinstance(node, (int, float)):
        return node
    return mutator.visit(node)


# Free variables of expression objects, cached per (immutable) object: analyses such as region
# relaxation ask for the variables of every sub-expression, which would otherwise be quadratic.
# Entries keep their expression alive so ``id`` keys stay unique; the table is dropped when large.
_EXPR_VARS: dict[int, tuple] = {}
_EXPR_VARS_LIMIT = 1 << 16
_LEAVES = (E.IntImm, E.FloatImm, E.StringImm)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {E.Not: ("a",), E.Cast: ("value",), E.Broadcast: ("value",),
                                               E.Ramp: ("base", "stride"),
                                               E.Select: ("condition", "true_value", "false_value")}


def _expr_vars(e) -> tuple:
    """The distinct variables of expression ``e`` in first-use order (same order as ``collect_vars``)."""
    hit = _EXPR_VARS.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    t = type(e)
    if t is E.Var or t is E.SizeVar:
        return (e,)
    if t in _LEAVES:
        return ()
    if isinstance(e, E.BinaryOpExpr):
        parts = (_expr_vars(e.a), _expr_vars(e.b))
    elif t in _CHILD_FIELDS:
        parts = tuple(_expr_vars(getattr(e, f)) for f in _CHILD_FIELDS[t])
    elif t is E.BufferLoad:
        parts = tuple(_expr_vars(i) for i in e.indices)
        if e.predicate is not None:
            parts += (_expr_vars(e.predicate),)
    else:
        found: dict[int, E.Var] = {}
        post_order_visit(e, lambda n: isinstance(n, E.Var) and found.setdefault(id(n), n))
        parts = (tuple(found.values()),)
    nonempty = [p for p in parts if p]
    if len(nonempty) <= 1:
        result = nonempty[0] if nonempty else ()
    else:
        merged: dict[int, E.Var] = {}
        for p in nonempty:
            for v in p:
                merged.setdefault(id(v), v)
        result = tuple(merged.values())
    if len(_EXPR_VARS) >= _EXPR_VARS_LIMIT:
        _EXPR_VARS.clear()
    _EXPR_VARS[id(e)] = (e, result)
    return result


def collect_vars(node) -> list:
    """The distinct variables used in ``node``, in first-use order."""
    if isinstance(node, PrimExpr):
        return list(_expr_vars(node))
    seen: dict[int, E.Var] = {}

    def f(n):
        if isinstance(n, E.Var) and id(n) not in seen:
            seen[id(n)] = n

    post_order_visit(node, f)
    return list(seen.values())


def uses_var(node, predicate: Callable[[E.Var], bool]) -> bool:
    """Whether ``node`` uses a variable for which ``predicate`` holds."""
    found = []

    def f(n):
        if not found and isinstance(n, E.Var) and predicate(n):
            found.append(n)

    post_order_visit(node, f)
    return bool(found)


__all__ = ["StmtExprVisitor", "StmtExprMutator", "ExprVisitor", "ExprMutator", "StmtVisitor", "StmtMutator",
           "post_order_visit", "ir_transform", "substitute", "collect_vars", "uses_var", "Buffer"]


# CommReducer (an expression node, below this module) substitutes through this.
expr_scalar.install(substitute=substitute)
