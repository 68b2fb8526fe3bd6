"""Schedule primitives: cache_read, cache_write, reindex, set_scope, storage_align.

Each new buffer is allocated in the scope block of the block it serves; copy blocks are named
after the buffer and scope as TVM does (``A_shared``, ``C_local``, ``A_wmma.matrix_a``,
``A_reindex``) and placed in the scope's body right before the first consumer (``cache_read``,
reindex of a read) or right after the writer (``cache_write``, reindex of a write).
"""
from __future__ import annotations

from ...ir import expr as E
from ...ir.buffer import Buffer
from ...ir.functor import post_order_visit, substitute
from ...ir.structural import structural_equal
from ...ir.stmt import Block, BlockRealize, BufferRegion, BufferStore, For, Stmt
from ..base import ScheduleBase, primitive
from ..region_utils import (
    block_region_in_loops, hull, loop_dom, make_analyzer, rebuild_scope, replace_buffers, scope_parts, top_child,
)
from ..rv import BlockRV
from ..tree import replace_many


def new_buffer_like(buf: Buffer, name: str, scope: str | None = None, shape=None, dtype: str | None = None) -> Buffer:
    """A fresh compact buffer like ``buf`` (new data pointer) with another name, scope or shape."""
    dtype = dtype or buf.dtype
    data = E.Var(name, E.PointerType(dtype, scope if scope is not None else buf.scope()))
    return Buffer(data, dtype, buf.shape if shape is None else shape, name=name,
                  data_alignment=buf.data_alignment, offset_factor=buf.offset_factor)


def copy_nest(name: str, src: Buffer, dst: Buffer, region: list[E.Range], ana) -> Stmt:
    """Loops ``ax0, ax1, ...`` over ``region`` around a block ``name`` doing ``dst[v] = src[v]``
    (``src`` and ``dst`` have the same shape; iterators ``v0, v1, ...`` span the whole shape)."""
    loops, ivars, values = [], [], []
    for axis, rng in enumerate(region):
        var = E.Var(f"ax{axis}", rng.extent.dtype)
        loops.append((var, rng.extent))
        dom = E.Range.from_min_extent(0, dst.shape[axis])
        ivars.append(E.IterVar(dom, E.Var(f"v{axis}", var.dtype), E.IterVar.DataPar))
        values.append(ana.simplify(E.add(rng.min, var)))
    vs = [iv.var for iv in ivars]
    body = BufferStore(dst, E.BufferLoad(src, vs), vs)
    block = Block(ivars, [BufferRegion.from_point(src, vs)], [BufferRegion.from_point(dst, vs)], name, body)
    stmt: Stmt = BlockRealize(values, True, block)
    for var, ext in reversed(loops):
        stmt = For(var, 0, ext, body=stmt)
    return stmt


def unique_block_name(tree, base: str) -> str:
    if base not in tree.blocks:
        return base
    n = 1
    while f"{base}_{n}" in tree.blocks:
        n += 1
    return f"{base}_{n}"


def _parse_buffer_arg(block: Block, buffer) -> tuple[Buffer, str]:
    """``("read", i)``, ``("write", i)``, a Buffer or a buffer name -> (buffer, "read"/"write")."""
    if isinstance(buffer, (tuple, list)) and len(buffer) == 2 and buffer[0] in ("read", "write"):
        regions = block.reads if buffer[0] == "read" else block.writes
        i = int(buffer[1])
        if not 0 <= i < len(regions):
            raise IndexError(f"block {block.name_hint!r} has {len(regions)} {buffer[0]} buffers; index {i} is out of "
                             "range")
        return regions[i].buffer, buffer[0]
    for kind, regions in (("write", block.writes), ("read", block.reads)):
        for r in regions:
            if r.buffer is buffer or (isinstance(buffer, str) and r.buffer.name == buffer):
                return r.buffer, kind
    raise LookupError(f"block {block.name_hint!r} does not access buffer {getattr(buffer, 'name', buffer)!r}")


class Cache(ScheduleBase):
    """cache_read, cache_write, reindex, set_scope, storage_align."""

    # -- helpers -------------------------------------------------------------------------------
    def _scope_parts(self, tree, realize):
        return scope_parts(tree, realize)

    def _top_child(self, tree, children, stmt) -> int:
        return top_child(tree, children, stmt)

    def _commit_scope(self, func_name, tree, scope, children, new_buffers) -> None:
        self._set_body(func_name, rebuild_scope(tree, scope, children, new_buffers))

    def _full_region(self, tree, realizes, buf, use_reads: bool, ana) -> list[E.Range]:
        """The hull of the regions of ``buf`` the blocks access, relaxed over all their loops."""
        out = None
        for r in realizes:
            dom = loop_dom(tree.loops_of(r))
            for region in (r.block.reads if use_reads else r.block.writes):
                if region.buffer is buf:
                    rng = block_region_in_loops(r, region, dom, ana)
                    out = rng if out is None else hull(out, rng, ana)
        if out is None or any(not isinstance(x.extent, E.IntImm) for x in out):
            out = [E.Range.from_min_extent(0, s) for s in buf.shape]
        return out

    # -- primitives ----------------------------------------------------------------------------
    @primitive
    def cache_read(self, block: BlockRV, read_buffer_index: int, storage_scope: str,
                   consumer_blocks: list[BlockRV] | None = None) -> BlockRV:
        """Read the ``read_buffer_index``-th read buffer of ``block`` through a new buffer in
        ``storage_scope``: a copy block ``<buffer>_<scope>`` is inserted before the first consumer and
        the consumers (all readers in the scope, or ``consumer_blocks``) read the copy.

        Before::

            for i, j in T.grid(128, 128):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2)

        ``sch.cache_read(sch.get_block("B"), 0, "local")``::

            A_local = T.alloc_buffer((128, 128), scope="local")
            for ax0, ax1 in T.grid(128, 128):
                with T.block("A_local"):
                    v0, v1 = T.axis.remap("SS", [ax0, ax1])
                    A_local[v0, v1] = A[v0, v1]
            for i, j in T.grid(128, 128):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A_local[vi, vj] * T.float32(2)
        """
        func_name, tree, realize = self._block(block)
        reads = realize.block.reads
        i = self._int(read_buffer_index, "read_buffer_index")
        if not 0 <= i < len(reads):
            raise self._error(f"cache_read: block {realize.block.name_hint!r} has {len(reads)} read buffers; "
                              f"read_buffer_index {i} is out of range", realize)
        buf = reads[i].buffer
        scope, children = self._scope_parts(tree, realize)
        siblings = tree.child_block_realizes(scope if scope is not None else tree.root)
        if consumer_blocks:
            consumers = [self._block(b)[2] for b in consumer_blocks]
            missing = [c.block.name_hint for c in consumers if not any(id(r.buffer) == id(buf) for r in c.block.reads)]
            if missing:
                raise self._error(f"cache_read: consumer blocks {missing} do not read buffer {buf.name!r}", realize)
        else:
            consumers = [s for s in siblings if any(r.buffer is buf for r in s.block.reads)]
            if realize not in consumers:
                consumers.append(realize)
        for c in consumers:
            if any(w.buffer is buf for w in c.block.writes):
                raise self._error(f"cache_read: block {c.block.name_hint!r} both reads and writes {buf.name!r}; "
                                  "use cache_write for a buffer a block updates", c)
        first = min((self._top_child(tree, children, c) for c in consumers))
        for s in siblings:
            if any(w.buffer is buf for w in s.block.writes) and self._top_child(tree, children, s) >= first:
                raise self._error(f"cache_read: block {s.block.name_hint!r} writes {buf.name!r} inside or after the "
                                  "first consumer's loop nest, so no single copy can serve the consumers; apply "
                                  "cache_read before compute_at", s)
        ana = make_analyzer({})
        region = self._full_region(tree, consumers, buf, True, ana)
        name = unique_block_name(tree, f"{buf.name}_{storage_scope}")
        cache = new_buffer_like(buf, f"{buf.name}_{storage_scope}", storage_scope)
        nest = copy_nest(name, buf, cache, region, ana)
        swap = {id(buf): cache}
        repl = {id(c): replace_buffers(c, swap) for c in consumers}
        new_children = [replace_many(ch, repl) for ch in children]
        new_children.insert(first, nest)
        self._commit_scope(func_name, tree, scope, new_children, [cache])
        return BlockRV(name, func_name)

    @primitive
    def cache_write(self, block: BlockRV, write_buffer_index: int, storage_scope: str,
                    consumer_blocks: list[BlockRV] | None = None) -> BlockRV:
        """Make ``block`` write its ``write_buffer_index``-th write buffer into a new buffer in
        ``storage_scope``; a copy block ``<buffer>_<scope>`` inserted right after it writes the
        original buffer. ``consumer_blocks`` read the cache directly.

        Before::

            for i, j in T.grid(128, 128):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2)

        ``sch.cache_write(sch.get_block("B"), 0, "local")``::

            B_local = T.alloc_buffer((128, 128), scope="local")
            for i, j in T.grid(128, 128):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B_local[vi, vj] = A[vi, vj] * T.float32(2)
            for ax0, ax1 in T.grid(128, 128):
                with T.block("B_local"):
                    v0, v1 = T.axis.remap("SS", [ax0, ax1])
                    B[v0, v1] = B_local[v0, v1]
        """
        func_name, tree, realize = self._block(block)
        writes = realize.block.writes
        i = self._int(write_buffer_index, "write_buffer_index")
        if not 0 <= i < len(writes):
            raise self._error(f"cache_write: block {realize.block.name_hint!r} has {len(writes)} write buffers; "
                              f"write_buffer_index {i} is out of range", realize)
        buf = writes[i].buffer
        scope, children = self._scope_parts(tree, realize)
        siblings = tree.child_block_realizes(scope if scope is not None else tree.root)
        others = [s for s in siblings if s is not realize and any(w.buffer is buf for w in s.block.writes)]
        if others:
            raise self._error(f"cache_write: block {realize.block.name_hint!r} is not the only writer of "
                              f"{buf.name!r} (also {[s.block.name_hint for s in others]}); apply cache_write before "
                              "decompose_reduction or similar splits", realize)
        pos = self._top_child(tree, children, realize)
        readers_in_nest = [s for s in siblings if s is not realize and any(r.buffer is buf for r in s.block.reads)
                           and self._top_child(tree, children, s) == pos]
        if readers_in_nest:
            raise self._error(f"cache_write: blocks {[s.block.name_hint for s in readers_in_nest]} read {buf.name!r} "
                              f"in the same loop nest as {realize.block.name_hint!r}; apply cache_write before "
                              "compute_at", realize)
        consumers = [self._block(b)[2] for b in (consumer_blocks or [])]
        ana = make_analyzer({})
        region = self._full_region(tree, [realize], buf, False, ana)
        name = unique_block_name(tree, f"{buf.name}_{storage_scope}")
        cache = new_buffer_like(buf, f"{buf.name}_{storage_scope}", storage_scope)
        nest = copy_nest(name, cache, buf, region, ana)
        swap = {id(buf): cache}
        repl = {id(c): replace_buffers(c, swap) for c in [realize] + consumers}
        new_children = [replace_many(ch, repl) for ch in children]
        new_children.insert(pos + 1, nest)
        self._commit_scope(func_name, tree, scope, new_children, [cache])
        return BlockRV(name, func_name)

    @primitive
    def reindex(self, block: BlockRV, buffer) -> BlockRV:
        """Access ``buffer`` (``("read", i)``, ``("write", i)``, a Buffer or its name) of ``block``
        through a new buffer ``<buffer>_reindex`` indexed directly by the block iterators that appear
        in its indices (in block order); a copy block converts between the two layouts.

        Before::

            for i, j in T.grid(128, 128):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vj, vi] * T.float32(2)

        ``sch.reindex(sch.get_block("B"), ("read", 0))``::

            A_reindex = T.alloc_buffer((128, 128))
            for ax0, ax1 in T.grid(128, 128):
                with T.block("A_reindex"):
                    vi, vj = T.axis.remap("SS", [ax0, ax1])
                    A_reindex[vi, vj] = A[vj, vi]
            for i, j in T.grid(128, 128):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A_reindex[vi, vj] * T.float32(2)
        """
        func_name, tree, realize = self._block(block)
        blk = realize.block
        try:
            buf, kind = _parse_buffer_arg(blk, buffer)
        except (IndexError, LookupError) as err:
            raise self._error(f"reindex: {err}", realize) from None
        indices = []

        def collect(node):
            if isinstance(node, (E.BufferLoad, BufferStore)) and node.buffer is buf:
                indices.append(node.indices)

        post_order_visit(blk.body, collect)
        if blk.init is not None:
            post_order_visit(blk.init, collect)
        if not indices:
            raise self._error(f"reindex: block {blk.name_hint!r} has no direct access of {buf.name!r} (it may be "
                              "inside a nested block)", realize)
        pattern = indices[0]
        if any(len(ix) != len(pattern) or not all(structural_equal(a, b, map_free_vars=False) for a, b in zip(ix, pattern))
               for ix in indices[1:]):
            raise self._error(f"reindex: block {blk.name_hint!r} accesses {buf.name!r} with different indices; "
                              "reindex needs a single access pattern", realize)
        from ...ir.functor import collect_vars

        used = {id(v) for ix in pattern for v in collect_vars(ix)}
        covered = [iv for iv in blk.iter_vars if id(iv.var) in used]
        if any(iv.iter_type not in (E.IterVar.DataPar, E.IterVar.CommReduce) for iv in covered):
            raise self._error(f"reindex: the indices of {buf.name!r} use iterators that are neither spatial nor "
                              "reduction", realize)
        scope, children = self._scope_parts(tree, realize)
        pos = self._top_child(tree, children, realize)
        name = unique_block_name(tree, f"{buf.name}_reindex")
        shape = [iv.dom.extent for iv in covered]
        new_buf = new_buffer_like(buf, f"{buf.name}_reindex", buf.scope(), shape=shape)
        # The copy block: its own spatial iterators standing for the covered ones.
        loops, ivars, values = [], [], []
        for axis, iv in enumerate(covered):
            var = E.Var(f"ax{axis}", iv.var.dtype)
            loops.append((var, iv.dom.extent))
            ivars.append(E.IterVar(iv.dom, E.Var(iv.var.name, iv.var.dtype), E.IterVar.DataPar))
            values.append(E.add(iv.dom.min, var) if not _is_zero(iv.dom.min) else var)
        vmap = {iv.var: n.var for iv, n in zip(covered, ivars)}
        old_idx = [substitute(ix, vmap) for ix in pattern]
        new_idx = [n.var for n in ivars]
        if kind == "read":
            store = BufferStore(new_buf, E.BufferLoad(buf, old_idx), new_idx)
            reads, writes = [BufferRegion.from_point(buf, old_idx)], [BufferRegion.from_point(new_buf, new_idx)]
        else:
            store = BufferStore(buf, E.BufferLoad(new_buf, new_idx), old_idx)
            reads, writes = [BufferRegion.from_point(new_buf, new_idx)], [BufferRegion.from_point(buf, old_idx)]
        copy: Stmt = BlockRealize(values, True, Block(ivars, reads, writes, name, store))
        for var, ext in reversed(loops):
            copy = For(var, 0, ext, body=copy)
        # The block itself accesses the new buffer at its iterators.
        in_block = [iv.var for iv in covered]
        new_block = _reindex_accesses(blk, buf, new_buf, in_block)
        repl = {id(realize): realize.replace(block=new_block)}
        new_children = [replace_many(ch, repl) for ch in children]
        new_children.insert(pos if kind == "read" else pos + 1, copy)
        self._commit_scope(func_name, tree, scope, new_children, [new_buf])
        return BlockRV(name, func_name)

    @primitive
    def set_scope(self, block: BlockRV, buffer_index: int, storage_scope: str) -> None:
        """Set the storage scope of the ``buffer_index``-th write buffer of ``block`` (which must be
        allocated inside the function, not a parameter).

        Before: ``B = T.alloc_buffer((128, 128))``; after ``sch.set_scope(sch.get_block("B"), 0,
        "shared")``: ``B = T.alloc_buffer((128, 128), scope="shared")`` and every access uses it.
        """
        func_name, tree, realize = self._block(block)
        buf = self._alloc_write_buffer(func_name, tree, realize, buffer_index, "set_scope")
        if buf.scope() == storage_scope:
            return
        new = Buffer(E.Var(buf.data.name, E.PointerType(buf.dtype, storage_scope)), buf.dtype, buf.shape, buf.strides,
                     buf.elem_offset, buf.name, buf.data_alignment, buf.offset_factor, buf.buffer_type,
                     buf.axis_separators)
        self._set_body(func_name, replace_buffers(tree.root, {id(buf): new}))

    @primitive
    def storage_align(self, block: BlockRV, buffer_index: int, axis: int, factor: int, offset: int) -> None:
        """Ask lowering to pad the stride of ``axis`` of the ``buffer_index``-th write buffer of
        ``block`` so that ``stride % factor == offset`` (avoids shared-memory bank conflicts).

        Recorded as the block annotation ``buffer_dim_align``: a list of
        ``[buffer_index, axis, factor, offset]``, e.g. after
        ``sch.storage_align(sch.get_block("B"), 0, axis=0, factor=128, offset=1)`` the block has
        ``T.block_attr({"buffer_dim_align": [[0, 0, 128, 1]]})``.
        """
        func_name, tree, realize = self._block(block)
        buf = self._alloc_write_buffer(func_name, tree, realize, buffer_index, "storage_align")
        axis, factor, offset = self._int(axis, "axis"), self._int(factor, "factor"), self._int(offset, "offset")
        ndim = len(buf.shape)
        if not -ndim <= axis < ndim:
            raise self._error(f"storage_align: axis {axis} is out of range for {buf.name!r} with {ndim} dimensions",
                              realize)
        axis %= ndim
        if factor <= 0:
            raise self._error(f"storage_align: factor must be positive, got {factor}", realize)
        if not 0 <= offset < factor:
            raise self._error(f"storage_align: offset must be in [0, factor), got {offset} with factor {factor}",
                              realize)
        bi = self._int(buffer_index, "buffer_index")
        entries = [list(e) for e in realize.block.annotations.get("buffer_dim_align", [])]
        entries = [e for e in entries if not (int(e[0]) == bi and int(e[1]) == axis)]
        entries.append([bi, axis, factor, offset])
        annotations = dict(realize.block.annotations)
        annotations["buffer_dim_align"] = entries
        new_block = realize.block.replace(annotations=annotations)
        self._replace(func_name, realize.block, new_block)

    def _alloc_write_buffer(self, func_name, tree, realize, buffer_index, what) -> Buffer:
        writes = realize.block.writes
        i = self._int(buffer_index, "buffer_index")
        if not 0 <= i < len(writes):
            raise self._error(f"{what}: block {realize.block.name_hint!r} has {len(writes)} write buffers; "
                              f"buffer_index {i} is out of range", realize)
        buf = writes[i].buffer
        if any(b is buf for b in self._func(func_name).buffer_map.values()):
            raise self._error(f"{what}: buffer {buf.name!r} is a function parameter; only buffers allocated with "
                              "T.alloc_buffer inside the function can change", realize)
        return buf


def _is_zero(expr) -> bool:
    return isinstance(expr, E.IntImm) and expr.value == 0


def _reindex_accesses(blk: Block, buf: Buffer, new_buf: Buffer, new_idx: list) -> Block:
    from ...ir.functor import ir_transform

    def post(node):
        if isinstance(node, E.BufferLoad) and node.buffer is buf:
            return E.BufferLoad(new_buf, new_idx)
        if isinstance(node, BufferStore) and node.buffer is buf:
            return BufferStore(new_buf, node.value, new_idx)
        return None

    body = ir_transform(blk.body, None, post, ["tir.BufferLoad", "tir.BufferStore"])
    init = None if blk.init is None else ir_transform(blk.init, None, post, ["tir.BufferLoad", "tir.BufferStore"])
    point = BufferRegion.from_point(new_buf, new_idx)
    reads = tuple(point if r.buffer is buf else r for r in blk.reads)
    writes = tuple(point if r.buffer is buf else r for r in blk.writes)
    return blk.replace(body=body, init=init, reads=reads, writes=writes)
