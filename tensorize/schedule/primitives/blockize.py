"""Schedule primitives: blockize.

``blockize(loop)`` turns the loop nest under ``loop`` into an inner block inside a new outer block
``<name>_o``. The block's bindings are divided (``tensorize.arith.subspace_divide``) into an outer
part over the loops above ``loop`` and an inner part over ``loop`` and the loops below it; the
same division (``divide_block_bindings``) is what ``tensorize`` matches an intrinsic's ``desc``
against.
"""
from __future__ import annotations

from ...arith import normalize_iter_map_to_expr, subspace_divide
from ...ir import expr as E
from ...ir.functor import collect_vars, substitute
from ...ir.stmt import Block, BlockRealize, BufferRegion, For, Stmt
from ..base import ScheduleBase, primitive
from ..region_utils import make_analyzer, relax_region
from ..rv import BlockRV, LoopRV
from ..tree import StmtIndex, replace_many


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
    divide (non-affine bindings, or an iterator mixing the two sides in a way a block cannot express)."""
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
        """
        if isinstance(target, (list, tuple)):
            if len(target) == 1 and isinstance(target[0], BlockRV):
                return self._blockize_block(target[0], preserve_unit_iters)
            raise self._error("blockize of several blocks is not supported yet; blockize the loop that encloses "
                              "them when they form one block, or blockize them one at a time")
        if isinstance(target, BlockRV):
            return self._blockize_block(target, preserve_unit_iters)
        func_name, tree, loop = self._loop(target)
        realizes = tree.child_block_realizes(loop)
        if len(realizes) != 1:
            names = [r.block.name_hint for r in realizes]
            raise self._error(f"blockize: the subtree of loop {loop.loop_var.name} must hold exactly one block, but it "
                              f"holds {len(realizes)}: {names}", loop)
        return self._blockize_at(func_name, tree, loop, realizes[0], preserve_unit_iters)

    def _blockize_block(self, block: BlockRV, preserve_unit_iters: bool) -> BlockRV:
        func_name, tree, realize = self._block(block)
        loops = tree.loops_of(realize)
        if not loops:
            raise self._error(f"blockize: block {block.name!r} has no loops to blockize", realize)
        return self._blockize_at(func_name, tree, loops[0], realize, preserve_unit_iters)

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
        for iv, o, oe, i, ie in zip(blk.iter_vars, div.outer, div.outer_extents, div.inner, div.inner_extents):
            if oe != 1 or preserve_unit_iters:
                lo = ana.const_int_bound(o).min_value
                ov = E.IterVar(E.Range.from_min_extent(lo, oe), iv.var.copy_with_suffix("_o"), iv.iter_type)
                outer_ivars.append(ov)
                outer_values.append(o)
                outer_val = ov.var
            else:
                outer_val = o
            if ie != 1 or preserve_unit_iters:
                lo = ana.const_int_bound(i).min_value
                nv = E.IterVar(E.Range.from_min_extent(lo, ie), iv.var.copy_with_suffix("_i"), iv.iter_type)
                inner_ivars.append(nv)
                inner_values.append(i)
                inner_dom[id(nv.var)] = (nv.var, nv.dom)
                inner_val = nv.var
            else:
                inner_val = i
            vmap[iv.var] = ana.simplify(E.add(E.mul(outer_val, ie), inner_val))
        outer_vars = {id(iv.var) for iv in outer_ivars}
        leaked = [v.name for v in collect_vars(div.inner_pred) if id(v) in outer_vars]
        if leaked:  # pragma: no cover - subspace_divide keeps predicates apart
            raise self._error(f"blockize: the predicate of block {blk.name_hint!r} mixes outer and inner loops", realize)
        inner_block = blk.replace(
            iter_vars=tuple(inner_ivars), init=None, body=substitute(blk.body, vmap),
            reads=tuple(substitute(r, vmap) for r in blk.reads), writes=tuple(substitute(w, vmap) for w in blk.writes),
            match_buffers=tuple(m.replace(source=substitute(m.source, vmap)) for m in blk.match_buffers))
        inner_realize = BlockRealize(inner_values, div.inner_pred, inner_block)
        inner_nest = replace_many(loop, {id(realize): inner_realize})
        # Outer regions: the inner block's regions relaxed over the inner iterators.
        reads = [BufferRegion(r.buffer, relax_region(r, inner_dom, ana)) for r in inner_block.reads]
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
        # Re-express the original iterators with the init iterators instead of the inner ones.
        swap = {nv.var: c.var for nv, c in zip([v for v in inner_ivars if v.iter_type == E.IterVar.DataPar], init_ivars)}
        init_map = {k: substitute(v, swap) for k, v in vmap.items()}
        loops = [f for f in div.inner_loops if id(f.loop_var) in needed_loops]
        loop_copy = {f.loop_var: f.loop_var.copy_with_name(f.loop_var.name) for f in loops}
        init_values = [substitute(v, loop_copy) for v in init_values]
        body = substitute(blk.init, init_map)
        written = [BufferRegion(w.buffer, [E.Range.from_min_extent(substitute(r.min, init_map), r.extent)
                                           for r in w.region]) for w in blk.writes]
        init_block = Block(init_ivars, [], written, blk.name_hint + "_init", body)
        stmt: Stmt = BlockRealize(init_values, True, init_block)
        for f in reversed(loops):
            stmt = For(loop_copy[f.loop_var], f.min, f.extent, f.kind, stmt, f.thread_binding, f.annotations)
        return stmt
