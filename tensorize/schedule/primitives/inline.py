"""Schedule primitives that inline blocks: compute_inline, reverse_compute_inline."""
from __future__ import annotations

from ...ir import expr as E
from ...ir.functor import StmtExprMutator, post_order_visit, substitute
from ...ir.stmt import BlockRealize, BufferStore, For, SeqStmt
from ..analysis import DATA_PAR, detect_block_regions
from ..base import ScheduleBase, primitive
from ..rv import BlockRV
from ..tree import replace_many


def _loads_of(node, buffer) -> list[E.BufferLoad]:
    found: list[E.BufferLoad] = []
    post_order_visit(node, lambda n: found.append(n) if isinstance(n, E.BufferLoad) and n.buffer is buffer else None)
    return found


class _InlineRewriter(StmtExprMutator):
    """Replaces loads of ``buffer`` by ``value_of(indices)``, drops ``buffer``'s allocation and
    refreshes the read regions of blocks whose reads change."""

    _methods: dict = {}

    def __init__(self, buffer, value_of, new_read_buffers):
        self.buffer, self.value_of, self.new_read_buffers = buffer, value_of, new_read_buffers

    def visit_buffer_load_(self, op):
        op = super().visit_buffer_load_(op)
        if op.buffer is self.buffer:
            return self.value_of(op.indices)
        return op

    def visit_block_(self, op):
        new = super().visit_block_(op)
        changes = {}
        if any(b is self.buffer for b in new.alloc_buffers):
            changes["alloc_buffers"] = tuple(b for b in new.alloc_buffers if b is not self.buffer)
        if any(r.buffer is self.buffer for r in new.reads):
            detected = {id(r.buffer): r for r in detect_block_regions(new)[0]}
            reads, seen = [], set()
            for r in new.reads:
                if r.buffer is self.buffer:
                    continue
                reads.append(detected.get(id(r.buffer), r) if id(r.buffer) in self.new_read_buffers else r)
                seen.add(id(r.buffer))
            for key, r in detected.items():
                if key in self.new_read_buffers and key not in seen:
                    reads.append(r)
            changes["reads"] = tuple(reads)
        return new.replace(**changes) if changes else new


def _removable_root(index, realize):
    """The statement to delete to remove ``realize``: it and the loops that hold only it."""
    stmt = realize
    parent = index.parent_of(stmt)
    while isinstance(parent, For) and parent.body is stmt:
        stmt, parent = parent, index.parent_of(parent)
    if not isinstance(parent, SeqStmt):
        return None
    return stmt


class Inline(ScheduleBase):
    """compute_inline, reverse_compute_inline."""

    def _check_simple_spatial(self, realize: BlockRealize, what: str) -> BufferStore:
        blk = realize.block
        if blk.init is not None or any(iv.iter_type != DATA_PAR for iv in blk.iter_vars):
            raise self._error(f"{what} needs a spatial block (no reduction iterators, no init); block "
                              f"{blk.name_hint!r} is not", blk)
        if not isinstance(blk.body, BufferStore) or blk.alloc_buffers or blk.match_buffers:
            raise self._error(f"{what} needs a block whose body is a single buffer store; block "
                              f"{blk.name_hint!r} has more", blk)
        return blk.body

    def _is_output(self, func_name, buffer) -> bool:
        return any(b is buffer for b in self._func(func_name).buffer_map.values())

    def _writers(self, index, buffer) -> list[BlockRealize]:
        return [r for realizes in index.blocks.values() for r in realizes
                if any(w.buffer is buffer for w in r.block.writes)]

    @primitive
    def compute_inline(self, block: BlockRV) -> None:
        """Inline a spatial block into its consumers: every read of the buffer it writes is replaced
        by the expression it stores, and the block and the buffer's allocation disappear.

        The block must be spatial with a body ``B[v0, v1, ...] = f(v0, v1, ...)`` whose left-hand
        indices are distinct block iterators, must not read ``B``, and ``B`` must not be a
        function argument (an output block cannot be inlined).

        Example::

            # before
            for i, j in T.grid(128, 128):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2)
            for i, j in T.grid(128, 128):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = B[vi, vj] + T.float32(1)

            sch.compute_inline(sch.get_block("B"))

            # after
            for i, j in T.grid(128, 128):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)
        """
        func_name, index, realize = self._block(block)
        store = self._check_simple_spatial(realize, "compute_inline")
        blk, buf = realize.block, store.buffer
        iter_ids = {id(iv.var) for iv in blk.iter_vars}
        idx_vars = list(store.indices)
        if not all(isinstance(i, E.Var) and id(i) in iter_ids for i in idx_vars) or \
                len({id(i) for i in idx_vars}) != len(idx_vars):
            raise self._error("compute_inline needs the body in the form B[i, j, ...] = f(i, j, ...) where the "
                              f"indices on the left are distinct block iterators; block {blk.name_hint!r} stores "
                              f"to {buf.name}{list(map(str, idx_vars))}", blk)
        used = {id(v) for v in _vars_of(store.value)}
        if not used & iter_ids <= {id(i) for i in idx_vars}:
            raise self._error(f"compute_inline: the value block {blk.name_hint!r} stores uses a block iterator that "
                              "is not among the store indices, so it cannot be expressed at the consumer", blk)
        if _loads_of(store.value, buf):
            raise self._error(f"compute_inline: block {blk.name_hint!r} reads the buffer {buf.name} it writes", blk)
        if self._is_output(func_name, buf):
            raise self._error(f"cannot inline block {blk.name_hint!r}: it writes {buf.name}, an argument of the "
                              "function (an output block); only intermediate buffers can be inlined", blk)
        writers = self._writers(index, buf)
        if len(writers) != 1:
            raise self._error(f"compute_inline: buffer {buf.name} is written by {len(writers)} blocks; inline "
                              "needs a single producer", blk)
        removable = _removable_root(index, realize)
        if removable is None:
            raise self._error(f"compute_inline: block {blk.name_hint!r} is the only statement of its scope and "
                              "cannot be removed", blk)
        # Substituting the value's iterators with the load's indices (and any loop variable the
        # binding would bring along is not needed: the value uses block iterators only).
        value = store.value

        def value_of(indices):
            return substitute(value, {v: i for v, i in zip(idx_vars, indices)})

        read_buffers = {id(r.buffer) for r in blk.reads}
        body = replace_many(index.root, {id(removable): None})
        body = _InlineRewriter(buf, value_of, read_buffers).visit(body)
        self._set_body(func_name, body)

    @primitive
    def reverse_compute_inline(self, block: BlockRV) -> None:
        """Inline a consumer block into its producer: the producer computes the consumer's value and
        writes the consumer's buffer directly; the consumer and the intermediate buffer disappear.

        The consumer must be spatial with a single store that reads the producer's buffer once,
        at indices that are distinct block iterators covering all its iterators over the whole
        buffer; the producer must be a single spatial block writing that buffer, which must not be
        a function argument nor read by anyone else.

        Example::

            # before
            for i, j in T.grid(128, 128):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2)
            for i, j in T.grid(128, 128):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = B[vi, vj] + T.float32(1)

            sch.reverse_compute_inline(sch.get_block("C"))

            # after
            for i, j in T.grid(128, 128):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)
        """
        func_name, index, realize = self._block(block)
        store = self._check_simple_spatial(realize, "reverse_compute_inline")
        blk = realize.block
        candidates = []
        for r in blk.reads:
            writers = self._writers(index, r.buffer)
            if writers and r.buffer is not store.buffer:
                candidates.append((r.buffer, writers))
        if len(candidates) != 1:
            raise self._error(f"reverse_compute_inline needs a consumer that reads exactly one buffer produced by "
                              f"another block; block {blk.name_hint!r} reads {len(candidates)}", blk)
        buf, writers = candidates[0]
        if len(writers) != 1:
            raise self._error(f"reverse_compute_inline: buffer {buf.name} is written by {len(writers)} blocks", blk)
        producer = writers[0]
        p_store = self._check_simple_spatial(producer, "reverse_compute_inline (producer)")
        if p_store.buffer is not buf:
            raise self._error(f"reverse_compute_inline: the producer {producer.block.name_hint!r} does not store to "
                              f"{buf.name} in its body", producer)
        if self._is_output(func_name, buf):
            raise self._error(f"reverse_compute_inline: {buf.name} is a function argument; it cannot be removed", blk)
        readers = [r for realizes in index.blocks.values() for r in realizes
                   if any(x.buffer is buf for x in r.block.reads)]
        if len(readers) != 1:
            raise self._error(f"reverse_compute_inline: buffer {buf.name} has {len(readers)} consumers; the block "
                              "to inline must be the only one", blk)
        loads = _loads_of(store.value, buf)
        iter_ids = {id(iv.var): iv for iv in blk.iter_vars}
        if len(loads) != 1:
            raise self._error(f"reverse_compute_inline needs a single read of {buf.name} in the consumer; block "
                              f"{blk.name_hint!r} has {len(loads)}", blk)
        load = loads[0]
        if not all(isinstance(i, E.Var) and id(i) in iter_ids for i in load.indices) or \
                len({id(i) for i in load.indices}) != len(load.indices) or len(load.indices) != len(blk.iter_vars):
            raise self._error(f"reverse_compute_inline needs the read of {buf.name} indexed by distinct block "
                              "iterators covering all of the consumer's iterators", blk)
        for axis, i in enumerate(load.indices):
            dom = iter_ids[id(i)].dom
            if not (isinstance(dom.min, E.IntImm) and dom.min.value == 0 and isinstance(dom.extent, E.IntImm)
                    and isinstance(buf.shape[axis], E.IntImm) and dom.extent.value == buf.shape[axis].value):
                raise self._error(f"reverse_compute_inline needs the consumer to cover all of {buf.name}; iterator "
                                  f"{i.name} does not span axis {axis}", blk)
        if not (isinstance(realize.predicate, E.IntImm) and realize.predicate.value):
            raise self._error("reverse_compute_inline needs a consumer without a predicate", blk)
        removable = _removable_root(index, realize)
        if removable is None:
            raise self._error(f"reverse_compute_inline: block {blk.name_hint!r} cannot be removed from its scope", blk)
        vmap = {v: p for v, p in zip(load.indices, p_store.indices)}
        new_value = substitute(_replace_load(store.value, buf, p_store.value), vmap)
        new_store = BufferStore(store.buffer, new_value, [substitute(i, vmap) for i in store.indices])
        p_blk = producer.block.replace(body=new_store)
        reads, writes = detect_block_regions(p_blk)
        p_blk = p_blk.replace(reads=tuple(reads), writes=tuple(writes))
        body = replace_many(index.root, {id(removable): None, id(producer): producer.replace(block=p_blk)})
        body = _InlineRewriter(buf, lambda idx: E.BufferLoad(buf, idx), set()).visit(body)
        self._set_body(func_name, body)


def _vars_of(expr):
    out = []
    post_order_visit(expr, lambda n: out.append(n) if isinstance(n, E.Var) else None)
    return out


def _replace_load(expr, buffer, value):
    class R(StmtExprMutator):
        _methods: dict = {}

        def visit_buffer_load_(self, op):
            return value if op.buffer is buffer else super().visit_buffer_load_(op)

    return R().visit(expr)

