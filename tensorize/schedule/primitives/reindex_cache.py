"""Schedule primitives: reindex_cache_read, reindex_cache_write (TVM's names and placement).

Like ``cache_read``/``cache_write``, a copy stage goes where TVM places a cache stage (after the
writer, under the loops it shares with the block); unlike them the copy iterates over the *block's*
iteration space (the loops above the block that its kept iterators are bound to are copied), and
the new buffer is laid out by an index map of the block's iterators: ``B[vi, vj]`` read by block
``C`` becomes ``B_shared[*index_map(vi, vj)]``. The access must be a single point per iteration.
"""
from __future__ import annotations

from ...arith.index_map import IndexMap
from ...ir import expr as E
from ...ir.buffer import Buffer
from ...ir.functor import StmtExprMutator, substitute
from ...ir.stmt import Block, BlockRealize, BufferRegion, BufferStore, For, ForKind
from ..analysis import uses_any
from ..base import primitive
from ..rv import BlockRV
from .cache import Cache, new_buffer_like, unique_block_name
from .cache_placement import insert_stage, reads_buffer, scope_children, stage_analyzer


class _Retarget(StmtExprMutator):
    """Loads (and for writes, stores) of ``old`` at ``indices`` become accesses of ``new`` at ``new_indices``."""

    def __init__(self, old: Buffer, new: Buffer, new_indices, stores: bool):
        super().__init__()
        self.old, self.new, self.new_indices, self.stores = old, new, list(new_indices), stores

    def visit_buffer_load_(self, op):
        op = super().visit_buffer_load_(op)
        if op.buffer is self.old:
            return E.BufferLoad(self.new, self.new_indices)
        return op

    def visit_buffer_store_(self, op):
        op = super().visit_buffer_store_(op)
        if self.stores and op.buffer is self.old:
            return BufferStore(self.new, op.value, self.new_indices)
        return op


def _point_region(buf: Buffer, indices) -> BufferRegion:
    return BufferRegion(buf, [E.Range.from_min_extent(i, 1) for i in indices])


class ReindexCache(Cache):
    """reindex_cache_read, reindex_cache_write."""

    def _reindex_map(self, realize, index_map, what: str) -> IndexMap:
        if isinstance(index_map, IndexMap):
            return index_map
        if not callable(index_map):
            raise self._error(f"{what}: index_map must be an IndexMap or a function of the block's iterators, got "
                              f"{type(index_map).__name__}", realize)
        return IndexMap.from_func(index_map, len(realize.block.iter_vars))

    def _single_point(self, realize, region: BufferRegion, what: str) -> list:
        if any(not (isinstance(r.extent, E.IntImm) and r.extent.value == 1) for r in region.region):
            raise self._error(f"{what}: block {realize.block.name_hint!r} accesses {region.buffer.name!r} over the "
                              f"region {region}, not a single point per iteration; reindex_cache_* needs each "
                              "iteration to access one element (use cache_read/cache_write)", realize)
        return [r.min for r in region.region]

    def _stage(self, tree, realize, loc, name: str, keep, body_fn):
        """The copy stage over the block's kept iterators, with copies of the loops between ``loc`` and it."""
        blk = realize.block
        loops = [a for a in tree.ancestors(realize) if isinstance(a, For)]
        if loc is not None:
            loops = loops[:next(k for k, a in enumerate(loops) if a is loc)]
        loops.reverse()  # outermost first
        kept_values = [realize.iter_values[k] for k in keep]
        loops = [f for f in loops if any(uses_any(v, {id(f.loop_var)}) for v in kept_values)]
        loop_map = {f.loop_var: f.loop_var.copy_with_name(f.loop_var.name) for f in loops}
        iters = [blk.iter_vars[k] for k in keep]
        new_iters = [iv.replace(var=iv.var.copy_with_name(iv.var.name), iter_type=E.IterVar.DataPar) for iv in iters]
        iter_map = {iv.var: n.var for iv, n in zip(iters, new_iters)}
        stage_block, reads, writes = body_fn(iter_map)
        block = Block(new_iters, reads, writes, name, stage_block)
        bindings = [substitute(v, loop_map) for v in kept_values]
        stmt = BlockRealize(bindings, E.make_const("bool", True), block)
        for f in reversed(loops):
            stmt = For(loop_map[f.loop_var], f.min, f.extent, ForKind.SERIAL, stmt)
        return stmt

    def _check_map(self, realize, imap: IndexMap, keep, what: str, buf: Buffer) -> list:
        blk = realize.block
        if len(imap.initial_indices) != len(blk.iter_vars):
            raise self._error(f"{what}: the index map takes {len(imap.initial_indices)} indices but block "
                              f"{blk.name_hint!r} has {len(blk.iter_vars)} iterators", realize)
        shape = [blk.iter_vars[k].dom.extent for k in keep]
        sub = IndexMap([imap.initial_indices[k] for k in keep], imap.final_indices)
        used = {id(v) for f in imap.final_indices for v in [v for v in imap.initial_indices if uses_any(f, {id(v)})]}
        others = [imap.initial_indices[k] for k in range(len(blk.iter_vars)) if k not in keep]
        try:
            ok = not any(id(v) in used for v in others) and sub.is_bijective_on(shape)
            new_shape = sub.map_shape(shape) if ok else None
        except ValueError:
            ok = False
        if not ok:
            raise self._error(f"{what}: the index map {imap} is not a bijection from the iteration space "
                              f"{[str(s) for s in shape]} of block {blk.name_hint!r}'s iterators "
                              f"{[blk.iter_vars[k].var.name for k in keep]} onto the new buffer of {buf.name!r}; "
                              "give a map that keeps every point (e.g. lambda i, j: (j, i))", realize)
        return new_shape

    def _reindex_cache_read_impl(self, block: BlockRV | str, read_buffer_index, storage_scope: str,
                                 index_map) -> BlockRV:
        """The primitive behind ``reindex_cache_read`` (recorded in the trace under that name)."""
        what = "reindex_cache_read"
        func_name, tree, realize, i, buf, scope, siblings = self._cache_target(
            block, read_buffer_index, "read", storage_scope, what)
        writer = self._only_writer(siblings, buf, what, realize)
        if writer is realize:
            raise self._error(f"{what}: block {realize.block.name_hint!r} both reads and writes {buf.name!r}; use "
                              "reindex_cache_write", realize)
        access = self._single_point(realize, realize.block.reads[i], what)
        imap = self._reindex_map(realize, index_map, what)
        keep = list(range(len(realize.block.iter_vars)))
        new_shape = self._check_map(realize, imap, keep, what, buf)
        loc, pos = self._place(tree, scope, writer, [realize], buf, what)
        name = unique_block_name(tree, f"{buf.name}_{storage_scope}")
        cache = new_buffer_like(buf, f"{buf.name}_{storage_scope}", storage_scope, shape=new_shape)
        ana = stage_analyzer(tree, scope, loc)

        def body(iter_map):
            src = [substitute(a, iter_map) for a in access]
            dst = imap.map_indices([iter_map.get(iv.var, iv.var) for iv in realize.block.iter_vars], ana)
            return (BufferStore(cache, E.BufferLoad(buf, src), dst), [_point_region(buf, src)],
                    [_point_region(cache, dst)])

        stage = self._stage(tree, realize, loc, name, keep, body)
        new_idx = imap.map_indices([iv.var for iv in realize.block.iter_vars], ana)
        blk = realize.block
        new_blk = blk.replace(body=_Retarget(buf, cache, new_idx, False).visit(blk.body),
                              reads=[_point_region(cache, new_idx) if r.buffer is buf else r for r in blk.reads])
        repl = {id(realize): realize.replace(block=new_blk)}
        if loc is None and writer is None:
            pos = min(k for k, c in enumerate(scope_children(tree, scope, None))
                      if c is realize or tree.is_ancestor(c, realize))
        self._set_body(func_name, insert_stage(tree, scope, loc, pos, stage, repl, [cache]))
        return BlockRV(name, func_name)

    def _reindex_cache_write_impl(self, block: BlockRV | str, write_buffer_index, storage_scope: str,
                                  index_map) -> BlockRV:
        """The primitive behind ``reindex_cache_write`` (recorded in the trace under that name)."""
        what = "reindex_cache_write"
        func_name, tree, realize, i, buf, scope, siblings = self._cache_target(
            block, write_buffer_index, "write", storage_scope, what)
        self._only_writer(siblings, buf, what, realize)
        access = self._single_point(realize, realize.block.writes[i], what)
        imap = self._reindex_map(realize, index_map, what)
        blk = realize.block
        keep = [k for k, iv in enumerate(blk.iter_vars) if iv.iter_type == E.IterVar.DataPar]
        new_shape = self._check_map(realize, imap, keep, what, buf)
        related = [s for s in siblings if s is not realize and reads_buffer(s, buf) and tree.precedes(realize, s)]
        loc, pos = self._place(tree, scope, realize, related, buf, what)
        name = unique_block_name(tree, f"{buf.name}_{storage_scope}")
        cache = new_buffer_like(buf, f"{buf.name}_{storage_scope}", storage_scope, shape=new_shape)
        ana = stage_analyzer(tree, scope, loc)

        def body(iter_map):
            dst = [substitute(a, iter_map) for a in access]
            src = imap.map_indices([iter_map.get(iv.var, iv.var) for iv in blk.iter_vars], ana)
            return (BufferStore(buf, E.BufferLoad(cache, src), dst), [_point_region(cache, src)],
                    [_point_region(buf, dst)])

        stage = self._stage(tree, realize, loc, name, keep, body)
        new_idx = imap.map_indices([iv.var for iv in blk.iter_vars], ana)
        retarget = _Retarget(buf, cache, new_idx, True)
        new_blk = blk.replace(
            body=retarget.visit(blk.body), init=retarget.visit(blk.init) if blk.init is not None else None,
            reads=[_point_region(cache, new_idx) if r.buffer is buf else r for r in blk.reads],
            writes=[_point_region(cache, new_idx) if r.buffer is buf else r for r in blk.writes])
        repl = {id(realize): realize.replace(block=new_blk)}
        self._set_body(func_name, insert_stage(tree, scope, loc, pos, stage, repl, [cache]))
        return BlockRV(name, func_name)

    _reindex_cache_read_impl.__name__ = "reindex_cache_read"
    _reindex_cache_read = primitive(_reindex_cache_read_impl)
    _reindex_cache_write_impl.__name__ = "reindex_cache_write"
    _reindex_cache_write = primitive(_reindex_cache_write_impl)

    def reindex_cache_read(self, block: BlockRV | str, read_buffer_index, storage_scope: str,
                           index_map) -> BlockRV:
        """Read the ``read_buffer_index``-th read buffer of ``block`` through a new buffer in
        ``storage_scope`` laid out by ``index_map`` over the block's iterators; the copy block
        iterates over the block's iteration space and goes where ``cache_read`` puts its copy.

        Parameters
        ----------
        block : BlockRV or str
            The consumer block (or its name).
        read_buffer_index : int, Buffer or str
            Which read buffer of ``block``.
        storage_scope : str
            The scope of the new buffer.
        index_map : IndexMap or callable
            From the block's iterators to the new buffer's indices (a bijection).

        Returns
        -------
        BlockRV
            The copy block.

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul())
        >>> blk = sch.reindex_cache_read("C", 0, "shared", lambda i, j, k: (k, i, j))
        >>> [int(s) for s in sch.get(blk).writes[0].buffer.shape]
        [16, 16, 16]
        """
        if not isinstance(index_map, IndexMap):  # the trace records the IndexMap, not the lambda
            index_map = self._reindex_map(self._block(self._block_arg(block))[2], index_map, "reindex_cache_read")
        return self._reindex_cache_read(block, read_buffer_index, storage_scope, index_map)

    def reindex_cache_write(self, block: BlockRV | str, write_buffer_index, storage_scope: str,
                            index_map) -> BlockRV:
        """Make ``block`` write its ``write_buffer_index``-th write buffer into a new buffer in
        ``storage_scope`` laid out by ``index_map`` over the block's iterators; a copy block over the
        block's spatial iteration space writes the values back where ``cache_write`` puts its copy.

        Parameters
        ----------
        block : BlockRV or str
            The producer block (or its name).
        write_buffer_index : int, Buffer or str
            Which write buffer of ``block``.
        storage_scope : str
            The scope of the new buffer.
        index_map : IndexMap or callable
            From the block's iterators to the new buffer's indices (a bijection of its spatial ones).

        Returns
        -------
        BlockRV
            The copy block.

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul())
        >>> blk = sch.reindex_cache_write("C", 0, "local", lambda i, j, k: (j, i))
        >>> sch.get(sch.get_block("C")).writes[0].buffer.name
        'C_local'
        """
        if not isinstance(index_map, IndexMap):  # the trace records the IndexMap, not the lambda
            index_map = self._reindex_map(self._block(self._block_arg(block))[2], index_map, "reindex_cache_write")
        return self._reindex_cache_write(block, write_buffer_index, storage_scope, index_map)



__all__ = ["ReindexCache"]
