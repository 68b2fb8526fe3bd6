"""Schedule primitives for reductions: decompose_reduction, rfactor."""
from __future__ import annotations

from ...ir import expr as E
from ...ir.buffer import Buffer
from ...ir.functor import substitute
from ...ir.structural import structural_equal
from ...ir.stmt import Block, BlockRealize, BufferStore, For, ForKind, LetStmt, SeqStmt
from ...arith.block_regions import detect_block_regions
from ..analysis import (COMM_REDUCE, DATA_PAR, block_realizes_under, conjoin_all, const_value, split_conjuncts,
                        uses_any, var_ids)
from ..base import ScheduleBase, primitive
from ..rv import BlockRV, LoopRV
from ..tree import replace_many
from .rfactor_nest import copy_nest, every_rf_value_runs, rewrite_nest



class _Reducer:
    """A recognised commutative reduction ``B[idx] = combine(B[idx], rhs)``."""

    def __init__(self, name: str, combine, identity_ok):
        self.name, self.combine, self.identity_ok = name, combine, identity_ok


def _is_max(e):
    return isinstance(e, E.Max) or (isinstance(e, E.Call) and getattr(e.op, "name", "") == "tir.max")


_REDUCERS = {
    E.Add: _Reducer("sum", E.add, lambda v: v == 0),
    E.Mul: _Reducer("product", E.mul, lambda v: v == 1),
    E.Max: _Reducer("max", E.max_value_expr, lambda v: True),  # max/min are idempotent: any start works
    E.Min: _Reducer("min", E.min_value_expr, lambda v: True),
}


def _match_reduction(block: Block):
    """(reducer, store, rhs) for a reduction block ``B[idx] = op(B[idx], rhs)`` with a constant init;
    raises ValueError naming what does not match."""
    store = _inline_lets(block.body)
    if not isinstance(store, BufferStore):
        raise ValueError("its body is not a single buffer store")
    init = block.init
    if not isinstance(init, BufferStore) or init.buffer is not store.buffer:
        raise ValueError("its init is not a single store to the buffer the body updates")
    reducer = _REDUCERS.get(type(store.value))
    if reducer is None:
        raise ValueError(f"its update {type(store.value).__name__} is not a sum, product, max or min")
    a, b = store.value.a, store.value.b

    def is_self(x):
        return (isinstance(x, E.BufferLoad) and x.buffer is store.buffer and len(x.indices) == len(store.indices)
                and all(i is j or _same(i, j) for i, j in zip(x.indices, store.indices)))

    if is_self(a) and not _reads(b, store.buffer):
        rhs = b
    elif is_self(b) and not _reads(a, store.buffer):
        rhs = a
    else:
        raise ValueError("its update is not of the form B[idx] = B[idx] op value with B not read in value")
    ident = init.value
    value = ident.value if isinstance(ident, (E.IntImm, E.FloatImm)) else None
    if value is None or not reducer.identity_ok(value):
        raise ValueError(f"its init value {ident} is not the identity of the {reducer.name} reduction")
    return reducer, store, rhs


def _inline_lets(body):
    """A body ``let v = value; ...; B[idx] = f(v)`` as the single store ``B[idx] = f(value)`` (as
    TVM reads a reduction written with let bindings); other bodies are returned as they are."""
    bindings: dict = {}
    while isinstance(body, LetStmt):
        bindings[body.var] = substitute(body.value, bindings)
        body = body.body
    if not bindings or not isinstance(body, BufferStore):
        return body
    return BufferStore(body.buffer, substitute(body.value, bindings),
                       [substitute(i, bindings) for i in body.indices], body.predicate)


def _same(a, b) -> bool:
    from ...ir.structural import structural_equal

    return structural_equal(a, b, map_free_vars=False)


def _reads(expr, buffer) -> bool:
    found = []

    def f(n):
        if isinstance(n, E.BufferLoad) and n.buffer is buffer:
            found.append(n)

    from ...ir.functor import post_order_visit

    post_order_visit(expr, f)
    return bool(found)


def _with_regions(block: Block) -> Block:
    reads, writes = detect_block_regions(block)
    if block.init is not None:  # as TVM: a reduction does not list its accumulator among its reads
        written = {id(w.buffer) for w in writes}
        reads = [r for r in reads if id(r.buffer) not in written]
    return block.replace(reads=tuple(reads), writes=tuple(writes))


class Reduction(ScheduleBase):
    """decompose_reduction, rfactor."""

    # -- decompose_reduction ------------------------------------------------------------------
    @primitive
    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        """Split a reduction block's ``init`` into its own block ``<name>_init``, placed right
        before ``loop`` under copies (``<loop>_init``) of the loops between ``loop`` and the block
        that the spatial iterators use; as in TVM, a copied loop keeps its kind (parallel,
        vectorized, ...) but not its annotations, and the init block keeps the block's annotations.
        The reduction block is renamed ``<name>_update`` (the handle passed in follows the rename).
        Returns the init block.

        ``loop`` must enclose the block, and no loop outside ``loop`` may be bound to a
        reduction iterator (the init would then run more than once).

        Parameters
        ----------
        block : BlockRV
            The reduction block.
        loop : LoopRV
            The loop above which the init block goes.

        Returns
        -------
        BlockRV
            The new init block.

        Example::

            # before
            for i, j, k in T.grid(128, 128, 128):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]

            sch.decompose_reduction(sch.get_block("C"), j)

            # after
            for i in range(128):
                for j_init in range(128):
                    with T.block("C_init"):
                        vi_init, vj_init = T.axis.remap("SS", [i, j_init])
                        C[vi_init, vj_init] = T.float32(0)
                for j, k in T.grid(128, 128):
                    with T.block("C_update"):
                        vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul())
        >>> i, j, k = sch.get_loops(sch.get_block("C"))
        >>> sch.get(sch.decompose_reduction(sch.get_block("C"), k)).name_hint
        'C_init'
        """
        func_name, index, realize = self._block(block)
        _, _, for_node = self._loop(loop)
        blk = realize.block
        if blk.init is None:
            raise self._error(f"decompose_reduction needs a reduction block with an init; block "
                              f"{blk.name_hint!r} has none", blk)
        loops = index.loops_of(realize)
        pos = next((k for k, f in enumerate(loops) if f is for_node), None)
        if pos is None:
            raise self._error(f"decompose_reduction: loop {for_node.loop_var.name} does not enclose block "
                              f"{blk.name_hint!r} (within its scope block)", for_node)
        outer_ids = {id(f.loop_var) for f in loops[:pos]}
        for iv, value in zip(blk.iter_vars, realize.iter_values):
            if iv.iter_type == COMM_REDUCE and uses_any(value, outer_ids):
                raise self._error(f"decompose_reduction: the reduction iterator {iv.var.name} of block "
                                  f"{blk.name_hint!r} is bound to a loop outside {for_node.loop_var.name}; "
                                  "decompose at a loop outside every reduction loop", for_node)
        init_name = f"{blk.name_hint}_init"
        update_name = f"{blk.name_hint}_update"
        existing = index.blocks
        for name in (init_name, update_name):
            if name in existing:
                raise self._error(f"decompose_reduction would create block {name!r}, but the function already "
                                  "has a block of that name", blk)
        # Spatial iterators of the init block, with copies of the loops they use.
        spatial = [(iv, v) for iv, v in zip(blk.iter_vars, realize.iter_values) if iv.iter_type == DATA_PAR]
        used = set()
        for _, v in spatial:
            used |= var_ids(v)
        inner_loops = [f for f in loops[pos:] if id(f.loop_var) in used]
        loop_map = {f.loop_var: f.loop_var.copy_with_suffix("_init") for f in inner_loops}
        new_iters, new_values, block_map = [], [], {}
        for iv, v in spatial:
            nv = iv.var.copy_with_suffix("_init")
            block_map[iv.var] = nv
            new_iters.append(iv.replace(var=nv))
            new_values.append(substitute(v, loop_map))
        available = {id(f.loop_var) for f in loops[:pos]} | {id(v) for v in loop_map.values()}
        pred_parts = []
        for part in split_conjuncts(realize.predicate):
            part = substitute(part, loop_map)
            if var_ids(part) <= available:
                pred_parts.append(part)
        init_body = substitute(blk.init, block_map)
        # As in TVM, the init block keeps the block's annotations and each copied loop keeps its
        # kind (a vectorized inner loop stays vectorized), but not its annotations.
        init_block = _with_regions(Block(new_iters, [], [], init_name, init_body, annotations=blk.annotations))
        stmt = BlockRealize(new_values, conjoin_all(pred_parts), init_block)
        for f in reversed(inner_loops):
            binding = f.thread_binding if f.kind == ForKind.THREAD_BINDING else None
            if binding is not None:  # the init loop binds the thread axis with an IterVar of its own, as TVM's
                binding = E.IterVar(binding.dom, binding.var.copy_with_suffix(""), binding.iter_type,
                                    binding.thread_tag)
            stmt = For(loop_map[f.loop_var], f.min, f.extent, f.kind, stmt, thread_binding=binding)
        # As TVM: without its init the update reads what it writes, listed first.
        read_ids = {id(r.buffer) for r in blk.reads}
        update_reads = tuple(w for w in blk.writes if id(w.buffer) not in read_ids) + tuple(blk.reads)
        update_block = blk.replace(init=None, name_hint=update_name, reads=update_reads)
        new_loop = replace_many(for_node, {id(realize): realize.replace(block=update_block)})
        self._replace(func_name, for_node, SeqStmt.flatten(stmt, new_loop))
        self._rename_block_rv(block, update_name)  # the handle follows the renamed block, as TVM's sref does
        return BlockRV(init_name, func_name)

    # -- rfactor ------------------------------------------------------------------------------
    def _check_rfactor_block(self, index, realize, rf_loop, store) -> None:
        """TVM's conditions on the block and loops of rfactor: a reduction block (affine bindings,
        writes indexed by spatial iterators, the init writing where the update writes) in a scope
        that is a stage pipeline, under serial loops none bound to both spatial and reduction iterators."""
        from ..analysis import is_affine_binding
        from ..state_flags import compute_flags

        blk = realize.block
        loops = index.loops_of(realize)
        if not is_affine_binding(realize, loops):
            raise self._error(f"rfactor: block {blk.name_hint!r} has bindings that are not affine in its loops", blk)
        reduce_ids = {id(iv.var) for iv in blk.iter_vars if iv.iter_type == COMM_REDUCE}
        spatial_ids = {id(iv.var) for iv in blk.iter_vars if iv.iter_type != COMM_REDUCE}
        if any(uses_any(i, reduce_ids) for i in store.indices):
            raise self._error(f"rfactor: block {blk.name_hint!r} writes {store.buffer.name} at an index that depends "
                              "on a reduction iterator, so it is not a reduction block", blk)
        init = blk.init
        if isinstance(init, BufferStore) and (init.buffer is not store.buffer or not structural_equal(
                list(init.indices), list(store.indices), map_free_vars=False)):
            raise self._error(f"rfactor: the init of block {blk.name_hint!r} writes {init.buffer.name}"
                              f"{list(map(str, init.indices))} but the update writes {store.buffer.name}"
                              f"{list(map(str, store.indices))}; they must write the same element", blk)
        for f in loops:
            fid = {id(f.loop_var)}
            bound = [iv.var for iv, v in zip(blk.iter_vars, realize.iter_values) if uses_any(v, fid)]
            if any(id(v) in reduce_ids for v in bound) and any(id(v) in spatial_ids for v in bound):
                raise self._error(f"rfactor: loop {f.loop_var.name} is bound to both spatial and reduction "
                                  f"iterators of block {blk.name_hint!r}", f)
            if any(id(v) in reduce_ids for v in bound) and f.kind != ForKind.SERIAL:
                raise self._error(f"rfactor: loop {f.loop_var.name} is {f.kind.name.lower()}; rfactor needs the "
                                  "reduction loops serial", f)
        scope = index.parent_block_realize(realize)
        if scope is not None and not compute_flags(index.root)[id(scope.block)].stage_pipeline:
            raise self._error(f"rfactor: the scope of block {blk.name_hint!r} is not a stage pipeline (a consumer "
                              "reads more than its producers write, or a block writes what an earlier one read)",
                              blk)

    @primitive
    def rfactor(self, loop: LoopRV, factor_axis: int) -> BlockRV:
        """Factor a reduction over ``loop``: a new block ``<name>_rf`` computes partial results
        into a new buffer ``<buffer>_rf`` that has an extra axis (at position ``factor_axis``) for
        ``loop``, whose iterator becomes spatial; the original block then reduces that axis
        (write-back) in a new loop nest placed after the original one. The reduction must be a
        sum, product, max or min (``B[idx] = B[idx] op value`` with the identity as init).
        Returns the rfactor block.

        Parameters
        ----------
        loop : LoopRV
            The reduction loop to factor.
        factor_axis : int
            Where the new axis goes in the ``_rf`` buffer.

        Returns
        -------
        BlockRV
            The new ``_rf`` block.

        Example::

            # before
            for i, k_0, k_1 in T.grid(128, 32, 4):
                with T.block("B"):
                    vi = T.axis.spatial(128, i)
                    vk = T.axis.reduce(128, k_0 * 4 + k_1)
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + A[vi, vk]

            sch.rfactor(k_1, factor_axis=0)

            # after
            B_rf = T.alloc_buffer((4, 128))
            for i, k_0, k_1 in T.grid(128, 32, 4):
                with T.block("B_rf"):
                    vk_1, vi, vk_0 = T.axis.remap("SSR", [k_1, i, k_0])
                    with T.init():
                        B_rf[vk_1, vi] = T.float32(0)
                    B_rf[vk_1, vi] = B_rf[vk_1, vi] + A[vi, vk_0 * 4 + vk_1]
            for i, k_1 in T.grid(128, 4):
                with T.block("B"):
                    vk_1, vi = T.axis.remap("RS", [k_1, i])
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + B_rf[vk_1, vi]
        """
        func_name, index, rf_loop = self._loop(loop)
        factor_axis = self._int(factor_axis, "factor_axis")
        realizes = block_realizes_under(rf_loop.body)
        if len(realizes) != 1:
            raise self._error(f"rfactor needs a loop with exactly one block under it; loop "
                              f"{rf_loop.loop_var.name} has {len(realizes)}", rf_loop)
        realize = realizes[0]
        blk = realize.block
        try:
            reducer, store, rhs = _match_reduction(blk)
        except ValueError as err:
            raise self._error(f"rfactor cannot factor block {blk.name_hint!r}: {err}", blk) from None
        self._check_rfactor_block(index, realize, rf_loop, store)
        rf_id = {id(rf_loop.loop_var)}
        for iv, v in zip(blk.iter_vars, realize.iter_values):
            if uses_any(v, rf_id) and iv.iter_type != COMM_REDUCE:
                raise self._error(f"rfactor: loop {rf_loop.loop_var.name} is bound to the non-reduction "
                                  f"iterator {iv.var.name}; rfactor needs a reduction loop", realize)
        ndim = len(store.buffer.shape)
        if not -ndim - 1 <= factor_axis <= ndim:
            raise self._error(f"rfactor: factor_axis {factor_axis} is out of range for a {ndim + 1}-d rfactor buffer")
        if factor_axis < 0:
            factor_axis += ndim + 1
        extent = const_value(rf_loop.extent)
        if extent is None or const_value(rf_loop.min) != 0:
            raise self._error("rfactor needs a loop starting at 0 with a constant extent", rf_loop)
        loops = index.loops_of(realize)
        if uses_any(realize.predicate, rf_id) and not every_rf_value_runs(realize.predicate, rf_loop, loops):
            raise self._error(f"rfactor: the predicate {realize.predicate} of block {blk.name_hint!r} skips some values "
                              f"of loop {rf_loop.loop_var.name} entirely, whose rfactor entries would never be "
                              f"initialised; rfactor a loop the predicate does not cut (the outer loop of a split) "
                              f"or split by a factor that divides the extent", realize)
        scope = index.parent_block_realize(realize)
        rf_name = f"{blk.name_hint}_rf"
        if rf_name in index.blocks:
            raise self._error(f"rfactor would create block {rf_name!r}, which already exists", blk)

        # Iterators of the rfactor block (see the docstring): the rf loop becomes spatial.
        loop_to_iter: dict[int, E.Var] = {}
        rf_iter = E.IterVar(E.Range.from_min_extent(0, rf_loop.extent), E.Var("v" + rf_loop.loop_var.name,
                            rf_loop.loop_var.dtype), DATA_PAR)
        loop_to_iter[id(rf_loop.loop_var)] = rf_iter.var
        iters, values, var_map = [rf_iter], [rf_loop.loop_var], {}
        for iv, v in zip(blk.iter_vars, realize.iter_values):
            if iv.iter_type == DATA_PAR or not uses_any(v, rf_id):
                iters.append(iv)
                values.append(v)
                continue
            used = var_ids(v)
            for f in loops:
                if id(f.loop_var) in used and id(f.loop_var) not in loop_to_iter:
                    nv = E.Var("v" + f.loop_var.name, f.loop_var.dtype)
                    loop_to_iter[id(f.loop_var)] = nv
                    iters.append(E.IterVar(E.Range.from_min_extent(f.min, f.extent), nv, COMM_REDUCE))
                    values.append(f.loop_var)
            var_map[iv.var] = substitute(v, lambda x: loop_to_iter.get(id(x)))
        # The rfactor buffer: the written buffer with the rf axis inserted.
        old = store.buffer
        shape = list(old.shape)
        shape.insert(factor_axis, rf_loop.extent)
        offset = old.elem_offset if isinstance(old.elem_offset, E.IntImm) else None  # as TVM: the buffer's type, reshaped
        rf_buf = Buffer(E.Var(f"{old.name}_rf", E.PointerType(old.dtype, old.scope())), old.dtype, shape,
                        elem_offset=offset, name=f"{old.name}_rf")
        rf_indices = [substitute(i, var_map) for i in store.indices]
        rf_indices.insert(factor_axis, rf_iter.var)
        rf_load = E.BufferLoad(rf_buf, rf_indices)
        if any(iv.iter_type == COMM_REDUCE for iv in iters):
            rf_body = BufferStore(rf_buf, reducer.combine(rf_load, substitute(rhs, var_map)), rf_indices)
            rf_init = BufferStore(rf_buf, blk.init.value, rf_indices)
        else:  # as TVM: with no reduction iterator left, the rfactor block just stores its values
            rf_body, rf_init = BufferStore(rf_buf, substitute(rhs, var_map), rf_indices), None
        rf_block = _with_regions(Block(iters, [], [], rf_name, rf_body, rf_init,
                                       annotations=blk.annotations))
        rf_realize = BlockRealize(values, realize.predicate, rf_block)
        # The write-back block: original spatial iterators plus a reduction over the rf axis; it
        # stays in the original loop nest, from which the loops bound to reduction iterators (other
        # than the rf loop) are removed (TVM's BlockReplacer).
        reduce_touched: set = set()
        for iv, v in zip(blk.iter_vars, realize.iter_values):
            if iv.iter_type == COMM_REDUCE:
                reduce_touched |= var_ids(v)
        removed = {id(f.loop_var) for f in loops if f is not rf_loop and id(f.loop_var) in reduce_touched}
        wb_rf_iter = E.IterVar(rf_iter.dom, E.Var(rf_iter.var.name, rf_iter.var.dtype), COMM_REDUCE)
        wb_iters, wb_values, wb_map = [wb_rf_iter], [rf_loop.loop_var], {}
        for iv, v in zip(blk.iter_vars, realize.iter_values):
            if iv.iter_type == DATA_PAR:
                nv = E.Var(iv.var.name, iv.var.dtype)
                wb_map[iv.var] = nv
                wb_iters.append(iv.replace(var=nv))
                wb_values.append(v)
        wb_indices = [substitute(i, wb_map) for i in store.indices]
        rf_read = [substitute(i, wb_map) for i in store.indices]
        rf_read.insert(factor_axis, wb_rf_iter.var)
        wb_body = BufferStore(old, reducer.combine(E.BufferLoad(old, wb_indices), E.BufferLoad(rf_buf, rf_read)),
                              wb_indices)
        wb_init = BufferStore(old, blk.init.value, wb_indices)
        wb_block = _with_regions(Block(wb_iters, [], [], blk.name_hint, wb_body, wb_init, annotations=blk.annotations))
        wb_pred = [p for p in split_conjuncts(realize.predicate) if not uses_any(p, removed)]
        wb_realize = BlockRealize(wb_values, conjoin_all(wb_pred), wb_block)
        # The rfactor block goes in a copy of the whole loop nest (fresh loop variables), placed
        # right before the outermost loop of the block.
        top = loops[0] if loops else realize
        loop_ids = {id(f.loop_var) for f in loops}
        wb_nest = rewrite_nest(top, loop_ids, removed, realize, wb_realize)
        replacements = {id(top): SeqStmt.flatten(copy_nest(loops, rf_realize), wb_nest)}
        if scope is not None:
            scope_block = scope.block
            new_scope_block = replace_many(scope_block, replacements)
            new_scope_block = new_scope_block.replace(alloc_buffers=tuple(scope_block.alloc_buffers) + (rf_buf,))
            self._replace(func_name, scope_block, new_scope_block)
        else:
            raise self._error("rfactor needs the block to be inside a scope (root) block", blk)
        return BlockRV(rf_name, func_name)
