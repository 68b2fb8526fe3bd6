"""Schedule primitives that inline blocks: compute_inline, reverse_compute_inline."""
from __future__ import annotations

from ...ir import expr as E
from ...ir.functor import StmtExprMutator, post_order_visit, substitute
from ...ir.structural import structural_equal
from ...ir.stmt import Block, BlockRealize, BufferStore, For, SeqStmt
from ...arith import Analyzer
from ...arith.linear import affine_lin
from ...arith.block_regions import detect_block_regions
from ..analysis import DATA_PAR, simplify
from ..base import ScheduleBase, primitive
from ..error import ScheduleError
from ..rv import BlockRV
from ..tree import replace_many


def _loads_of(node, buffer) -> list[E.BufferLoad]:
    found: list[E.BufferLoad] = []
    post_order_visit(node, lambda n: found.append(n) if isinstance(n, E.BufferLoad) and n.buffer is buffer else None)
    return found


def _opaque_user(root, buffer) -> str | None:
    """The name of a block that touches ``buffer`` other than by loads and stores (its data pointer
    in an expression, as ``access_ptr``, or a ``match_buffer`` of it), or None."""
    pending: list[bool] = []
    found: list[str] = []

    def visit(node):
        if node is buffer.data:
            pending.append(True)
        elif isinstance(node, Block):
            if pending or any(m.source.buffer is buffer for m in node.match_buffers):
                found.append(node.name_hint)
            pending.clear()

    post_order_visit(root, visit)
    return found[0] if found else None


class _FoldLoadIndices(StmtExprMutator):
    """Simplifies the indices of the loads of an inlined value (a substituted ``v + 0`` would otherwise stay)."""

    def visit_buffer_load_(self, op):
        op = super().visit_buffer_load_(op)
        indices = [simplify(i) for i in op.indices]
        if all(a is b for a, b in zip(indices, op.indices)):
            return op
        return E.BufferLoad(op.buffer, indices, op.predicate)


class _InlineRewriter(StmtExprMutator):
    """Replaces loads of ``buffer`` by ``value_of(indices)``, drops ``buffer``'s allocation and
    refreshes the read regions of blocks whose reads change."""

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
            # As TVM: the inlined buffer's region is replaced in place by the regions of the buffers
            # the producer reads (those not declared already), detected from the new body.
            detected = {id(r.buffer): r for r in detect_block_regions(new)[0]}
            declared = {id(r.buffer) for r in new.reads}
            reads = []
            for r in new.reads:
                if r.buffer is self.buffer:
                    reads += [d for key, d in detected.items() if key in self.new_read_buffers and key not in declared
                              and all(x.buffer is not d.buffer for x in reads)]
                    continue
                reads.append(detected.get(id(r.buffer), r) if id(r.buffer) in self.new_read_buffers else r)
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

    def _injective_read(self, blk, load, buf) -> list:
        """Per axis of the consumer's read of ``buf``: ``(iter_var, coeff, offset)`` for an index
        ``coeff * v + offset``, or ``(None, 0, offset)`` for a constant index. Raises unless the read
        is an injective affine map of the consumer's iterators whose image lies inside ``buf``."""
        iter_ids = {id(iv.var): iv for iv in blk.iter_vars}
        axes, used = [], {}
        for axis, index in enumerate(load.indices):
            lin = affine_lin(simplify(index))
            terms = list(lin.terms.values()) if lin is not None else None
            if terms is None or len(terms) > 1 or (terms and id(terms[0][0]) not in iter_ids):
                raise self._error(f"reverse_compute_inline needs each index of the read of {buf.name} to be "
                                  f"c * v + d for one block iterator v (or a constant); axis {axis} is {index}", blk)
            if not terms:
                axes.append((None, 0, lin.const))
                continue
            var, coeff = terms[0]
            if id(var) in used:
                raise self._error(f"reverse_compute_inline: iterator {var.name} indexes {buf.name} on axes "
                                  f"{used[id(var)]} and {axis}; the read must use each iterator once", blk)
            used[id(var)] = axis
            axes.append((var, coeff, lin.const))
        missing = [iv.var.name for iv in blk.iter_vars if id(iv.var) not in used]
        if missing:
            raise self._error(f"reverse_compute_inline: iterators {missing} of block {blk.name_hint!r} do not index "
                              f"the read of {buf.name}, so several consumer iterations read the same element and "
                              "the producer cannot compute them all", blk)
        for axis, (var, coeff, offset) in enumerate(axes):
            extent = buf.shape[axis]
            if var is None:
                lo = hi = offset
            else:
                dom = iter_ids[id(var)].dom
                bound = Analyzer().const_int_bound(dom.min), Analyzer().const_int_bound(E.add(dom.min, dom.extent) - 1)
                ends = (coeff * bound[0].min_value + offset, coeff * bound[1].max_value + offset)
                lo, hi = min(ends), max(ends)
            if not (lo >= 0 and isinstance(extent, E.IntImm) and hi < extent.value):
                raise self._error(f"reverse_compute_inline: on axis {axis} the consumer reads {buf.name} at "
                                  f"[{lo}, {hi}], outside the buffer (extent {extent}); the producer computes no "
                                  "value for those iterations", blk)
        return axes

    def _producer_predicate(self, producer: BlockRealize, conds: list, consumer) -> E.PrimExpr:
        """The producer's predicate conjoined with ``conds`` (on producer iterators), rewritten over
        the producer's loops; conditions that always hold are dropped."""
        ana = Analyzer()
        for iv in producer.block.iter_vars:
            ana.bind(iv.var, iv.dom)
        kept = []
        for cond in conds:
            cond = ana.simplify(cond)
            if isinstance(cond, E.IntImm):
                if not cond.value:
                    raise self._error("reverse_compute_inline: the producer never writes an element the consumer "
                                      "reads", consumer)
                continue
            kept.append(cond)
        predicate = producer.predicate
        bindings = {iv.var: v for iv, v in zip(producer.block.iter_vars, producer.iter_values)}
        for cond in kept:
            predicate = E.logical_and(predicate, simplify(substitute(cond, bindings)))
        return predicate

    @primitive
    def compute_inline(self, block: BlockRV) -> None:
        """Inline a spatial block into its consumers: every read of the buffer it writes is replaced
        by the expression it stores, and the block and the buffer's allocation disappear.

        The block must be spatial with a body ``B[v0, v1, ...] = f(v0, v1, ...)`` whose left-hand
        indices are distinct block iterators, must not read ``B``, and ``B`` must not be a
        function argument (an output block cannot be inlined).

        Parameters
        ----------
        block : BlockRV
            The producer block to inline.

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
        opaque = _opaque_user(index.root, buf)
        if opaque is not None:
            raise self._error(f"compute_inline: block {opaque!r} accesses {buf.name} opaquely (its data pointer or "
                              f"a match_buffer), so the reads of {buf.name} cannot all be replaced", blk)
        removable = _removable_root(index, realize)
        if removable is None:
            raise self._error(f"compute_inline: block {blk.name_hint!r} is the only statement of its scope and "
                              "cannot be removed", blk)
        # Substituting the value's iterators with the load's indices (and any loop variable the
        # binding would bring along is not needed: the value uses block iterators only).
        value = store.value

        def value_of(indices):  # indices folded as the script's operators fold them (``v + 0`` is ``v``)
            return _FoldLoadIndices().visit_expr(substitute(value, {v: i for v, i in zip(idx_vars, indices)}))

        read_buffers = {id(r.buffer) for r in blk.reads}
        body = replace_many(index.root, {id(removable): None})
        body = _InlineRewriter(buf, value_of, read_buffers).visit(body)
        self._set_body(func_name, body)

    @primitive
    def reverse_compute_inline(self, block: BlockRV) -> None:
        """Inline a consumer block into its producer: the producer computes the consumer's value and
        writes the consumer's buffer directly; the consumer and the intermediate buffer disappear.

        The consumer must be spatial, without a predicate, with a single store that reads the
        producer's buffer once, at indices that are an injective affine map of its iterators
        (each axis ``c * v + d`` for a distinct iterator ``v``, or a constant; every iterator used)
        whose image lies inside the buffer. The producer must be a single spatial block writing
        that buffer, which must not be a function argument nor read by anyone else. When the
        consumer reads only part of the buffer, the producer gets a predicate selecting the
        elements the consumer read (e.g. ``C[vi, vj] = B[vi * 2, vj + 1]`` gives
        ``T.where(i % 2 == 0 and j >= 1)`` and stores ``C[vi // 2, vj - 1]``).

        Parameters
        ----------
        block : BlockRV
            The consumer block to inline.

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
        if not loads or any(not structural_equal(list(x.indices), list(loads[0].indices), map_free_vars=False)
                            for x in loads[1:]):
            raise self._error(f"reverse_compute_inline needs the consumer to read {buf.name} at one index; block "
                              f"{blk.name_hint!r} reads it at {len(loads)} places that differ", blk)
        load = loads[0]
        if not (isinstance(realize.predicate, E.IntImm) and realize.predicate.value):
            raise self._error("reverse_compute_inline needs a consumer without a predicate", blk)
        tidy = simplify  # the store indices of an axis-by-axis inverse simplify; a reshape's stay as TVM writes them
        try:
            axes = self._injective_read(blk, load, buf)
            vmap, conds = _invert_read(axes, p_store.indices, iter_ids)
        except ScheduleError:
            vmap, conds = _invert_bijective_read(blk, load, buf, p_store.indices), []
            if vmap is None:
                vmap, tidy = _invert_linearized_read(blk, load, buf, p_store.indices), (lambda e: e)
            if vmap is None:
                raise
        predicate = self._producer_predicate(producer, conds, blk)
        removable = _removable_root(index, realize)
        if removable is None:
            raise self._error(f"reverse_compute_inline: block {blk.name_hint!r} cannot be removed from its scope", blk)
        new_value = substitute(_replace_load(store.value, buf, p_store.value), vmap)
        new_store = BufferStore(store.buffer, new_value, [tidy(substitute(i, vmap)) for i in store.indices])
        p_blk = producer.block.replace(body=new_store)
        reads, writes = detect_block_regions(p_blk)
        p_blk = p_blk.replace(reads=tuple(reads), writes=tuple(writes))
        new_producer = producer.replace(block=p_blk, predicate=predicate)
        body = replace_many(index.root, {id(removable): None, id(producer): new_producer})
        body = _InlineRewriter(buf, lambda idx: E.BufferLoad(buf, idx), set()).visit(body)
        self._set_body(func_name, body)


def _invert_bijective_read(blk, load, buf, producer_indices) -> dict | None:
    """The consumer's iterators through the producer's store indices when the read is a bijection from
    the consumer's iteration domain onto the whole buffer (``B[(i * 32 + j) // 128, (i * 32 + j) % 128]``),
    or None when it is not one."""
    from ...arith.index_map import IndexMap

    if any(not (isinstance(iv.dom.min, E.IntImm) and iv.dom.min.value == 0) for iv in blk.iter_vars):
        return None
    shape = [iv.dom.extent for iv in blk.iter_vars]
    imap = IndexMap([iv.var for iv in blk.iter_vars], list(load.indices))
    try:
        if not imap.is_bijective_on(shape) or not structural_equal(imap.map_shape(shape), list(buf.shape)):
            return None
        inverse = imap.inverse(shape)
    except (ValueError, TypeError):
        return None
    values = inverse.map_indices(list(producer_indices))
    return {iv.var: simplify(v) for iv, v in zip(blk.iter_vars, values)}


def _invert_linearized_read(blk, load, buf, producer_indices) -> dict | None:
    """The consumer's iterators through the producer's store indices when the read, flattened
    row-major, is ``sum(scale_k * v_k)`` with the scales a mixed radix of the iterators' extents
    covering the whole buffer (a reshape): ``v_k = (flat // scale_k) % extent_k``. None otherwise."""
    shape = list(buf.shape)
    if not all(isinstance(x, E.IntImm) for x in shape) or len(shape) != len(load.indices):
        return None
    strides, acc = [], 1
    for x in reversed(shape):
        strides.append(acc)
        acc *= x.value
    strides.reverse()

    def flat(indices):
        total = E.make_const(indices[0].dtype, 0)
        for i, st in zip(indices, strides):
            total = E.add(total, E.mul(i, st))
        return simplify(total)

    lin = affine_lin(flat(list(load.indices)))
    if lin is None or lin.const != 0:
        return None
    coeff_of = {id(v): c for v, c in lin.terms.values()}
    vmap, radix = {}, []
    for iv in blk.iter_vars:
        ext = iv.dom.extent
        if not (isinstance(iv.dom.min, E.IntImm) and iv.dom.min.value == 0 and isinstance(ext, E.IntImm)):
            return None
        if id(iv.var) not in coeff_of:
            if ext.value != 1:
                return None
            vmap[iv.var] = E.make_const(iv.var.dtype, 0)
            continue
        radix.append((coeff_of.pop(id(iv.var)), ext.value, iv.var))
    if coeff_of:
        return None  # the read uses a variable that is not an iterator of the consumer
    radix.sort(key=lambda r: r[0])
    expect = 1
    for coeff, ext, _var in radix:
        if coeff != expect:
            return None
        expect *= ext
    if expect != acc:
        return None
    p_flat = None  # innermost axis first, as TVM writes the flattened index: vj + vi * 128
    for i, st in reversed(list(zip(producer_indices, strides))):
        term = i if st == 1 else E.mul(i, st)
        p_flat = term if p_flat is None else E.add(p_flat, term)
    for k, (coeff, ext, var) in enumerate(radix):
        value = p_flat if coeff == 1 else E.floordiv(p_flat, coeff)
        if k != len(radix) - 1:
            value = E.floormod(value, ext)
        vmap[var] = value
    return vmap


def _invert_read(axes, producer_indices, iter_ids) -> tuple[dict, list]:
    """Express the consumer's iterators through the producer's store indices (``v = (x - d) / c`` on
    each axis read as ``c * v + d``) and list the conditions under which a producer element is one
    the consumer reads: divisibility, the iterator's domain, and equality on constant axes."""
    vmap, conds = {}, []
    for (var, coeff, offset), x in zip(axes, producer_indices):
        if var is None:
            conds.append(E.EQ(x, E.make_const(x.dtype, offset)))
            continue
        shifted = E.sub(x, offset)
        if abs(coeff) != 1:
            conds.append(E.EQ(E.floormod(shifted, abs(coeff)), E.make_const(x.dtype, 0)))
        value = shifted if coeff == 1 else E.mul(shifted, -1) if coeff == -1 else E.floordiv(shifted, coeff)
        dom = iter_ids[id(var)].dom
        conds.append(E.GE(value, dom.min))
        conds.append(E.LT(value, E.add(dom.min, dom.extent)))
        vmap[var] = value
    return vmap, conds


def _vars_of(expr):
    out = []
    post_order_visit(expr, lambda n: out.append(n) if isinstance(n, E.Var) else None)
    return out


def _replace_load(expr, buffer, value):
    class R(StmtExprMutator):
        def visit_buffer_load_(self, op):
            return value if op.buffer is buffer else super().visit_buffer_load_(op)

    return R().visit(expr)

