"""Schedule primitives: transform_layout, transform_block_layout, pad_einsum.

``transform_layout`` rewrites one buffer to a new layout given by an ``IndexMap`` (or a lambda):
its shape, every access in every block, the regions, and the function signature when the buffer
is a parameter. ``transform_block_layout`` remaps a block's iteration space the same way.
"""
from __future__ import annotations

import logging

from ...ir import expr as E
from ...ir.functor import StmtExprMutator, collect_vars, post_order_visit, substitute
from ...arith.index_map import IndexMap
from ...ir.stmt import BlockRealize, BufferRegion, BufferStore, For, SeqStmt, Stmt
from ..base import ScheduleBase, primitive
from ...arith.iter_map import iter_map_simplify
from ...arith.loop_relax import make_analyzer, relax_expr
from ..surgery import removal_target
from ..rv import BlockRV
from ..trace import register_codec
from .cache import _parse_buffer_arg, unique_block_name
from .layout_padding import apply_padding_plan, pad_value_map, padding_predicate
from .layout_inverse import padded_inverse
from .pad_einsum import PadEinsum

logger = logging.getLogger(__name__)

register_codec("IndexMap", IndexMap, IndexMap.to_json, IndexMap.from_json)


def _as_index_map(index_map, ndim: int, index_dtype: str = "int32") -> IndexMap:
    if isinstance(index_map, IndexMap):
        return index_map
    if callable(index_map):
        return IndexMap.from_func(index_map, ndim, index_dtype=index_dtype)
    raise TypeError(f"index_map must be an IndexMap or a function of the indices, got {type(index_map).__name__}")


class _IterContextMutator(StmtExprMutator):
    """A mutator that knows the loops and block iterators around the node it visits (TVM's
    ``IRMutatorWithAnalyzer``), to simplify indices through their iterator map in that context."""

    def __init__(self, iters: dict | None = None):
        self.iters: dict = dict(iters or {})

    def visit_for_(self, op):
        self.iters[op.loop_var] = E.Range.from_min_extent(op.min, op.extent)
        try:
            return super().visit_for_(op)
        finally:
            self.iters.pop(op.loop_var, None)

    def visit_block_(self, op):
        for iv in op.iter_vars:
            self.iters[iv.var] = iv.dom
        try:
            return super().visit_block_(op)
        finally:
            for iv in op.iter_vars:
                self.iters.pop(iv.var, None)

    def simplify_indices(self, indices) -> tuple:
        """``indices`` through ``iter_map_simplify`` in the current context; an index that becomes a
        constant only because its variable has extent 1 stays the variable (TVM's
        ``IterMapSimplifyWithContext(..., non_trivial_only=True)``)."""
        if not indices:
            return tuple(indices)
        simplified = iter_map_simplify(list(indices), dict(self.iters))
        return tuple(old if (isinstance(new, E.IntImm) and isinstance(old, E.Var)) or _size(new) >= _size(old)
                     else new for old, new in zip(indices, simplified))


class _LayoutRewriter(_IterContextMutator):
    """Rewrites every access of one buffer through an index map; the mapped indices are simplified
    through their iterator map in the context of the enclosing loops and blocks (as TVM)."""

    def __init__(self, old, new, index_map: IndexMap, ana):
        super().__init__()
        self.old, self.new, self.map, self.ana = old, new, index_map, ana

    def _map(self, indices) -> tuple:
        return self.simplify_indices(self.map.map_indices(indices, self.ana))

    def visit_buffer_load_(self, op):
        op = super().visit_buffer_load_(op)
        if op.buffer is not self.old:
            return op
        return E.BufferLoad(self.new, self._map(op.indices), op.predicate)

    def visit_buffer_store_(self, op):
        op = super().visit_buffer_store_(op)
        if op.buffer is not self.old:
            return op
        return BufferStore(self.new, op.value, self._map(op.indices), op.predicate)

    def visit_buffer_region(self, region):
        region = super().visit_buffer_region(region)
        if region.buffer is not self.old:
            return region
        if all(isinstance(r.extent, E.IntImm) and r.extent.value == 1 for r in region.region):
            return BufferRegion.from_point(self.new, self._map([r.min for r in region.region]))
        # A box: relax the mapped indices over it.
        temps = [E.Var(f"t{k}", r.min.dtype) for k, r in enumerate(region.region)]
        dom = {id(t): (t, E.Range.from_min_extent(0, r.extent)) for t, r in zip(temps, region.region)}
        mapped = self.map.map_indices([E.add(r.min, t) for r, t in zip(region.region, temps)], self.ana)
        ranges = []
        for axis, m in enumerate(mapped):
            b = relax_expr(m, dom, self.ana)
            if b is None:
                ranges.append(E.Range.from_min_extent(0, self.new.shape[axis]))
            else:
                ranges.append(E.Range.from_min_extent(b[0], self.ana.simplify(E.add(E.sub(b[1], b[0]), 1))))
        return BufferRegion(self.new, ranges)

    def visit_block_(self, op):
        op = super().visit_block_(op)
        allocs = tuple(self.new if b is self.old else b for b in op.alloc_buffers)
        if any(a is not b for a, b in zip(allocs, op.alloc_buffers)):
            op = op.replace(alloc_buffers=allocs)
        return op


class Layout(PadEinsum, ScheduleBase):
    """transform_layout, transform_block_layout, pad_einsum (in pad_einsum.py)."""

    def transform_layout(self, block: BlockRV, buffer, index_map, pad_value=None,
                         assume_injective_transform: bool = False) -> None:
        """Change the layout of ``buffer`` (``("read", i)``, ``("write", i)``, a Buffer or its name, as
        accessed by ``block``) to ``index_map``: its shape becomes ``index_map.map_shape(shape)`` and
        every access ``A[i, j]`` becomes ``A[*index_map(i, j)]`` in every block of the function. A
        parameter buffer changes the function's signature.

        Parameters
        ----------
        block : BlockRV
            A block that accesses the buffer.
        buffer : tuple of (str, int), Buffer or str
            The buffer: ``("read", i)``, ``("write", i)``, the Buffer or its name.
        index_map : IndexMap or callable
            The new layout, e.g. ``lambda i, j: (i // 4, j, i % 4)``.
        pad_value : PrimExpr, int, float or callable, optional
            The value of the padding, when ``index_map`` pads the buffer.
        assume_injective_transform : bool
            Skip the check that ``index_map`` is injective.

        Before::

            for i, j, k in T.grid(64, 64, 64):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]

        ``sch.transform_layout(sch.get_block("C"), ("read", 1), lambda n, k: (n // 16, k // 4, n % 16, k % 4))``::

            def main(A: T.Buffer((64, 64), "float32"), B: T.Buffer((4, 16, 16, 4), "float32"), ...):
                ...
                        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj // 16, vk // 4, vj % 16, vk % 4]

        A transformation that pads (the new shape holds more elements than the old one, e.g.
        ``lambda i: (i // 16, i % 16)`` on 30 elements gives 2 x 16) needs ``pad_value``: a number of the
        buffer's dtype, or a function of the new indices that loads no other buffer (or pass
        ``assume_injective_transform=True`` to leave the padding unwritten). As TVM, the padding is
        filled by the first plan that applies (``layout_padding.py``): a writer that visits every
        index in row-major order, with no other store in its loops, is rewritten to traverse the new
        shape and write ``T.if_then_else(padding, pad_value, value)``::

            for i0, i1 in T.grid(2, 16):
                with T.block("B"):
                    v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                    B[v_i0, v_i1] = T.if_then_else(v_i0 == 1 and 14 <= v_i1, T.float32(0),
                                                   A[v_i0 * 16 + v_i1] * T.float32(2))

        other writers get a block ``buffer_B_padding`` right after the last one, writing the pad value
        under ``T.where(padding)``; for a buffer nothing writes (an input) the caller provides the
        padding, and a first block assumes (``T.assume``) that it holds the pad value.

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul())
        >>> sch.transform_layout(sch.get_block("C"), ("read", 0), lambda i, k: (k, i))
        >>> sch.get(sch.get_block("C")).reads[0].buffer.name
        'A'
        """
        if not isinstance(index_map, IndexMap):  # the trace records the IndexMap, not the lambda
            func_name, tree, realize = self._block(block)
            try:
                buf, _kind = _parse_buffer_arg(realize.block, buffer)
            except (IndexError, LookupError) as err:
                raise self._error(f"transform_layout: {err}", realize) from None
            try:
                index_map = _as_index_map(index_map, len(buf.shape), buf.shape[0].dtype if buf.shape else "int32")
            except ValueError as err:  # e.g. a function of 2 indices for a 4-d buffer
                raise self._error(f"transform_layout: {err} ({buf.name!r})", realize) from None
        self._check_pad_dtype(block, buffer, pad_value)
        if callable(pad_value) and not isinstance(pad_value, IndexMap):
            pad_value = IndexMap.from_func(pad_value, len(index_map.final_indices),
                                           index_dtype=_index_dtype(self._block(block)[2].block))
        elif isinstance(pad_value, (E.IntImm, E.FloatImm)):
            pad_value = pad_value.value
        return self._transform_layout(block, buffer, index_map, pad_value, assume_injective_transform)

    def _check_pad_dtype(self, block, buffer, pad_value) -> None:
        """As TVM: a constant pad value has the buffer's dtype (an int for an int buffer, ...)."""
        if pad_value is None or callable(pad_value) or isinstance(pad_value, IndexMap):
            return
        realize = self._block(block)[2]
        try:
            buf, _kind = _parse_buffer_arg(realize.block, buffer)
        except (IndexError, LookupError):
            return  # reported by the primitive itself
        is_float = buf.dtype.startswith(("float", "bfloat"))
        if isinstance(pad_value, (E.IntImm, E.FloatImm)):
            ok = pad_value.dtype == buf.dtype
        elif isinstance(pad_value, bool) or not isinstance(pad_value, (int, float)):
            ok = True  # an expression: checked when the padding is built
        else:
            ok = is_float if isinstance(pad_value, float) else not is_float
        if not ok:
            got = pad_value.dtype if isinstance(pad_value, (E.IntImm, E.FloatImm)) else type(pad_value).__name__
            raise self._error(f"transform_layout: pad_value {pad_value!r} ({got}) does not match the dtype "
                              f"{buf.dtype} of buffer {buf.name!r}; give a value of that dtype", realize)

    def _transform_layout_impl(self, block: BlockRV, buffer, index_map, pad_value=None,
                               assume_injective_transform: bool = False) -> None:
        func_name, tree, realize = self._block(block)
        try:
            buf, _kind = _parse_buffer_arg(realize.block, buffer)
        except (IndexError, LookupError) as err:
            raise self._error(f"transform_layout: {err}", realize) from None
        try:
            imap = _as_index_map(index_map, len(buf.shape))
            if len(imap.initial_indices) != len(buf.shape):
                raise ValueError(f"the index map takes {len(imap.initial_indices)} indices but {buf.name!r} has "
                                 f"{len(buf.shape)} dimensions")
            new_shape = imap.map_shape(buf.shape)
        except ValueError as err:
            raise self._error(f"transform_layout: {err}", realize) from None
        old_n, new_n = _numel(buf.shape), _numel(new_shape)
        pads = old_n is not None and new_n is not None and new_n != old_n and not assume_injective_transform
        if pads:
            if pad_value is None:
                raise self._error(f"transform_layout: mapping {buf.name!r} of shape {[int(s) for s in buf.shape]} "
                                  f"through {imap} gives shape {[int(s) for s in new_shape]}, which adds "
                                  f"{new_n - old_n} padding elements; pass pad_value= to allow padding", realize)
            try:
                inverse = padded_inverse(imap, buf.shape)
                pad_map = pad_value_map(pad_value, buf, len(new_shape), _index_dtype(realize.block))
            except ValueError as err:
                raise self._error(f"transform_layout: {err}", realize) from None
        elif new_n is not None and old_n is not None and not assume_injective_transform and \
                imap._iter_map(buf.shape) is None:
            raise self._error(f"transform_layout: index map {imap} is not a bijection on the shape of {buf.name!r}; "
                              "two elements would share a location", realize)
        new_buf = buf.replace(shape=tuple(new_shape), strides=())
        func = self._func(func_name)
        body, first = func.body, None
        if pads:
            pred = padding_predicate(inverse, buf.shape, new_shape)
            if pred is not None:
                try:
                    body, first = apply_padding_plan(body, buf, new_buf, inverse, pred, pad_map,
                                                     lambda name: unique_block_name(tree, name))
                except ValueError as err:
                    raise self._error(f"transform_layout: {err}", realize) from None
        body = _LayoutRewriter(buf, new_buf, imap, make_analyzer({})).visit(body)
        if first is not None:
            body = _prepend_in_scope(body, new_buf, first)
        buffer_map = {p: (new_buf if b is buf else b) for p, b in func.buffer_map.items()}
        new_func = func.replace(body=body, buffer_map=buffer_map)
        self._set_func(func_name, new_func)

    def transform_block_layout(self, block: BlockRV, index_map) -> None:
        """Remap the iteration space of ``block`` through ``index_map`` (a bijection of its iterators):
        the block gets one iterator per final index, bound to new loops ``ax0, ax1, ...`` that replace
        the loops that wrapped it.

        Parameters
        ----------
        block : BlockRV
            The block to remap.
        index_map : IndexMap or callable
            A bijection of the block's iterators.

        Before::

            for i, j in T.grid(16, 16):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2)

        ``sch.transform_block_layout(sch.get_block("B"), lambda i, j: (i * 16 + j,))``::

            for ax0 in range(256):
                with T.block("B"):
                    v0 = T.axis.spatial(256, ax0)
                    B[v0 // 16, v0 % 16] = A[v0 // 16, v0 % 16] * T.float32(2)
        """
        if not isinstance(index_map, IndexMap):  # the trace records the IndexMap, not the lambda
            ivs = self._block(block)[2].block.iter_vars
            index_map = _as_index_map(index_map, len(ivs), ivs[0].var.dtype if ivs else "int32")
        return self._transform_block_layout(block, index_map)

    def _transform_block_layout_impl(self, block: BlockRV, index_map) -> None:
        func_name, tree, realize = self._block(block)
        blk = realize.block
        loops = tree.loops_of(realize)
        try:
            imap = _as_index_map(index_map, len(blk.iter_vars))
            if len(imap.initial_indices) != len(blk.iter_vars):
                raise ValueError(f"the index map takes {len(imap.initial_indices)} indices but block "
                                 f"{blk.name_hint!r} has {len(blk.iter_vars)} iterators")
        except ValueError as err:
            raise self._error(f"transform_block_layout: {err}", realize) from None
        if any(not (isinstance(iv.dom.min, E.IntImm) and iv.dom.min.value == 0) for iv in blk.iter_vars):
            raise self._error("transform_block_layout: every block iterator must start at 0", realize)
        extents = [iv.dom.extent for iv in blk.iter_vars]
        target = removal_target(tree, realize)
        if loops and target is not loops[0]:
            raise self._error(f"transform_block_layout: the loops around block {blk.name_hint!r} must wrap only "
                              "that block", realize)
        from ...arith import detect_iter_map

        iters = {f.loop_var: E.Range.from_min_extent(f.min, f.extent) for f in loops}
        res = detect_iter_map(list(realize.iter_values), iters, check_level="bijective")
        if res.errors or not isinstance(realize.predicate, E.IntImm) or not realize.predicate.value:
            raise self._error(f"transform_block_layout: the loops of block {blk.name_hint!r} must enumerate its "
                              "iteration space exactly once (bijective bindings, no predicate)", realize)
        try:
            inverse = imap.inverse(extents, keep_unit_indices=True)
            new_extents = imap.map_shape(extents)
        except ValueError as err:
            raise self._error(f"transform_block_layout: {err}", realize) from None
        new_ivars = []
        for k, (f, ext) in enumerate(zip(imap.final_indices, new_extents)):
            used = {id(v) for v in collect_vars(f)}
            kinds = {iv.iter_type for v, iv in zip(imap.initial_indices, blk.iter_vars) if id(v) in used}
            if len(kinds) > 1:
                raise self._error(f"transform_block_layout: the new iterator {k} ({f}) mixes spatial and reduction "
                                  "iterators", realize)
            kind = kinds.pop() if kinds else E.IterVar.DataPar
            new_ivars.append(E.IterVar(E.Range.from_min_extent(0, ext), E.Var(f"v{k}", f.dtype), kind))
        ana = make_analyzer({})  # as TVM: the new iterators are unbound while substituting
        old_values = inverse.map_indices([iv.var for iv in new_ivars], ana)
        vmap = {iv.var: v for iv, v in zip(blk.iter_vars, old_values)}
        substituted = substitute(blk, vmap).replace(iter_vars=tuple(new_ivars))
        new_block = _AccessSimplifier(ana).visit(substituted)
        loop_vars = [E.Var(f"ax{k}", iv.var.dtype) for k, iv in enumerate(new_ivars)]
        stmt: Stmt = BlockRealize(loop_vars, True, new_block)
        for var, ext in reversed(list(zip(loop_vars, new_extents))):
            stmt = For(var, 0, ext, body=stmt)
        self._replace(func_name, target, stmt)

    _transform_layout_impl.__name__ = "transform_layout"
    _transform_layout = primitive(_transform_layout_impl)
    _transform_block_layout_impl.__name__ = "transform_block_layout"
    _transform_block_layout = primitive(_transform_block_layout_impl)

    def _set_func(self, func_name, func) -> None:
        from ...ir.function import IRModule

        functions = dict(self._mod.functions)
        functions[self._mod.get_global_var(func_name)] = func
        self._mod = IRModule(functions, self._mod.attrs, self._mod.global_infos)


def _size(expr) -> int:
    """The number of nodes of ``expr``: an iterator-map rewrite is kept only when it is smaller (our
    normal form of a split, ``x // 2 % 4``, is not TVM's ``x % 8 // 2``; an equal-size rewrite
    would only change the form later passes match against)."""
    count = 0

    def bump(_node):
        nonlocal count
        count += 1

    post_order_visit(expr, bump)
    return count


def _index_dtype(block) -> str:
    """The dtype of new index variables for ``block`` (TVM's ``_get_sblock_default_dtype``)."""
    for iv in block.iter_vars:
        return iv.var.dtype
    for region in list(block.reads) + list(block.writes):
        for r in region.region:
            return r.min.dtype
    return "int64"


class _Prepend(StmtExprMutator):
    """Puts a statement first in the body of the block that allocates a buffer."""

    def __init__(self, buf, stmt):
        self.buf, self.stmt, self.done = buf, stmt, False

    def visit_block_(self, op):
        if any(b is self.buf for b in op.alloc_buffers):
            self.done = True
            return op.replace(body=SeqStmt.flatten(self.stmt, op.body))
        return super().visit_block_(op)


def _prepend_in_scope(body: Stmt, buf, stmt: Stmt) -> Stmt:
    """``body`` with ``stmt`` first in the scope of ``buf``: the block allocating it, else the root."""
    prepend = _Prepend(buf, stmt)
    out = prepend.visit(body)
    if prepend.done:
        return out
    if isinstance(body, BlockRealize):
        return body.replace(block=body.block.replace(body=SeqStmt.flatten(stmt, body.block.body)))
    return SeqStmt.flatten(stmt, body)


def _numel(shape) -> int | None:
    total = 1
    for s in shape:
        if not isinstance(s, E.IntImm):
            return None
        total *= s.value
    return total


class _AccessSimplifier(_IterContextMutator):
    """Simplifies buffer indices and the mins of block regions (TVM's ``BlockBufferAccessSimplifier``)."""

    def __init__(self, ana, iters: dict | None = None):
        super().__init__(iters)
        self.ana = ana

    def visit_buffer_load_(self, op):
        op = super().visit_buffer_load_(op)
        return op.replace(indices=self.simplify_indices(op.indices))

    def visit_buffer_store_(self, op):
        op = super().visit_buffer_store_(op)
        return op.replace(indices=self.simplify_indices(op.indices))

    def visit_block_(self, op):
        for iv in op.iter_vars:
            self.iters[iv.var] = iv.dom
        try:
            op = StmtExprMutator.visit_block_(self, op)
            return op.replace(reads=tuple(self._region(r) for r in op.reads),
                              writes=tuple(self._region(w) for w in op.writes))
        finally:
            for iv in op.iter_vars:
                self.iters.pop(iv.var, None)

    def _region(self, region: BufferRegion) -> BufferRegion:
        mins = self.simplify_indices([r.min for r in region.region])
        return BufferRegion(region.buffer, [E.Range.from_min_extent(m, self.ana.simplify(r.extent))
                                            for m, r in zip(mins, region.region)])
