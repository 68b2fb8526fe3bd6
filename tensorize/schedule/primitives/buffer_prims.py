"""Schedule primitives that rework one buffer of a block without a cache copy's placement rules:
reindex (access through a buffer indexed by the block iterators), set_scope and storage_align.

Reindex stages go right before the block (a read) or right after it (a write).
"""
from __future__ import annotations

from ...ir import expr as E
from ...ir.buffer import Buffer
from ...ir.functor import post_order_visit, substitute
from ...ir.structural import structural_equal
from ...ir.stmt import Block, BlockRealize, BufferRegion, BufferStore, For, Stmt
from ..base import primitive
from ..tree import replace_many
from ..surgery import replace_buffers
from ..rv import BlockRV
from .cache import Cache, _parse_buffer_arg, new_buffer_like, unique_block_name
from .cache_placement import storage_scope_error


class BufferPrimitives(Cache):
    """reindex, set_scope, storage_align (on top of the cache primitives' helpers)."""

    @primitive
    def reindex(self, block: BlockRV, buffer) -> BlockRV:
        """Access ``buffer`` (``("read", i)``, ``("write", i)``, a Buffer or its name) of ``block``
        through a new buffer ``<buffer>_reindex`` indexed directly by the block iterators that appear
        in its indices (in block order); a copy block converts between the two layouts.

        Parameters
        ----------
        block : BlockRV
            The block whose access is reindexed.
        buffer : tuple of (str, int), Buffer or str
            The buffer: ``("read", i)``, ``("write", i)``, the Buffer or its name.

        Returns
        -------
        BlockRV
            The new copy block.

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
        from ...arith import Analyzer
        from ...ir.functor import collect_vars

        ana = Analyzer()  # as TVM: an iterator the simplified indices do not use is no axis (co // 64 -> 0)
        for iv in blk.iter_vars:
            ana.bind(iv.var, iv.dom)
        pattern = [ana.simplify(ix) for ix in pattern]
        used = {id(v) for ix in pattern for v in collect_vars(ix)}
        inner: set[int] = set()  # variables the block's body defines (inner loops, nested blocks' iterators)

        def defined(node):
            if isinstance(node, For):
                inner.add(id(node.loop_var))
            elif isinstance(node, Block):
                inner.update(id(iv.var) for iv in node.iter_vars)

        post_order_visit(blk.body, defined)
        if used & inner:
            raise self._error(f"reindex: block {blk.name_hint!r} accesses {buf.name!r} through variables of its inner "
                              "loops or nested blocks; reindex the inner block instead", realize)
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

        Parameters
        ----------
        block : BlockRV
            The block that writes the buffer.
        buffer_index : int
            Which write buffer of ``block``.
        storage_scope : str
            The new scope.

        Before: ``B = T.alloc_buffer((128, 128))``; after ``sch.set_scope(sch.get_block("B"), 0,
        "shared")``: ``B = T.alloc_buffer((128, 128), scope="shared")`` and every access uses it.
        """
        func_name, tree, realize = self._block(block)
        why = storage_scope_error(storage_scope)
        if why is not None:
            raise self._error(f"set_scope: {why}", realize)
        buf = self._alloc_write_buffer(func_name, tree, realize, buffer_index, "set_scope")
        if buf.scope() == storage_scope:
            return
        new = Buffer(E.Var(buf.data.name, E.PointerType(buf.dtype, storage_scope)), buf.dtype, buf.shape, buf.strides,
                     buf.elem_offset, buf.name, buf.data_alignment, buf.offset_factor, buf.buffer_type,
                     buf.axis_separators)
        swap = {id(buf): new}
        # As TVM: the match_buffer views of the buffer take the scope too.
        def collect(node):
            if isinstance(node, Block):
                for m in node.match_buffers:
                    if m.source.buffer is buf:
                        v = m.buffer
                        swap[id(v)] = v.replace(data=E.Var(v.data.name, E.PointerType(v.dtype, storage_scope)))

        post_order_visit(tree.root, collect)
        self._set_body(func_name, replace_buffers(tree.root, swap))

    @primitive
    def storage_align(self, block: BlockRV, buffer_index: int, axis: int, factor: int, offset: int) -> None:
        """Ask lowering to pad the stride of ``axis`` of the ``buffer_index``-th write buffer of
        ``block`` so that ``stride % factor == offset`` (avoids shared-memory bank conflicts).

        Recorded as the block annotation ``buffer_dim_align``: a list of
        ``[buffer_index, axis, factor, offset]``, e.g. after
        ``sch.storage_align(sch.get_block("B"), 0, axis=0, factor=128, offset=1)`` the block has
        ``T.block_attr({"buffer_dim_align": [[0, 0, 128, 1]]})``.

        Parameters
        ----------
        block : BlockRV
            The block that writes the buffer.
        buffer_index : int
            Which write buffer of ``block``.
        axis : int
            The axis whose stride is padded.
        factor : int
            The stride's alignment factor.
        offset : int
            The wanted remainder ``stride % factor``.
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
        bi = (self._buffer_index(realize, buffer_index, "write", "storage_align")
              if isinstance(buffer_index, (Buffer, str)) else self._int(buffer_index, "buffer_index"))
        entries = [list(e) for e in realize.block.annotations.get("buffer_dim_align", [])]
        entries = [e for e in entries if not (int(e[0]) == bi and int(e[1]) == axis)]
        entries.append([bi, axis, factor, offset])
        annotations = dict(realize.block.annotations)
        annotations["buffer_dim_align"] = entries
        new_block = realize.block.replace(annotations=annotations)
        self._replace(func_name, realize.block, new_block)

    def _alloc_write_buffer(self, func_name, tree, realize, buffer_index, what) -> Buffer:
        if isinstance(buffer_index, (Buffer, str)):  # TVM: the write buffer by name or Buffer too
            buffer_index = self._buffer_index(realize, buffer_index, "write", what)
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
