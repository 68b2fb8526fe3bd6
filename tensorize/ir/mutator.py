"""``StmtExprMutator``: rebuilds statements and expressions bottom-up; a node is rebuilt only when
one of its children changed, so untouched subtrees keep their identity. Override
``visit_<snake_name>_`` methods as with the visitor (``visitor.py``).
"""
from __future__ import annotations

from . import expr as E
from . import stmt as S
from .expr import PrimExpr, Range
from .visitor import _NodeDispatch


class StmtExprMutator(_NodeDispatch):
    """Rebuilds statements and expressions bottom-up. Override ``visit_<node>_`` to return a
    replacement; the default rebuilds a node only if a child changed."""

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
