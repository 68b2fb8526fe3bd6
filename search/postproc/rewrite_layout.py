"""``rewrite_layout``: pack a constant operand (a weight) into the order its tiled loop nest reads it.

MetaSchedule's ``RewriteLayout``: once the tile sizes are fixed, a weight that the function marks
layout-free (the function attribute ``layout_free_buffers``, parameter indices, as ``te`` writes it
for ``layout_free_placeholders``) is read through a copy in a blocked layout whose dimensions are the
loops of the nest that index it, outermost first. A GEMM's ``B[k, j]`` tiled ``SSRSRS`` becomes
``B[j0, j1, k0, j2, k1, j3]``: the micro-kernel walks it with unit stride. The copy block is marked
``layout_rewrite_preproc = 1``: ``split_layout_rewrite`` moves it into a function of its own, so the
runner packs the weight once outside the timed region and a caller packs its constant weights once.
"""
from __future__ import annotations

from tensorize.arith.index_map import IndexMap
from tensorize.arith.linear import affine_lin
from tensorize.ir import expr as E
from tensorize.ir.functor import substitute
from tensorize.ir.stmt import BlockRealize
from tensorize.schedule import ScheduleError

from ..schedule_rule.analysis import AUTO_TENSORIZE, TILED
from ..schedule_rule.multi_level_tiling_with_intrin import LAYOUT_FREE_BUFFERS, LAYOUT_REWRITE_PREPROC
from .base import POSTPROCS, Postproc
from .loops import nest_blocks

__all__ = ["RewriteLayout", "LAYOUT_FREE_BUFFERS", "blocked_layout"]



@POSTPROCS.register("rewrite_layout")
class RewriteLayout(Postproc):
    """For each parameter in the function attribute ``layout_free_buffers`` that exactly one tiled block
    reads (and nothing writes): ``cache_read`` it, ``transform_layout`` the copy into the nest's blocked
    layout (``blocked_layout``) and annotate the copy ``layout_rewrite_preproc = 1``. Weights whose
    accesses are not a mixed-radix split of the loops (a convolution's padded input, a fused loop) are
    left as they are. Never rejects a candidate.
    """

    def apply(self, sch, ctx) -> None:
        """See ``Postproc.apply``: rewrite ``sch`` in place."""
        for func_name in sch.mod.function_names():
            func = sch.mod[func_name]
            free = [int(i) for i in func.attrs.get(LAYOUT_FREE_BUFFERS, ())]
            if not free or not isinstance(func.body, BlockRealize):
                continue
            for param_index in free:
                if param_index < len(func.params):
                    self._rewrite(sch, func_name, param_index)

    @staticmethod
    def _rewrite(sch, func_name: str, param_index: int) -> None:
        func = sch.mod[func_name]
        buf = func.buffer_map.get(func.params[param_index])
        if buf is None:
            return
        realizes = list(nest_blocks(func.body.block.body))
        readers = [r for r in realizes if any(rd.buffer is buf for rd in r.block.reads)]
        if any(w.buffer is buf for r in realizes for w in r.block.writes) or len(readers) != 1:
            return
        reader = readers[0]
        if TILED not in reader.block.annotations or AUTO_TENSORIZE in reader.block.annotations:
            return
        read_index = next(i for i, rd in enumerate(reader.block.reads) if rd.buffer is buf)
        index = sch._index(func_name)
        layout = blocked_layout(reader, index.loops_of(reader), reader.block.reads[read_index], buf.shape)
        if layout is None:
            return
        block = sch.get_block(reader.block.name_hint, func_name)
        try:
            copy = sch.cache_read(block, read_index, "global")
            sch.transform_layout(block, ("read", read_index), layout)
        except ScheduleError:
            return
        sch.annotate(copy, LAYOUT_REWRITE_PREPROC, 1)


def blocked_layout(realize: BlockRealize, loops, region, shape) -> IndexMap | None:
    """The layout in which ``loops`` (outermost first, above ``realize``) read the buffer region
    ``region`` (a single element per block instance) in order: one dimension per non-unit loop that
    indexes the buffer. None when an index is not a sum ``sum(coeff * loop)`` whose loops split its
    dimension exactly (mixed radix), or when the layout would be the buffer's own.

    Parameters
    ----------
    realize : BlockRealize
        The reading block.
    loops : list of For
        The loops above it, outermost first.
    region : BufferRegion
        Its read of the buffer.
    shape : sequence of PrimExpr
        The buffer's shape.

    Returns
    -------
    IndexMap or None
        Old indices to new ones, e.g. ``(k, j) -> (j // 16, k, j % 16)``.
    """
    if any(not isinstance(r.extent, E.IntImm) or r.extent.value != 1 for r in region.region):
        return None
    binding = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    loop_of = {id(f.loop_var): (pos, f) for pos, f in enumerate(loops)}
    parts = []  # (loop position, dim, coeff, extent)
    for dim, (rng, ext) in enumerate(zip(region.region, shape)):
        if not isinstance(ext, E.IntImm):
            return None
        lin = affine_lin(substitute(rng.min, binding))
        if lin is None or lin.const != 0:
            return None
        terms = []
        for atom, coeff in lin.terms.values():
            found = loop_of.get(id(atom))
            if found is None or coeff <= 0 or not isinstance(found[1].extent, E.IntImm):
                return None
            extent = found[1].extent.value
            if extent > 1:
                terms.append((coeff, found[0], extent))
        terms.sort()
        stride = 1
        for coeff, pos, extent in terms:  # innermost (coeff 1) first: a mixed-radix split of the dim
            if coeff != stride:
                return None
            parts.append((pos, dim, coeff, extent))
            stride *= extent
        if stride != ext.value:
            return None
    parts.sort()
    if [(dim, coeff) for _pos, dim, coeff, _ext in parts] == [(d, 1) for d in range(len(shape))]:
        return None  # already the buffer's own layout
    variables = [E.Var(f"i{d}", "int32") for d in range(len(shape))]
    finals = []
    for _pos, dim, coeff, extent in parts:
        value = variables[dim]
        if coeff > 1:
            value = E.FloorDiv(value, E.IntImm("int32", coeff))
        if coeff * extent < shape[dim].value:
            value = E.FloorMod(value, E.IntImm("int32", extent))
        finals.append(value)
    return IndexMap(variables, finals)
