"""How ``transform_layout`` fills the padding a layout adds (TVM's ``TransformLayoutPlanner``).

A padding transformation (``lambda i: (i // 4, i % 4)`` on 14 elements gives 4 x 4) leaves elements
that no original index maps to. ``pad_value`` says what they hold, and one of three plans makes it
so, in order of preference:

1. *prologue*: nothing in the function writes the buffer (an input). The caller provides the padding;
   a block of ``T.assume(not padding or A[...] == pad_value)`` placed first records it.
2. *replacement*: a writer visits every original index in row-major order through serial loops
   starting at 0, and its loops contain no other store. Its loops are replaced by a row-major
   traversal of the new shape, and the store writes ``T.if_then_else(padding, pad_value, value)``.
3. *epilogue*: otherwise a block ``buffer_<name>_padding`` placed right after the last writer's loop
   nest writes ``pad_value`` where ``T.where(padding)`` holds.

The plan runs on the original body (stores it replaces already target the new buffer); the caller
then rewrites every remaining access of the old buffer through the index map.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ...arith.analyzer import Analyzer
from ...arith.index_map import IndexMap
from ...arith.linear import affine_lin
from ...ir import expr as E
from ...ir.functor import StmtExprMutator, StmtExprVisitor, collect_vars, post_order_visit, substitute
from ...ir.op import call_intrin, if_then_else
from ...ir.stmt import Block, BlockRealize, BufferRegion, BufferStore, Evaluate, For, ForKind, SeqStmt, Stmt
from ...ir.structural import structural_equal
from ..tree import replace_many

logger = logging.getLogger(__name__)


# -- the padding predicate -------------------------------------------------------------------------
def padding_predicate(inverse: IndexMap, old_shape, new_shape) -> E.PrimExpr | None:
    """The condition, over the new indices ``inverse.initial_indices``, under which an element of the
    new buffer is padding (its original index lies past the old shape); None when there is none.

    For a dimension split in mixed radix (``x = 4 * i + j``, ``j < 4``) the comparison ``14 <= x`` is
    written digit by digit as TVM simplifies it: ``i == 3 and 2 <= j``.

    Parameters
    ----------
    inverse : IndexMap
        New indices to original ones.
    old_shape, new_shape : list of PrimExpr
        The shapes before and after.

    Returns
    -------
    PrimExpr or None
        The predicate.
    """
    extents = {id(v): s for v, s in zip(inverse.initial_indices, new_shape)}
    pred = None
    for x, s in zip(inverse.final_indices, old_shape):
        if not isinstance(s, E.IntImm):
            continue
        lin = affine_lin(x)
        for c in (_below_zero(x, lin), _at_least(x, lin, s.value, extents)):
            if c is None or (isinstance(c, E.IntImm) and not c.value):
                continue
            pred = c if pred is None else E.Or(pred, c)
    return pred


def _below_zero(x, lin):
    """``x < 0`` when ``x`` is an affine form ``lin`` with a negative constant (an index shifted by an
    offset pads before its start), else None."""
    if lin is None or lin.const >= 0:
        return None
    return E.LT(x, E.make_const(x.dtype, 0))


def _at_least(x, lin, bound: int, extents: dict):
    """``bound <= x`` for ``x = sum(coeff * var)`` (its affine form ``lin``, None when it has none); digit
    by digit when the coefficients are a mixed radix of the variables' extents, else the plain
    comparison. False when it never holds."""
    digits = None
    if lin is not None and lin.const == 0:
        terms = sorted(((int(c), v) for v, c in lin.terms.values()), key=lambda t: -t[0])
        if all(isinstance(v, E.Var) and isinstance(extents.get(id(v)), E.IntImm) for _, v in terms):
            radix = [(c, v, extents[id(v)].value) for c, v in terms]
            if all(c == radix[k + 1][0] * radix[k + 1][2] for k, (c, _, _) in enumerate(radix[:-1])) \
                    and radix and radix[-1][0] == 1:
                digits = radix
    if digits is None:
        return E.LE(E.make_const(x.dtype, bound), x)
    total = digits[0][0] * digits[0][2]
    if bound >= total:
        return E.IntImm("bool", 0)
    return _digits_at_least(digits, bound)


def _digits_at_least(digits, bound: int):
    """``bound <= sum(c * v)`` over mixed-radix digits ``(c, v, extent)``, most significant first."""
    coeff, var, extent = digits[0]
    d, rest = divmod(bound, coeff)
    const = lambda k: E.make_const(var.dtype, k)  # noqa: E731
    if len(digits) == 1 or rest == 0:
        return E.LE(const(d), var) if d > 0 else E.IntImm("bool", 1)
    lower = E.And(E.EQ(var, const(d)), _digits_at_least(digits[1:], rest))
    if d == extent - 1:
        return lower
    return E.Or(E.LT(const(d), var), lower)


# -- the pad value -------------------------------------------------------------------------------
def pad_value_map(pad_value, buf, ndim: int, index_dtype: str) -> IndexMap | None:
    """``pad_value`` (a number, an expression, a function of the new indices or an IndexMap) as an
    IndexMap of the new indices to one value; raises ValueError naming the problem when it has
    several outputs, another dtype than ``buf``, or loads another buffer.

    Parameters
    ----------
    pad_value : int, float, PrimExpr, callable or IndexMap
        The value.
    buf : Buffer
        The transformed buffer.
    ndim : int
        The number of new indices.
    index_dtype : str
        The dtype of the new indices.

    Returns
    -------
    IndexMap or None
        The map (None when ``pad_value`` is None).
    """
    if pad_value is None:
        return None
    if isinstance(pad_value, IndexMap):
        pmap = pad_value
    elif callable(pad_value):
        pmap = IndexMap.from_func(pad_value, ndim, index_dtype=index_dtype)
    else:
        value = pad_value
        if isinstance(value, bool) or not isinstance(value, (int, float, E.PrimExpr)):
            raise ValueError(f"pad_value must be a number, an expression or a function of the new indices, "
                             f"got {type(pad_value).__name__}")
        if isinstance(value, int) and buf.dtype.startswith(("int", "uint")):
            value = E.IntImm(buf.dtype, value)
        elif isinstance(value, float) and buf.dtype.startswith(("float", "bfloat")):
            value = E.FloatImm(buf.dtype, value)
        value = E.convert(value)
        pmap = IndexMap([E.Var(f"i{k}", index_dtype) for k in range(ndim)], [value])
    if len(pmap.final_indices) != 1:
        raise ValueError(f"the pad_value map {pmap} has {len(pmap.final_indices)} outputs; give one value")
    value = pmap.final_indices[0]
    if value.dtype != buf.dtype:
        raise ValueError(f"pad_value {value} has dtype {value.dtype} but buffer {buf.name!r} holds {buf.dtype}; "
                         "give a value of the buffer's dtype")
    others = sorted({b.name for b in _loaded_buffers(value) if b is not buf})
    if others:
        raise ValueError(f"pad_value {value} loads from {others}; it may only load from the transformed "
                         f"buffer {buf.name!r}")
    return pmap


def _loaded_buffers(expr) -> list:
    found = []
    post_order_visit(expr, lambda n: found.append(n.buffer) if isinstance(n, E.BufferLoad) else None)
    return found


# -- planning ----------------------------------------------------------------------------------------
@dataclass
class _WriteInfo:
    """One store of the old buffer: the block around it and the loops its indices depend on."""

    store: BufferStore
    realize: BlockRealize | None
    loopnest: list = field(default_factory=list)
    row_major: bool = False


class _WriteCollector(StmtExprVisitor):
    """Finds the stores of ``buf`` and, for each, the range of enclosing loops its indices use."""

    def __init__(self, buf):
        self.buf = buf
        self.writes: list[_WriteInfo] = []
        self.loops: list[For] = []
        self.depth: dict[int, tuple[int, int]] = {}
        self.bindings: dict = {}
        self.realize = None

    def _range(self, *exprs):
        """The (outermost, innermost) depth of the loops ``exprs`` use, or None when they use none."""
        found = [self.depth[id(v)] for e in exprs for v in collect_vars(e) if id(v) in self.depth]
        if not found:
            return None
        return min(f[0] for f in found), max(f[1] for f in found)

    def visit_for_(self, op):
        self.depth[id(op.loop_var)] = (len(self.loops), len(self.loops))
        self.loops.append(op)
        try:
            super().visit_for_(op)
        finally:
            self.loops.pop()
            self.depth.pop(id(op.loop_var), None)

    def visit_let_stmt_(self, op):
        self._bind(op.var, op.value)
        super().visit_let_stmt_(op)

    def _bind(self, var, value):
        rng = self._range(value)
        if rng is not None:
            self.depth[id(var)] = rng
            self.bindings[var] = substitute(value, self.bindings)

    def visit_block_realize_(self, op):
        for iv, value in zip(op.block.iter_vars, op.iter_values):
            self._bind(iv.var, value)
        outer, self.realize = self.realize, op
        try:
            super().visit_block_realize_(op)
        finally:
            self.realize = outer

    def visit_buffer_store_(self, op):
        if op.buffer is not self.buf:
            super().visit_buffer_store_(op)
            return
        rng = self._range(*op.indices)
        info = _WriteInfo(op, self.realize)
        if rng is not None:
            info.loopnest = self.loops[rng[0]:rng[1] + 1]
        info.row_major = self._row_major(info)
        self.writes.append(info)

    def _row_major(self, info: _WriteInfo) -> bool:
        nest, indices, shape = info.loopnest, info.store.indices, self.buf.shape
        if not nest or len(nest) != len(shape) or len(nest) != len(indices):
            return False
        for loop, index, dim in zip(nest, indices, shape):
            index = substitute(index, self.bindings)
            if not (index is loop.loop_var and _is_zero(loop.min) and structural_equal(loop.extent, dim)
                    and loop.kind == ForKind.SERIAL):
                return False
        return True


def _is_zero(x) -> bool:
    return isinstance(x, E.IntImm) and x.value == 0


class _StoreReplacer(StmtExprMutator):
    """Rewrites the loop body of a row-major writer: its stores write the new buffer at the new
    indices, ``if_then_else(padding, pad_value, value)``; its block iterates the new shape."""

    def __init__(self, info: _WriteInfo, new_buf, inverse: IndexMap, pred, pad_map: IndexMap):
        self.info, self.new_buf, self.pad_map = info, new_buf, pad_map
        self.new_indices = list(inverse.initial_indices)
        self.pred = pred
        self.all_replaced = True
        self.remap = {id(loop.loop_var): f for loop, f in zip(info.loopnest, inverse.final_indices)}
        self.new_iter_vars = self.new_iter_values = None
        self._block_updates(inverse)

    def _block_updates(self, inverse: IndexMap) -> None:
        """When the store's indices are consecutive spatial iterators of its block, the block gets new
        iterators ``v_<index>`` over the new shape in their place."""
        realize = self.info.realize
        if realize is None:
            return
        ivs, old = realize.block.iter_vars, self.info.store.indices
        if not old or len(ivs) < len(old):
            return
        start = next((k for k in range(len(ivs) - len(old) + 1) if old[0] is ivs[k].var), None)
        if start is None or any(old[k] is not ivs[start + k].var or ivs[start + k].iter_type != E.IterVar.DataPar
                                for k in range(len(old))):
            return
        new_ivs, virtual = _new_iterators(inverse, self.new_buf)
        self.new_iter_vars = tuple(ivs[:start]) + tuple(new_ivs) + tuple(ivs[start + len(old):])
        self.new_iter_values = (tuple(realize.iter_values[:start]) + tuple(inverse.initial_indices)
                                + tuple(realize.iter_values[start + len(old):]))
        to_virtual = dict(zip(inverse.initial_indices, virtual))
        for var, f in zip(old, inverse.final_indices):
            self.remap[id(var)] = substitute(f, to_virtual)
        self.pred = substitute(self.pred, to_virtual)
        self.new_indices = virtual

    def visit_var_(self, op):
        return self.remap.get(id(op), op)

    def visit_buffer_store_(self, op):
        old = self.info.store
        if op.buffer is old.buffer and len(op.indices) == len(old.indices) and \
                all(structural_equal(a, b, map_free_vars=False) for a, b in zip(op.indices, old.indices)):
            pad = self.pad_map.map_indices(self.new_indices, Analyzer())[0]
            value = self.visit_expr(op.value)
            return BufferStore(self.new_buf, if_then_else(self.pred, pad, value), self.new_indices)
        self.all_replaced = False
        return super().visit_buffer_store_(op)

    def visit_block_realize_(self, op):
        new = super().visit_block_realize_(op)
        if op is self.info.realize and self.new_iter_vars is not None:
            block = new.block.replace(iter_vars=self.new_iter_vars)
            new = BlockRealize(self.new_iter_values, new.predicate, block)
        return new


def _loop_nest(loop_vars, extents, body: Stmt) -> Stmt:
    for var, ext in reversed(list(zip(loop_vars, extents))):
        body = For(var, E.make_const(var.dtype, 0), ext, body=body)
    return body


def _new_iterators(inverse: IndexMap, new_buf):
    """Block iterators ``v_<name>`` over the new shape, bound to the loops ``inverse.initial_indices``."""
    ivars = [E.IterVar(E.Range.from_min_extent(E.make_const(dim.dtype, 0), dim), E.Var(f"v_{v.name}", v.dtype),
                       E.IterVar.DataPar) for v, dim in zip(inverse.initial_indices, new_buf.shape)]
    return ivars, [iv.var for iv in ivars]


def _prologue(new_buf, inverse: IndexMap, pred, pad_map: IndexMap, name: str) -> Stmt:
    """Loops over the new shape with a block assuming ``not padding or buf[...] == pad_value``."""
    ivars, vs = _new_iterators(inverse, new_buf)
    to_block = dict(zip(inverse.initial_indices, vs))
    pad = pad_map.map_indices(vs, Analyzer())[0]
    cond = E.Or(E.Not(substitute(pred, to_block)), E.EQ(E.BufferLoad(new_buf, vs), pad))
    body = Evaluate(call_intrin("bool", "tir.assume", cond))
    block = Block(ivars, [BufferRegion.from_point(new_buf, vs)], [], name, body)
    realize = BlockRealize(list(inverse.initial_indices), E.IntImm("bool", 1), block)
    return _loop_nest(inverse.initial_indices, new_buf.shape, realize)


def _epilogue(new_buf, inverse: IndexMap, pred, pad_map: IndexMap, name: str) -> Stmt:
    """Loops over the new shape with a block writing ``pad_value`` where ``T.where(padding)``."""
    ivars, vs = _new_iterators(inverse, new_buf)
    pad = pad_map.map_indices(vs, Analyzer())[0]
    block = Block(ivars, [], [BufferRegion.from_point(new_buf, vs)], name, BufferStore(new_buf, pad, vs))
    realize = BlockRealize(list(inverse.initial_indices), pred, block)
    return _loop_nest(inverse.initial_indices, new_buf.shape, realize)


def apply_padding_plan(body: Stmt, old_buf, new_buf, inverse: IndexMap, pred, pad_map: IndexMap,
                       block_name) -> tuple[Stmt, Stmt | None]:
    """``body`` with the padding filled by the best plan, and the prologue (to place first in the
    buffer's scope) when the plan is one.

    Parameters
    ----------
    body : Stmt
        The function body (or the buffer's scope).
    old_buf, new_buf : Buffer
        The buffer before and after.
    inverse : IndexMap
        New indices to original ones.
    pred : PrimExpr
        The padding predicate over ``inverse.initial_indices``.
    pad_map : IndexMap
        The pad value.
    block_name : callable
        A unique block name from a wanted one.

    Returns
    -------
    tuple of (Stmt, Stmt or None)
        The body and the prologue.
    """
    collector = _WriteCollector(old_buf)
    collector.visit(body)
    writes = collector.writes
    if not writes:
        logger.debug("transform_layout: %s is an input; assuming its padding holds the pad value", new_buf.name)
        return body, _prologue(new_buf, inverse, pred, pad_map, block_name(f"buffer_{new_buf.name}_assumptions"))
    replacements = {}
    for info in writes:
        if not info.row_major:
            continue
        replacer = _StoreReplacer(info, new_buf, inverse, pred, pad_map)
        inner = replacer.visit(info.loopnest[-1].body)
        if replacer.all_replaced:
            replacements[id(info.loopnest[0])] = _loop_nest(inverse.initial_indices, new_buf.shape, inner)
    if replacements:
        return replace_many(body, replacements), None
    last = writes[-1]
    anchor = last.loopnest[0] if last.loopnest else last.realize
    if anchor is None:
        raise ValueError(f"the store {last.store} of {old_buf.name!r} lies outside any block or loop")
    extra = _epilogue(new_buf, inverse, pred, pad_map, block_name(f"buffer_{new_buf.name}_padding"))
    return replace_many(body, {id(anchor): SeqStmt.flatten(anchor, extra)}), None
