"""Apply a ``TensorizeCandidate``: reindex, layouts, padding, tiling (see ``search.tensor_candidates``).

Every step is a schedule primitive, so the result is recorded in ``sch.trace`` and replays.
"""
from __future__ import annotations

import logging

from tensorize.ir import expr as E
from tensorize.ir.functor import collect_vars
from tensorize.arith.index_map import IndexMap
from tensorize.arith.linear_form import to_linear
from tensorize.ir.stmt import BufferStore
from tensorize.schedule import ScheduleError
from tensorize.schedule.rv import LoopRV

from .einsum import Einsum
from .packed import desc_view
from .candidate import TensorizeCandidate, _covered_positions, _operand_dims

logger = logging.getLogger(__name__)

# ``IntrinMeta.extra`` key: the desc operands whose impl reads/writes a tile at any row stride (its buffer
# declares symbolic strides, last one 1), so a plainly indexed block operand needs no tiled copy
IN_PLACE_OPERANDS = "in_place_operands"


def rewrite_for_candidate(sch, cand: TensorizeCandidate) -> LoopRV:
    """Reshape the candidate's block for its intrinsic (padding, reindex, transform_block_layout, tiling); the loop
    to tensorize at."""
    block = sch.get_block(cand.block_name, cand.func_name) if cand.func_name else sch.get_block(cand.block_name)
    blk = sch.get(block)
    extents = tuple(int(iv.dom.extent) for iv in blk.iter_vars) if all(
        isinstance(iv.dom.extent, E.IntImm) for iv in blk.iter_vars) else None
    if extents != cand.iter_extents:
        raise ValueError(f"block {cand.block_name!r} has iterator extents {extents} but the candidate was made for "
                         f"{cand.iter_extents}; generate candidates again for the current schedule")
    einsum = Einsum.of_block(blk)
    if len(einsum.order) != len(cand.operands):
        raise ValueError(f"block {cand.block_name!r} accesses {len(einsum.order)} buffers but the candidate expects "
                         f"{len(cand.operands)}; generate candidates again")
    plan = _OperandPlan(einsum, cand)
    desc, desc_by_name, packings, covered, roles = plan.desc, plan.desc_by_name, plan.packings, plan.covered, plan.roles
    n = len(cand.iter_extents)
    ext = cand.iter_extents

    # 1. reindex the operands whose layout must change (an operand already indexed by its iterators
    #    in the final order is used in place); output first, then inputs (positions stay stable).
    #    A layout is a list of slots, each the tuple of original iterator positions fused into it.
    layouts, copies = {}, []
    for pos, buf in enumerate(einsum.order):
        target, in_place = plan.placement(pos)
        if in_place:
            continue
        copies.append(("write" if pos == 0 else "read", sch.reindex(block, buf.name)))
        layouts[pos] = [(k,) for k in covered[pos]]
        # 2a. order the copy's dimensions as (outer iterators..., each group's members in desc order).
        _permute(sch, block, pos, layouts[pos], target)
    block_layout = [(k,) for k in range(n)]
    _permute_block(sch, block, block_layout,
                   [(k,) for k in cand.outer_iters] + [(k,) for m in cand.mappings for k in m.block_iters])

    # 2b. fuse each group pairwise, in the copies and in the block alike: each step's accesses
    #     simplify back to plain iterators ((t // e) * e + t % e -> t).
    for m in cand.mappings:
        head = (m.block_iters[0],)
        for k in m.block_iters[1:]:
            for pos, layout in layouts.items():
                if head in layout:
                    _fuse_dims(sch, block, pos, layout, head, (k,), ext)
            _fuse_dims(sch, block, None, block_layout, head, (k,), ext)
            head = head + (k,)

    # 3. padding of the fused iterators.
    n_outer = len(cand.outer_iters)
    if cand.needs_padding:
        sch.pad_einsum(block, [1] * n_outer + [m.intrin_extent for m in cand.mappings])

    # 4. tiles of the desc's shape, dense in memory (packed operands: the desc's packed layout).
    for pos, role in enumerate(roles):
        o_part, d_part = _operand_dims(desc, desc_by_name[role], cand.mappings, cand.outer_iters, covered[pos])
        if role in packings:
            sch.transform_layout(block, _current_name(sch, block, pos), packings[role].index_map(len(o_part)))
            continue
        if len(d_part) <= 1 or pos not in layouts:
            continue  # the tile is already the innermost, contiguous dimension
        src = [E.Var(f"v{k}", "int32") for k in range(len(o_part) + len(d_part))]
        tiles = src[len(o_part):]
        dst = (src[:len(o_part)] + [E.floordiv(t, m.intrin_extent) for t, m in zip(tiles, d_part)]
               + [E.floormod(t, m.intrin_extent) for t, m in zip(tiles, d_part)])
        sch.transform_layout(block, _current_name(sch, block, pos), IndexMap(src, dst))

    # 5. split the fused loops by the intrinsic's extents, tiles innermost in desc loop order.
    loops = sch.get_loops(block)[-(n_outer + len(cand.mappings)):]
    outer_loops, fused_loops = loops[:n_outer], loops[n_outer:]
    tile_outer, tile_inner = [], []
    for loop, m in zip(fused_loops, cand.mappings):
        lo, li = sch.split(loop, [None, m.intrin_extent])
        tile_outer.append(lo)
        tile_inner.append(li)
    sch.reorder(*outer_loops, *tile_outer, *tile_inner)
    _drop_trivial_copies(sch, copies)
    logger.debug("applied candidate:\n%s", cand.describe())
    return tile_inner[0]


class _OperandPlan:
    """What deciding each operand's layout needs: the candidate's desc (logical indices; ``packings`` for packed
    operands), the desc operands its impl reads at any row stride, each block operand's role and iterators."""

    def __init__(self, einsum: Einsum, cand: TensorizeCandidate):
        from tensorize.ir.tensor_intrin import TensorIntrin

        intrin = TensorIntrin.get(cand.intrin_name)
        view = desc_view(intrin.desc)
        self.einsum, self.cand = einsum, cand
        self.strided = set(intrin.meta.extra.get(IN_PLACE_OPERANDS, ()))
        self.desc, self.packings = view.einsum, view.packings
        self.desc_by_name = {b.name: b for b in self.desc.accesses}
        block_role = {b: name for name, b in ((d, bb) for d, bb in cand.operands)}  # block buffer -> desc name
        self.roles = [block_role[b.name] for b in einsum.order]  # by first-appearance position
        self.covered = {k: _covered_positions(einsum, b) for k, b in enumerate(einsum.order)}

    def placement(self, pos: int):
        """The operand's target layout (outer iterators, then each desc dimension's block iterators) and whether
        the intrinsic reads it where it is (no reindex copy)."""
        einsum, cand, role, buf = self.einsum, self.cand, self.roles[pos], self.einsum.order[pos]
        o_part, d_part = _operand_dims(self.desc, self.desc_by_name[role], cand.mappings, cand.outer_iters,
                                       self.covered[pos])
        target = [(k,) for k in o_part] + [(k,) for m in d_part for k in m.block_iters]
        fused_target = [(k,) for k in o_part] + [tuple(m.block_iters) for m in d_part]
        packed = role in self.packings  # always copied: the copy is what gets packed
        strided = role in self.strided
        plain = fused_target == target and _plain_access(einsum, buf, [t[0] for t in target])
        in_place = (
            (not packed and plain and len(d_part) <= 1)  # already indexed by its iterators in the final order
            or (strided and plain)  # a row-strided tile of the operand as it is (e.g. AMX's A and C)
            # rows at a shift by outer iterators (a direct convolution's taps on flat pixels)
            or (strided and pos != 0 and not cand.needs_padding and _shifted_rows_in_place(einsum, buf, d_part))
            # the intrinsic reads one element or one contiguous run of it
            or (pos != 0 and not packed and not cand.needs_padding and _usable_in_place(einsum, buf, d_part)))
        return target, in_place


def copied_operands(sch, cand: TensorizeCandidate) -> list[str]:
    """The block's operands ``apply_candidate`` would copy (reindex) for ``cand``, without changing ``sch``: the
    packed ones, and those the intrinsic cannot read where they are.

    Parameters
    ----------
    sch : Schedule
        The schedule holding the candidate's block, in its original loop nest.
    cand : TensorizeCandidate
        A candidate of ``get_tensorize_candidates``.

    Returns
    -------
    list of str
        Buffer names, output first.
    """
    block = sch.get_block(cand.block_name, cand.func_name) if cand.func_name else sch.get_block(cand.block_name)
    plan = _OperandPlan(Einsum.of_block(sch.get(block)), cand)
    return [buf.name for pos, buf in enumerate(plan.einsum.order) if not plan.placement(pos)[1]]


def _permute(sch, block, pos, layout, target) -> None:
    """Reorder the dimensions of the buffer at ``pos`` from ``layout`` to ``target`` (in place)."""
    if layout == target:
        return
    src = [E.Var(f"v{d}", "int32") for d in range(len(layout))]
    sch.transform_layout(block, _current_name(sch, block, pos), IndexMap(src, [src[layout.index(t)] for t in target]))
    layout[:] = target


def _permute_block(sch, block, layout, target) -> None:
    if layout == target:
        return
    src = [E.Var(f"v{d}", "int32") for d in range(len(layout))]
    sch.transform_block_layout(block, IndexMap(src, [src[layout.index(t)] for t in target]))
    layout[:] = target


def _fuse_dims(sch, block, pos, layout, head, tail, ext) -> None:
    """Fuse the adjacent slots ``head`` and ``tail`` of ``layout``: of the buffer at ``pos``, or of the
    block's iteration space when ``pos`` is None."""
    d = layout.index(head)
    assert layout[d + 1] == tail, "fused iterators are adjacent by construction"
    tail_extent = 1
    for k in tail:
        tail_extent *= ext[k]
    src = [E.Var(f"v{i}", "int32") for i in range(len(layout))]
    dst = src[:d] + [E.add(E.mul(src[d], tail_extent), src[d + 1])] + src[d + 2:]
    if pos is None:
        sch.transform_block_layout(block, IndexMap(src, dst))
    else:
        sch.transform_layout(block, _current_name(sch, block, pos), IndexMap(src, dst))
    layout[d:d + 2] = [head + tail]


def _plain_access(einsum: Einsum, buf, order) -> bool:
    """``buf`` is indexed by exactly the iterators at positions ``order``, over its whole shape."""
    idx = einsum.accesses[buf]
    ivs = [einsum.iter_vars[k] for k in order]
    return (len(idx) == len(ivs) and all(ix is iv.var for ix, iv in zip(idx, ivs))
            and all(isinstance(s, E.IntImm) and s.value == int(iv.dom.extent) for s, iv in zip(buf.shape, ivs)))


def _usable_in_place(einsum: Einsum, buf, d_part) -> bool:
    """An input the intrinsic can read where it is: the desc indexes it with no mapped iterator (a
    broadcast scalar, e.g. an FMA's ``A[0]``), or with one iterator that is the buffer's last index,
    plain, over the whole dimension and not padded (a contiguous run, e.g. a convolution's input
    channels read ``data[n, h + rh, w + rw, ci]``). Other indices may be any expression of the outer
    iterators: copying the operand (an im2col of the whole input) would cost more than it saves.
    (Only where nothing is padded: ``pad_einsum`` needs every operand indexed by plain iterators.)"""
    if not d_part:
        return True
    if len(d_part) > 1 or len(d_part[0].block_iters) != 1 or d_part[0].extent % d_part[0].intrin_extent:
        return False
    var = einsum.iter_vars[d_part[0].block_iters[0]].var
    idx = einsum.accesses[buf]
    last = buf.shape[-1]
    return (idx[-1] is var and isinstance(last, E.IntImm) and last.value == d_part[0].extent
            and not any(v is var for ix in idx[:-1] for v in collect_vars(ix)))


def _shifted_rows_in_place(einsum: Einsum, buf, d_part) -> bool:
    """A row-strided 2-D tile read in place though its row index is shifted by outer iterators: the desc's rows
    and columns are one block iterator each; the buffer's last index is the column iterator, plain, over the whole
    dimension; the one before is the row iterator plus an expression of the outer iterators
    (``data[p + rh * W + rw, ci]``, a direct convolution on flat pixels); no other index uses either."""
    if len(d_part) != 2 or any(len(m.block_iters) != 1 or m.extent % m.intrin_extent for m in d_part):
        return False
    rows, cols = (einsum.iter_vars[m.block_iters[0]].var for m in d_part)
    idx = einsum.accesses[buf]
    last = buf.shape[-1]
    if len(idx) < 2 or idx[-1] is not cols or not (isinstance(last, E.IntImm) and last.value == d_part[1].extent):
        return False
    shifted = to_linear(idx[-2])
    row_terms = [(term, c) for term, c in shifted.terms.values() if any(v is rows for v in collect_vars(term))]
    if not (len(row_terms) == 1 and row_terms[0][0] is rows and row_terms[0][1] == 1):
        return False
    return not any(v is rows or v is cols for ix in idx[:-2] for v in collect_vars(ix)) and \
        not any(v is cols for v in collect_vars(idx[-2]))


def _current_name(sch, block, pos: int) -> str:
    """The name of the buffer at first-appearance position ``pos`` in the block now."""
    return Einsum.of_block(sch.get(block)).order[pos].name


def _drop_trivial_copies(sch, copies) -> None:
    """Inline the reindex copies next to a padding copy: an input copy read only by its padded copy,
    an output copy fed by the padded output's copy-back. Other copies stay (they
    repack the data) and can be placed by later schedule rules."""
    for kind, rv in copies:
        try:
            copy = sch.get(rv)
        except (ScheduleError, KeyError, ValueError):
            continue
        if not isinstance(copy.body, BufferStore):
            continue
        try:
            if kind == "read":
                consumers = sch.get_consumers(rv)
                names = [sch.get(c).name_hint for c in consumers]
                if len(names) == 1 and names[0].endswith("_pad"):
                    sch.compute_inline(rv)
            else:
                producers = sch.get_producers(rv)
                names = [sch.get(p).name_hint for p in producers]
                if len(names) == 1 and names[0].endswith("_pad"):
                    sch.reverse_compute_inline(rv)
        except ScheduleError as err:
            logger.debug("kept copy %s: %s", copy.name_hint, err)


def apply_candidate(sch, candidate: TensorizeCandidate) -> LoopRV:
    """Rewrite the candidate's block so its innermost loops are the intrinsic's; return the
    outermost of them, ready for ``sch.tensorize(loop, candidate.intrin_name)``.

    Raises ``ScheduleError`` (from the primitive that cannot apply) when the block's loops were
    already transformed (apply candidates to a block still in its original loop nest), and
    ``ValueError`` when the block no longer matches the candidate.
    """
    return rewrite_for_candidate(sch, candidate)
