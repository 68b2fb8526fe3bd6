"""Schedule primitives: blockize.

``blockize(loop)`` turns the loop nest under ``loop`` into an inner block inside a new outer block
``<name>_o``. The block's bindings are divided (``tensorize.arith.subspace_divide``) into an outer
part over the loops above ``loop`` and an inner part over ``loop`` and the loops below it; the
same division (``divide_block_bindings``) is what ``tensorize`` matches an intrinsic's ``desc``
against.
"""
from __future__ import annotations

from ...arith import Analyzer, normalize_iter_map_to_expr, subspace_divide
from ...ir import expr as E
from ...ir.functor import collect_vars, substitute
from ...ir.stmt import Block, BlockRealize, BufferRegion, For, SeqStmt, Stmt
from ...ir.structural import structural_equal
from ..analysis import conjoin_all, split_conjuncts
from ..base import ScheduleBase, primitive
from ...arith.loop_relax import hull, make_analyzer, relax_region
from ..tree import StmtIndex, replace_many
from ..surgery import seq
from ..rv import BlockRV


class BindingDivision:
    """The division of one block's bindings at a loop: for iterator ``k``,
    ``binding_k == outer[k] * inner_extents[k] + inner[k]`` with ``outer[k]`` over ``outer_loops`` and
    ``inner[k]`` over ``inner_loops``; the block predicate splits into ``outer_pred`` and ``inner_pred``."""

    __slots__ = ("realize", "outer_loops", "inner_loops", "outer", "outer_extents", "inner", "inner_extents",
                 "outer_pred", "inner_pred")

    def __init__(self, realize, outer_loops, inner_loops, outer, outer_extents, inner, inner_extents, outer_pred,
                 inner_pred):
        self.realize, self.outer_loops, self.inner_loops = realize, outer_loops, inner_loops
        self.outer, self.outer_extents, self.inner, self.inner_extents = outer, outer_extents, inner, inner_extents
        self.outer_pred, self.inner_pred = outer_pred, inner_pred


def divide_block_bindings(tree: StmtIndex, loop: For, realize: BlockRealize) -> BindingDivision | None:
    """Divide the bindings of ``realize`` (the single block under ``loop``) into the part over the
    loops above ``loop`` and the part over ``loop`` and the loops below it; None when they do not
    divide (non-affine bindings, or an iterator mixing the two sides in a way a block cannot express).

    Parameters
    ----------
    tree : StmtIndex
        The index of the function's statements.
    loop : For
        The loop to divide at.
    realize : BlockRealize
        The single block under ``loop``.

    Returns
    -------
    BindingDivision or None
        The division, or None when the bindings do not divide.
    """
    loops = tree.loops_of(realize)
    inner_loops = [f for f in loops if f is loop or tree.is_ancestor(loop, f)]
    outer_loops = [f for f in loops if not (f is loop or tree.is_ancestor(loop, f))]
    iters = {f.loop_var: E.Range.from_min_extent(f.min, f.extent) for f in loops}
    res = subspace_divide(list(realize.iter_values), iters, [f.loop_var for f in inner_loops], realize.predicate)
    if not res:
        return None
    outer, outer_ext, inner, inner_ext = [], [], [], []
    for o, i in res[:-1]:
        outer.append(normalize_iter_map_to_expr(o.source))
        outer_ext.append(int(o.extent))
        inner.append(normalize_iter_map_to_expr(i.source))
        inner_ext.append(int(i.extent))
    return BindingDivision(realize, outer_loops, inner_loops, outer, outer_ext, inner, inner_ext,
                           res[-1][0].extent, res[-1][1].extent)


class Blockize(ScheduleBase):
    """blockize."""

    @primitive
    def blockize(self, target, preserve_unit_iters: bool = True) -> BlockRV:
        """Make the subtree under loop ``target`` an inner block inside a new outer block named
        ``<block>_o``, whose iterators are the outer part of the block's bindings; the returned handle
        is the outer block. A reduction's ``init`` moves to the outer block as ``<block>_init``.

        Parameters
        ----------
        target : LoopRV
            The loop whose subtree becomes the inner block.
        preserve_unit_iters : bool
            Keep unit iterators in the block bindings.

        Returns
        -------
        BlockRV
            The new outer block.

        Before::

            for i_0, j_0, k_0, i_1, j_1, k_1 in T.grid(8, 8, 8, 16, 16, 16):
                with T.block("C"):
                    vi = T.axis.spatial(128, i_0 * 16 + i_1)
                    vj = T.axis.spatial(128, j_0 * 16 + j_1)
                    vk = T.axis.reduce(128, k_0 * 16 + k_1)
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]

        ``sch.blockize(i_1)``::

            for i_0, j_0, k_0 in T.grid(8, 8, 8):
                with T.block("C_o"):
                    vi_o, vj_o, vk_o = T.axis.remap("SSR", [i_0, j_0, k_0])
                    T.reads(C[vi_o * 16:vi_o * 16 + 16, vj_o * 16:vj_o * 16 + 16], A[...], B[...])
                    T.writes(C[vi_o * 16:vi_o * 16 + 16, vj_o * 16:vj_o * 16 + 16])
                    with T.init():
                        for i_1, j_1 in T.grid(16, 16):
                            with T.block("C_init"):
                                vi_i_init, vj_i_init = T.axis.remap("SS", [i_1, j_1])
                                C[vi_o * 16 + vi_i_init, vj_o * 16 + vj_i_init] = T.float32(0)
                    for i_1, j_1, k_1 in T.grid(16, 16, 16):
                        with T.block("C"):
                            vi_i, vj_i, vk_i = T.axis.remap("SSR", [i_1, j_1, k_1])
                            C[vi_o * 16 + vi_i, vj_o * 16 + vj_i] = ...

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul())
        >>> i, j, k = sch.get_loops(sch.get_block("C"))
        >>> _ = sch.split(k, [None, 4])
        >>> outer = sch.blockize(sch.get_loops(sch.get_block("C"))[-1])
        >>> sch.get(outer).name_hint
        'C_o'
        """
        if isinstance(target, (list, tuple)):
            if len(target) == 1 and isinstance(target[0], BlockRV):
                return self._blockize_block(target[0], preserve_unit_iters)
            return self._blockize_blocks(list(target), preserve_unit_iters)
        if isinstance(target, BlockRV):
            return self._blockize_block(target, preserve_unit_iters)
        func_name, tree, loop = self._loop(target)
        realizes = tree.child_block_realizes(loop)
        if not realizes:
            raise self._error(f"blockize: the subtree of loop {loop.loop_var.name} holds no block", loop)
        if len(realizes) > 1:
            return self._blockize_group(func_name, tree, [loop], realizes, preserve_unit_iters)
        return self._blockize_at(func_name, tree, loop, realizes[0], preserve_unit_iters)

    def _blockize_blocks(self, blocks: list, preserve_unit_iters: bool) -> BlockRV:
        """Blockize sibling blocks: the consecutive statements of their lowest common loop (or scope
        block) that hold them go into one new block."""
        if not blocks or not all(isinstance(b, BlockRV) for b in blocks):
            raise TypeError("blockize takes a LoopRV, a BlockRV or a list of BlockRVs")
        resolved = [self._block(b) for b in blocks]
        func_name, tree = resolved[0][0], resolved[0][1]
        if any(r[0] != func_name for r in resolved):
            raise self._error("blockize: the blocks are in different functions")
        realizes = [r[2] for r in resolved]
        if len({id(r) for r in realizes}) != len(realizes):
            raise self._error("blockize: the same block is listed twice")
        chains = [[r] + tree.ancestors(r) for r in realizes]
        common = [a for a in chains[0] if all(any(a is b for b in c) for c in chains[1:])]
        lca = next(a for a in common if isinstance(a, (For, Block)))
        body = lca.body
        children = list(body.seq) if isinstance(body, SeqStmt) else [body]
        holding = sorted({next(k for k, c in enumerate(children) if c is r or tree.is_ancestor(c, r))
                          for r in realizes})
        if holding != list(range(holding[0], holding[-1] + 1)):
            raise self._error("blockize: the blocks must be consecutive statements under their common loop; other "
                              "statements lie between them", lca)
        targets = children[holding[0]:holding[-1] + 1]
        inside = [r for t in targets for r in ([t] if isinstance(t, BlockRealize) else tree.child_block_realizes(t))]
        extra = [r.block.name_hint for r in inside if all(r is not x for x in realizes)]
        if extra:
            raise self._error(f"blockize: blocks {extra} lie between the given blocks; list them too or move them",
                              lca)
        return self._blockize_group(func_name, tree, targets, inside, preserve_unit_iters)

    def _blockize_group(self, func_name: str, tree: StmtIndex, targets: list[Stmt], realizes: list[BlockRealize],
                        preserve_unit_iters: bool) -> BlockRV:
        """One new block ``outer_<names>_`` around the consecutive statements ``targets`` holding
        ``realizes``: each block's bindings are divided at ``targets`` (outer part over the loops above,
        shared as the new block's iterators; inner part over the loops inside)."""
        outer_ivars, outer_values = [], []
        outer_pred = None
        repl, reads, writes = {}, [], []
        all_loops = []
        for realize in realizes:
            blk = realize.block
            loops = tree.loops_of(realize)
            inner = [f for f in loops if any(f is t or tree.is_ancestor(t, f) for t in targets)]
            outer = [f for f in loops if all(f is not g for g in inner)]
            all_loops += [f for f in loops if all(f is not g for g in all_loops)]
            iters = {f.loop_var: E.Range.from_min_extent(f.min, f.extent) for f in loops}
            res = subspace_divide(list(realize.iter_values), iters, [f.loop_var for f in inner], realize.predicate)
            if not res:
                raise self._error(f"blockize: the bindings of block {blk.name_hint!r} cannot be divided into a part "
                                  "over the loops outside the blockized statements and a part over the loops "
                                  "inside", realize)
            outer_vars = {id(f.loop_var) for f in outer}
            for f in inner:
                if any(id(v) in outer_vars for v in collect_vars(f.extent) + collect_vars(f.min)):
                    raise self._error(f"blockize: the range of loop {f.loop_var.name} depends on an outer loop",
                                      realize)
            pred = res[-1][0].extent
            if outer_pred is None:
                outer_pred = pred
            elif not structural_equal(outer_pred, pred):
                raise self._error(f"blockize: block {blk.name_hint!r} has another outer predicate ({pred}) than the "
                                  f"first block ({outer_pred})", realize)
            ana = make_analyzer(loops)
            vmap, inner_ivars, inner_values, inner_dom = {}, [], [], {}
            for iv, (o, i) in zip(blk.iter_vars, res[:-1]):
                o_expr, oe = normalize_iter_map_to_expr(o.source), int(o.extent)
                i_expr, ie = normalize_iter_map_to_expr(i.source), int(i.extent)
                if oe == 1 and isinstance(o_expr, E.IntImm):
                    outer_val = o_expr  # a constant outer part needs no shared iterator
                elif oe != 1 or preserve_unit_iters:
                    match = next((v for v, val in zip(outer_ivars, outer_values)
                                  if int(v.dom.extent) == oe and structural_equal(val, o_expr)), None)
                    if match is None:
                        lo = ana.const_int_bound(o_expr).min_value
                        match = E.IterVar(E.Range.from_min_extent(lo, oe), iv.var.copy_with_suffix("_o"),
                                          iv.iter_type)
                        outer_ivars.append(match)
                        outer_values.append(o_expr)
                    elif match.iter_type != iv.iter_type:
                        raise self._error(f"blockize: iterator {iv.var.name} of block {blk.name_hint!r} shares the "
                                          f"outer iterator {match.var.name} with another kind", realize)
                    if iv.iter_type == E.IterVar.CommReduce and blk.init is not None and oe != 1:
                        raise self._error(f"blockize: reduction block {blk.name_hint!r} reduces over the outer "
                                          "loops; blockize several blocks only inside their reduction loops",
                                          realize)
                    outer_val = match.var
                else:
                    outer_val = o_expr
                inner_val = _inner_iter(iv, i_expr, ie, ana, preserve_unit_iters, inner_ivars, inner_values, inner_dom)
                vmap[iv.var] = ana.simplify(E.add(E.mul(outer_val, ie), inner_val))
            inner_block = blk.replace(
                iter_vars=tuple(inner_ivars), body=substitute(blk.body, vmap),
                init=None if blk.init is None else substitute(blk.init, vmap),
                reads=tuple(substitute(r, vmap) for r in blk.reads),
                writes=tuple(substitute(w, vmap) for w in blk.writes),
                match_buffers=tuple(m.replace(source=substitute(m.source, vmap)) for m in blk.match_buffers))
            repl[id(realize)] = BlockRealize(inner_values, res[-1][1].extent, inner_block)
            reads += [BufferRegion(r.buffer, relax_region(r, inner_dom, ana)) for r in inner_block.reads]
            writes += [BufferRegion(w.buffer, relax_region(w, inner_dom, ana)) for w in inner_block.writes]
        ana = make_analyzer(all_loops)
        name = "outer_" + "".join(r.block.name_hint + "_" for r in realizes)
        while name in tree.blocks:
            name += "o"
        body = seq([replace_many(t, repl) for t in targets])
        outer_block = Block(outer_ivars, _union(reads, ana), _union(writes, ana), name, body)
        outer_realize = BlockRealize(outer_values, outer_pred, outer_block)
        parent = tree.parent_of(targets[0])
        if len(targets) == 1:
            self._replace(func_name, targets[0], outer_realize)
        else:
            kept = [outer_realize if c is targets[0] else c for c in parent.seq if all(c is not t for t in targets[1:])]
            self._replace(func_name, parent, SeqStmt.flatten(*kept))
        return BlockRV(name, func_name)

    def _blockize_block(self, block: BlockRV, preserve_unit_iters: bool) -> BlockRV:
        func_name, tree, realize = self._block(block)
        loops = tree.loops_of(realize)
        if not loops:
            raise self._error(f"blockize: block {block.name!r} has no loops to blockize", realize)
        # the outermost of the block's loops whose subtree holds this block alone (an outer loop may hold
        # other blocks too, e.g. a producer placed there by compute_at)
        own = next((loop for loop in loops if [r is realize for r in tree.child_block_realizes(loop)] == [True]), None)
        if own is None:
            raise self._error(f"blockize: every loop around block {block.name!r} also holds other blocks; pass the "
                              "loop to blockize, or the list of blocks", realize)
        return self._blockize_at(func_name, tree, own, realize, preserve_unit_iters)

    def _blockize_at(self, func_name: str, tree: StmtIndex, loop: For, realize: BlockRealize,
                     preserve_unit_iters: bool) -> BlockRV:
        blk = realize.block
        div = divide_block_bindings(tree, loop, realize)
        if div is None:
            raise self._error(f"blockize: the bindings of block {blk.name_hint!r} cannot be divided into a part over "
                              f"the loops outside {loop.loop_var.name} and a part over the loops inside it (they must "
                              "be affine, and each iterator's inner loops must be its lowest digits)", realize)
        ana = make_analyzer(div.outer_loops + div.inner_loops)
        outer_ivars, outer_values, inner_ivars, inner_values = [], [], [], []
        vmap, inner_dom = {}, {}
        unit_outer = {id(f.loop_var) for f in div.outer_loops if isinstance(f.extent, E.IntImm) and f.extent.value == 1}
        inner_zero = {f.loop_var: E.make_const(f.loop_var.dtype, 0) for f in div.inner_loops}
        for k, (iv, o, oe, i, ie) in enumerate(zip(blk.iter_vars, div.outer, div.outer_extents, div.inner,
                                                    div.inner_extents)):
            binding = realize.iter_values[k]
            if preserve_unit_iters and isinstance(o, E.IntImm) and any(id(v) in unit_outer
                                                                          for v in collect_vars(binding)):
                # As TVM: keep the unit loop in the outer binding (i0 * 16 + i1 -> vi_o bound to i0).
                o = Analyzer().simplify(E.floordiv(substitute(binding, inner_zero), E.make_const(binding.dtype, ie)))
            if True:  # as TVM, the outer block keeps every iterator, unit ones included
                lo = ana.const_int_bound(o).min_value
                ov = E.IterVar(_dom(iv.var.dtype, lo, oe), iv.var.copy_with_suffix("_o"), iv.iter_type)
                outer_ivars.append(ov)
                outer_values.append(o)
                # As TVM: a unit outer iterator is a constant, so the inner block does not use it.
                outer_val = ov.var if oe != 1 else E.make_const(ov.var.dtype, lo)
            else:
                outer_val = o
            inner_val = _inner_iter(iv, i, ie, ana, preserve_unit_iters, inner_ivars, inner_values, inner_dom)
            vmap[iv.var] = ana.simplify(E.add(E.mul(outer_val, ie), inner_val))
        outer_vars = {id(iv.var) for iv in outer_ivars}
        leaked = [v.name for v in collect_vars(div.inner_pred) if id(v) in outer_vars]
        if leaked:  # pragma: no cover - subspace_divide keeps predicates apart
            raise self._error(f"blockize: the predicate of block {blk.name_hint!r} mixes outer and inner loops", realize)
        reads = list(blk.reads)
        if blk.init is not None:  # without its init the inner block reads its accumulator (TVM's inference)
            read_ids = {id(r.buffer) for r in reads}
            reads = [w for w in blk.writes if id(w.buffer) not in read_ids] + reads
        inner_block = blk.replace(
            iter_vars=tuple(inner_ivars), init=None, body=substitute(blk.body, vmap),
            reads=tuple(substitute(r, vmap) for r in reads), writes=tuple(substitute(w, vmap) for w in blk.writes),
            match_buffers=tuple(m.replace(source=substitute(m.source, vmap)) for m in blk.match_buffers))
        inner_realize = BlockRealize(inner_values, div.inner_pred, inner_block)
        inner_nest = replace_many(loop, {id(realize): inner_realize})
        # Outer regions: the inner block's regions relaxed over the inner iterators.
        reads = [BufferRegion(r.buffer, relax_region(r, inner_dom, ana)) for r in inner_block.reads
                 if r.buffer not in [w.buffer for w in blk.writes] or blk.init is None or any(
                     r.buffer is b.buffer for b in blk.reads)]
        writes = [BufferRegion(w.buffer, relax_region(w, inner_dom, ana)) for w in inner_block.writes]
        init = None
        if blk.init is not None:
            init = self._blockize_init(blk, div, vmap, outer_ivars, inner_ivars, inner_values, tree)
        name = blk.name_hint + "_o"
        if name in tree.blocks:
            n = 1
            while f"{name}_{n}" in tree.blocks:
                n += 1
            name = f"{name}_{n}"
        outer_block = Block(outer_ivars, reads, writes, name, inner_nest, init=init)
        outer_realize = BlockRealize(outer_values, div.outer_pred, outer_block)
        self._replace(func_name, loop, outer_realize)
        return BlockRV(name, func_name)

    def _blockize_init(self, blk, div, vmap, outer_ivars, inner_ivars, inner_values, tree) -> Stmt:
        """The init of the outer block: the original init over the inner spatial iterators, as a block
        ``<name>_init`` under copies of the inner loops it needs."""
        init_ivars, init_values = [], []
        needed_loops: set[int] = set()
        for nv, value in zip(inner_ivars, inner_values):
            if nv.iter_type != E.IterVar.DataPar:
                continue
            copy = E.IterVar(nv.dom, nv.var.copy_with_suffix("_init"), nv.iter_type)
            init_ivars.append(copy)
            init_values.append(value)
            needed_loops |= {id(v) for v in collect_vars(value)}
        # The inner predicate's conjuncts free of reduction loops carry over (with the loops they name):
        # a split that does not divide must not initialise outputs past the buffer's end.
        reduce_loops = {id(v) for nv, value in zip(inner_ivars, inner_values)
                        if nv.iter_type != E.IterVar.DataPar for v in collect_vars(value)}
        inner_loops = {id(f.loop_var) for f in div.inner_loops}
        kept = []
        for part in split_conjuncts(div.inner_pred):
            used = {id(v) for v in collect_vars(part)} & inner_loops
            if used & reduce_loops and used - reduce_loops:
                raise self._error(f"blockize: the predicate {part} of block {blk.name_hint!r} mixes its spatial and "
                                  "reduction loops, so its init cannot be blockized; decompose_reduction first", blk)
            if used and not used & reduce_loops:
                kept.append(part)
                needed_loops |= used
        # Re-express the original iterators with the init iterators instead of the inner ones.
        swap = {nv.var: c.var for nv, c in zip([v for v in inner_ivars if v.iter_type == E.IterVar.DataPar], init_ivars)}
        init_map = {k: substitute(v, swap) for k, v in vmap.items()}
        loops = [f for f in div.inner_loops if id(f.loop_var) in needed_loops]
        loop_copy = {f.loop_var: f.loop_var.copy_with_name(f.loop_var.name) for f in loops}
        init_values = [substitute(v, loop_copy) for v in init_values]
        pred = [substitute(part, loop_copy) for part in kept]
        body = substitute(blk.init, init_map)
        written = [BufferRegion(w.buffer, [E.Range.from_min_extent(substitute(r.min, init_map), r.extent)
                                           for r in w.region]) for w in blk.writes]
        init_block = Block(init_ivars, [], written, blk.name_hint + "_init", body)
        stmt: Stmt = BlockRealize(init_values, conjoin_all(pred), init_block)
        for f in reversed(loops):
            stmt = For(loop_copy[f.loop_var], f.min, f.extent, f.kind, stmt, f.thread_binding, f.annotations)
        return stmt


def _dom(dtype: str, lo: int, extent: int) -> E.Range:
    """An iterator domain in the iterator's own dtype (int64 iterators get int64 bounds, as TVM)."""
    return E.Range.from_min_extent(E.make_const(dtype, lo), E.make_const(dtype, extent))


def _inner_iter(iv: E.IterVar, value, extent: int, ana, preserve_unit_iters: bool,
                inner_ivars: list, inner_values: list, inner_dom: dict):
    """What stands for the inner part ``value`` of ``iv``'s binding in the inner block: a new
    iterator ``<name>_i`` bound to ``value`` (appended to the inner block's iterators, values and
    relaxation domain), or ``value`` itself when its extent is 1 and unit iterators are dropped."""
    if extent == 1:  # as TVM, whatever preserve_unit_iters: the inner block has no unit iterator
        return value
    lo = ana.const_int_bound(value).min_value
    nv = E.IterVar(_dom(iv.var.dtype, lo, extent), iv.var.copy_with_suffix("_i"), iv.iter_type)
    inner_ivars.append(nv)
    inner_values.append(value)
    inner_dom[id(nv.var)] = (nv.var, nv.dom)
    return nv.var


def _union(regions: list[BufferRegion], ana) -> list[BufferRegion]:
    """One region per buffer (first-access order): the hull of all its regions."""
    out: dict[int, BufferRegion] = {}
    for r in regions:
        prev = out.get(id(r.buffer))
        out[id(r.buffer)] = r if prev is None else BufferRegion(r.buffer, hull(list(prev.region), list(r.region), ana))
    return list(out.values())
