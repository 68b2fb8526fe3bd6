"""Schedule primitives: cache_read, cache_write (reindex, set_scope, storage_align: ``buffer_prims``).

Each new buffer is allocated in the scope block of the block it serves; copy blocks are named
after the buffer and scope as TVM does (``A_shared``, ``C_local``, ``A_wmma.matrix_a``,
``A_reindex``). Cache stages are placed as TVM places them (see ``cache_placement``: after the writer,
under the loops it shares with the first consumer); reindex stages go right before the block
(a read) or right after it (a write).
"""
from __future__ import annotations

from ...ir import expr as E
from ...ir.buffer import Buffer
from ...ir.stmt import Block
from ..base import ScheduleBase, primitive
from .cache_placement import (
    PlacementError, after_stage, common_loop, compact_copy_stage, copy_stage, full_region, insert_stage, reads_buffer,
    region_of, relax_below, scope_children, stage_analyzer, stage_location, storage_scope_error,
    writes_buffer,
)
from ..surgery import BufferReplacer, rebuild_scope, scope_parts, top_child
from .cache_compact import OffsetReplacer, compact_region
from ..rv import BlockRV


def new_buffer_like(buf: Buffer, name: str, scope: str | None = None, shape=None, dtype: str | None = None) -> Buffer:
    """A fresh compact buffer like ``buf`` (new data pointer) with another name, scope or shape.

    Parameters
    ----------
    buf : Buffer
        The buffer to copy the declaration of.
    name : str
        The new buffer's name.
    scope : str, optional
        Its storage scope (default: ``buf``'s).
    shape : list of PrimExpr, optional
        Its shape (default: ``buf``'s).
    dtype : str, optional
        Its element type (default: ``buf``'s).

    Returns
    -------
    Buffer
        The new buffer.
    """
    dtype = dtype or buf.dtype
    data = E.Var(name, E.PointerType(dtype, scope if scope is not None else buf.scope()))
    return Buffer(data, dtype, buf.shape if shape is None else shape, name=name,
                  data_alignment=buf.data_alignment, offset_factor=buf.offset_factor)


def unique_block_name(tree, base: str, taken=()) -> str:
    """``base``, or ``base_1``, ``base_2``, ... when a block of the function (or a name in ``taken``,
    of blocks about to be added) already has that name.

    Parameters
    ----------
    tree : StmtIndex
        The index of the function's statements.
    base : str
        The wanted name.
    taken : collection of str
        Names of blocks the primitive is adding along with this one.

    Returns
    -------
    str
        A block name unused in the function.
    """
    name, n = base, 0
    while name in tree.blocks or name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


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


class _CacheSwapper(BufferReplacer):
    """Swaps a buffer for its cache in the blocks that now use the cache: loads, stores, regions,
    match_buffers, and, as TVM, the buffer's data pointer in opaque accesses
    (``T.tvm_access_ptr(..., A.data, ...)`` becomes ``A_global.data``)."""

    def __init__(self, old: Buffer, new: Buffer):
        super().__init__({id(old): new})
        self.old_data, self.new_data = old.data, new.data

    def visit_var_(self, op):
        return self.new_data if op is self.old_data else op


class Cache(ScheduleBase):
    """cache_read, cache_write, reindex, set_scope, storage_align."""

    # -- helpers -------------------------------------------------------------------------------
    def _scope_parts(self, tree, realize):
        return scope_parts(tree, realize)

    def _top_child(self, tree, children, stmt) -> int:
        return top_child(tree, children, stmt)

    def _commit_scope(self, func_name, tree, scope, children, new_buffers) -> None:
        self._set_body(func_name, rebuild_scope(tree, scope, children, new_buffers))

    def _block_arg(self, block) -> BlockRV:
        """A BlockRV from a handle or a block name (TVM accepts both)."""
        if isinstance(block, str):
            return BlockRV(block, self._func_name(None))
        return block

    def _buffer_index(self, realize, arg, kind: str, what: str) -> int:
        """The index among the block's reads/writes of ``arg`` (an index, a Buffer or a buffer name)."""
        regions = realize.block.reads if kind == "read" else realize.block.writes
        if isinstance(arg, (Buffer, str)):
            for i, r in enumerate(regions):
                if r.buffer is arg or (isinstance(arg, str) and r.buffer.name == arg):
                    return i
            name = arg if isinstance(arg, str) else arg.name
            raise self._error(f"{what}: block {realize.block.name_hint!r} does not {kind} a buffer named {name!r}; it "
                              f"{kind}s {[r.buffer.name for r in regions]}", realize)
        i = self._int(arg, f"{kind}_buffer_index")
        if not 0 <= i < len(regions):
            raise self._error(f"{what}: block {realize.block.name_hint!r} has {len(regions)} {kind} buffers; "
                              f"{kind}_buffer_index {i} is out of range", realize)
        return i

    def _cache_target(self, block, buffer_index, kind: str, storage_scope: str, what: str):
        """The block, buffer and scope a cache primitive works on: (func_name, tree, realize, buffer index,
        buffer, scope realize, its child blocks), after the checks every cache primitive makes."""
        func_name, tree, realize = self._block(self._block_arg(block))
        i = self._buffer_index(realize, buffer_index, kind, what)
        buf = (realize.block.reads if kind == "read" else realize.block.writes)[i].buffer
        scope, siblings = self._cache_setup(realize, tree, storage_scope, what)
        return func_name, tree, realize, i, buf, scope, siblings

    def _cache_setup(self, realize, tree, storage_scope: str, what: str):
        """Checks shared by cache_read/cache_write; returns (scope realize, its child blocks)."""
        why = storage_scope_error(storage_scope)
        if why is not None:
            raise self._error(f"{what}: {why}", realize)
        scope = tree.parent_block_realize(realize)
        return scope, tree.child_block_realizes(scope if scope is not None else tree.root)

    def _consumer_arg(self, blocks, tree, scope, buf, what: str, realize) -> list:
        """Resolve ``consumer_blocks`` to realizes that read ``buf`` inside the scope."""
        out = []
        for b in blocks or []:
            c = self._block(self._block_arg(b))[2]
            if scope is not None and not tree.is_ancestor(scope, c):
                raise self._error(f"{what}: consumer block {c.block.name_hint!r} is not in the scope block "
                                  f"{scope.block.name_hint!r} of {realize.block.name_hint!r}", c)
            if not reads_buffer(c, buf):
                raise self._error(f"{what}: consumer block {c.block.name_hint!r} does not read buffer {buf.name!r}", c)
            out.append(c)
        return out

    def _only_writer(self, siblings, buf, what: str, realize):
        writers = [s for s in siblings if writes_buffer(s, buf)]
        if len(writers) > 1:
            raise self._error(f"{what}: the buffer {buf.name!r} is expected to be written by a single block, but "
                              f"{len(writers)} blocks write it ({[w.block.name_hint for w in writers]}); apply "
                              f"{what} before primitives that split the writer (decompose_reduction, rfactor)", realize)
        return writers[0] if writers else None

    def _place(self, tree, scope, writer, related, buf, what: str):
        """(loc, pos) of the stage after ``writer`` and before the first of ``related`` (see cache_placement)."""
        if writer is None:
            return None, 0
        if not related:
            return None, len(scope_children(tree, scope, None))
        first = min(related, key=lambda r: tree.order[id(r)])
        if tree.precedes(first, writer):
            raise self._error(f"{what}: block {first.block.name_hint!r} reads {buf.name!r} "
                              f"before its writer {writer.block.name_hint!r} runs, so no copy placed after the writer "
                              "can serve it; leave it out of consumer_blocks", first)
        try:
            return stage_location(tree, scope, writer, first)
        except PlacementError as err:
            raise self._error(f"{what}: {err}", first) from None

    # -- primitives ----------------------------------------------------------------------------
    @primitive
    def cache_read(self, block: BlockRV | str, read_buffer_index, storage_scope: str,
                   consumer_blocks: list[BlockRV | str] | None = None) -> BlockRV:
        """Read the ``read_buffer_index``-th read buffer of ``block`` (an index, the Buffer or its
        name) through a new buffer ``<buffer>_<scope>`` in ``storage_scope``, filled by a new copy
        block of that name. The readers in the scope (or only ``consumer_blocks``) read the copy.

        Where the copy goes (as TVM): for a buffer written in the scope, under the lowest loop that
        holds both its writer and the first consumer, right before the consumer's statement; it copies
        what the writer writes in one iteration of that loop. For a buffer only read in the scope (a
        function input), at the start of the scope, copying the region the scope reads (the whole
        buffer at the root); move it with ``compute_at`` to shrink it to a tile.

        Parameters
        ----------
        block : BlockRV or str
            The consumer block (or its name).
        read_buffer_index : int, Buffer or str
            Which read buffer of ``block`` to cache.
        storage_scope : str
            The scope of the copy (``"global"``, ``"shared"``, ``"local"``, ...).
        consumer_blocks : list of BlockRV or str, optional
            The readers that read the copy (default: every reader in the scope).

        Returns
        -------
        BlockRV
            The new copy block.

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

        An intermediate buffer produced and consumed under a shared loop (after ``compute_at``) is
        copied inside that loop, one row per iteration here::

            for i in range(128):
                for ax0 in range(128):
                    with T.block("B"):
                        ...
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for ax0 in range(128):
                    with T.block("B_shared"):
                        v0 = T.axis.spatial(128, i)
                        v1 = T.axis.spatial(128, ax0)
                        B_shared[v0, v1] = B[v0, v1]
                for j in range(128):
                    with T.block("C"):
                        ...
                        C[vi, vj] = B_shared[vi, vj] + T.float32(1)

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul())
        >>> sch.get(sch.cache_read(sch.get_block("C"), 0, "local")).name_hint
        'A_local'
        """
        what = "cache_read"
        func_name, tree, realize, i, buf, scope, siblings = self._cache_target(
            block, read_buffer_index, "read", storage_scope, what)
        writer = self._only_writer(siblings, buf, what, realize)
        if writer is realize:
            raise self._error(f"{what}: block {realize.block.name_hint!r} both reads and writes {buf.name!r}, so its "
                              "reads cannot come from a copy made after it; use cache_write for a buffer a block "
                              "updates", realize)
        chosen = self._consumer_arg(consumer_blocks, tree, scope, buf, what, realize)
        consumers = chosen or [s for s in siblings if s is not writer and reads_buffer(s, buf)]
        if writer is not None and any(c is writer for c in chosen):
            raise self._error(f"{what}: consumer block {writer.block.name_hint!r} writes {buf.name!r}; only readers "
                              "can read the copy", writer)
        if chosen and writer is not None and all(tree.precedes(c, writer) for c in chosen):
            writer = None  # as TVM: the chosen readers all run before the (later) writer: copy at the start
        related = chosen or [s for s in siblings if reads_buffer(s, buf) and writer is not None
                             and tree.precedes(writer, s)]
        loc, pos = self._place(tree, scope, writer, related, buf, what)
        children = scope_children(tree, scope, loc)
        late = [c for c in consumers if not after_stage(tree, loc, children, pos, c)]
        if late:
            c = late[0]
            raise self._error(f"{what}: block {c.block.name_hint!r} reads {buf.name!r} before the copy, which must "
                              f"follow the writer {writer.block.name_hint!r}; pass consumer_blocks without it", c)
        if writer is not None:
            region = relax_below(tree, writer, region_of(writer.block.writes, buf), loc)
        else:
            declared = region_of(scope.block.reads, buf) if scope is not None else None
            region = list(declared.region) if declared is not None else full_region(buf)
        name = unique_block_name(tree, f"{buf.name}_{storage_scope}")
        ana = stage_analyzer(tree, scope, loc)
        compact = compact_region(tree, scope, region, ana)
        if compact is not None:  # as TVM: a cache inside a non-root scope is shaped like its region
            cache = new_buffer_like(buf, f"{buf.name}_{storage_scope}", storage_scope,
                                    shape=[r.extent for r in compact])
            stage = compact_copy_stage(name, buf, cache, compact, "dst")
            shift = OffsetReplacer(buf, cache, [r.min for r in compact])
            repl = {id(c): shift.visit(c) for c in consumers}
        else:
            cache = new_buffer_like(buf, f"{buf.name}_{storage_scope}", storage_scope)
            stage = copy_stage(name, buf, cache, region, ana)
            swap = _CacheSwapper(buf, cache)
            repl = {id(c): swap.visit(c) for c in consumers}
        self._set_body(func_name, insert_stage(tree, scope, loc, pos, stage, repl, [cache]))
        return BlockRV(name, func_name)

    @primitive
    def cache_write(self, block: BlockRV | str, write_buffer_index, storage_scope: str,
                    consumer_blocks: list[BlockRV | str] | None = None) -> BlockRV:
        """Make ``block`` write its ``write_buffer_index``-th write buffer (an index, the Buffer or its
        name) into a new buffer ``<buffer>_<scope>`` in ``storage_scope``; a new copy block of that
        name writes the values back. ``consumer_blocks`` read the new buffer directly.

        Where the copy goes (as TVM): under the lowest loop that holds both ``block`` and the first
        block that still reads the original buffer, right before that reader's statement, copying
        what ``block`` writes in one iteration of that loop; at the end of the scope when no block
        reads the original buffer (an output). ``reverse_compute_at`` then moves it into a tile.

        Parameters
        ----------
        block : BlockRV or str
            The producer block (or its name).
        write_buffer_index : int, Buffer or str
            Which write buffer of ``block`` to cache.
        storage_scope : str
            The scope of the new buffer.
        consumer_blocks : list of BlockRV or str, optional
            Readers that read the new buffer directly.

        Returns
        -------
        BlockRV
            The new copy block that writes the values back.

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

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul())
        >>> sch.get(sch.cache_write(sch.get_block("C"), 0, "local")).name_hint
        'C_local'
        """
        what = "cache_write"
        func_name, tree, realize, i, buf, scope, siblings = self._cache_target(
            block, write_buffer_index, "write", storage_scope, what)
        self._only_writer(siblings, buf, what, realize)
        if realize.block.init is None and any(r.buffer is buf for r in realize.block.reads) and any(
                iv.iter_type == E.IterVar.CommReduce for iv in realize.block.iter_vars):
            raise self._error(f"{what}: block {realize.block.name_hint!r} updates {buf.name!r} from its previous "
                              "value and has no init, so a new cache would start uninitialized; cache the block "
                              "that holds the init (the outer block after blockize) instead", realize)
        chosen = self._consumer_arg(consumer_blocks, tree, scope, buf, what, realize)
        for c in chosen:
            if c is realize or not tree.precedes(realize, c):
                raise self._error(f"{what}: consumer block {c.block.name_hint!r} does not come after "
                                  f"{realize.block.name_hint!r}, so it cannot read what the block writes", c)
        chosen_ids = {id(c) for c in chosen}
        others = [s for s in siblings if s is not realize and id(s) not in chosen_ids and reads_buffer(s, buf)]
        related = [s for s in others if tree.precedes(realize, s)]
        loc, pos = self._place(tree, scope, realize, related, buf, what)
        # A reader before the writer sees the written values only through a loop-carried dependence;
        # the copy must then run inside that loop too.
        for s in others:
            if tree.precedes(s, realize):
                shared = common_loop(tree, s, realize)
                if shared is not None and not (loc is shared or (loc is not None and tree.is_ancestor(shared, loc))):
                    raise self._error(f"{what}: block {s.block.name_hint!r} reads {buf.name!r} in a later iteration "
                                      f"of loop {shared.loop_var.name} than {realize.block.name_hint!r} writes it, but "
                                      "the copy back would run after that loop", s)
        region = relax_below(tree, realize, region_of(realize.block.writes, buf), loc)
        name = unique_block_name(tree, f"{buf.name}_{storage_scope}")
        ana = stage_analyzer(tree, scope, loc)
        compact = compact_region(tree, scope, region, ana)
        if compact is not None:  # as TVM: a cache inside a non-root scope is shaped like its region
            cache = new_buffer_like(buf, f"{buf.name}_{storage_scope}", storage_scope,
                                    shape=[r.extent for r in compact])
            stage = compact_copy_stage(name, cache, buf, compact, "src")
            shift = OffsetReplacer(buf, cache, [r.min for r in compact])
            repl = {id(c): shift.visit(c) for c in [realize] + chosen}
        else:
            cache = new_buffer_like(buf, f"{buf.name}_{storage_scope}", storage_scope)
            stage = copy_stage(name, cache, buf, region, ana)
            swap = _CacheSwapper(buf, cache)
            repl = {id(c): swap.visit(c) for c in [realize] + chosen}
        self._set_body(func_name, insert_stage(tree, scope, loc, pos, stage, repl, [cache]))
        return BlockRV(name, func_name)
