"""Apply a ``TensorizeCandidate``: reindex, layouts, padding, tiling (see ``search.tensor_candidates``).

Every step is a schedule primitive, so the result is recorded in ``sch.trace`` and replays.
"""
from __future__ import annotations

import logging

from tensorize.ir import expr as E
from tensorize.ir.index_map import IndexMap
from tensorize.ir.stmt import BufferStore
from tensorize.schedule import ScheduleError
from tensorize.schedule.rv import LoopRV

from .einsum import Einsum, desc_compute_block
from .tensor_candidates import TensorizeCandidate, _covered_positions, _operand_dims

logger = logging.getLogger(__name__)


def _fuse(vars_, extents):
    """``v0 * e1 * e2 + v1 * e2 + v2`` for the iterators of one group."""
    expr = None
    for v, e in zip(vars_, extents):
        expr = v if expr is None else E.add(E.mul(expr, e), v)
    return expr


def rewrite_for_candidate(sch, cand: TensorizeCandidate) -> LoopRV:
    from tensorize.ir.tensor_intrin import TensorIntrin

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
    desc_block, _ = desc_compute_block(TensorIntrin.get(cand.intrin_name).desc)
    desc = Einsum.of_block(desc_block)
    desc_by_name = {b.name: b for b in desc.accesses}
    block_role = {b: name for name, b in ((d, bb) for d, bb in cand.operands)}  # block buffer name -> desc name
    roles = [block_role[b.name] for b in einsum.order]  # role of each buffer, by first-appearance position
    covered = {k: _covered_positions(einsum, b) for k, b in enumerate(einsum.order)}
    n = len(cand.iter_extents)
    ext = cand.iter_extents

    # 1. reindex the operands whose layout must change (an operand already indexed by its iterators
    #    in the final order is used in place); output first, then inputs (positions stay stable).
    fused_maps, copies = [], []
    for pos, (buf, role) in enumerate(zip(einsum.order, roles)):
        o_part, d_part = _operand_dims(desc, desc_by_name[role], cand.mappings, cand.outer_iters, covered[pos])
        src = [E.Var(f"v{k}", "int32") for k in covered[pos]]
        var_of = dict(zip(covered[pos], src))
        dst = [var_of[k] for k in o_part] + [_fuse([var_of[k] for k in m.block_iters],
                                                   [ext[k] for k in m.block_iters]) for m in d_part]
        changes = len(dst) != len(src) or any(d is not s for d, s in zip(dst, src)) or len(d_part) > 1
        fused_maps.append(IndexMap(src, dst) if changes or not _plain_access(einsum, buf, covered[pos]) else None)
        if fused_maps[-1] is not None:
            copies.append(("write" if pos == 0 else "read", sch.reindex(block, buf.name)))

    # 2. fused layouts of the copies and the block's iteration space.
    for pos, index_map in enumerate(fused_maps):
        if index_map is not None and not _is_identity(index_map):
            sch.transform_layout(block, _current_name(sch, block, pos), index_map)
    ivars = [E.Var(f"v{k}", "int32") for k in range(n)]
    block_map = [ivars[k] for k in cand.outer_iters] + [
        _fuse([ivars[k] for k in m.block_iters], [ext[k] for k in m.block_iters]) for m in cand.mappings]
    if not _is_identity(IndexMap(ivars, block_map)):
        sch.transform_block_layout(block, IndexMap(ivars, block_map))

    # 3. padding of the fused iterators.
    n_outer = len(cand.outer_iters)
    if cand.needs_padding:
        sch.pad_einsum(block, [1] * n_outer + [m.intrin_extent for m in cand.mappings])

    # 4. tiles of the desc's shape, dense in memory.
    for pos, role in enumerate(roles):
        o_part, d_part = _operand_dims(desc, desc_by_name[role], cand.mappings, cand.outer_iters, covered[pos])
        if len(d_part) <= 1 or fused_maps[pos] is None:
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


def _is_identity(index_map: IndexMap) -> bool:
    src, dst = index_map.initial_indices, index_map.final_indices
    return len(src) == len(dst) and all(d is s for d, s in zip(dst, src))


def _plain_access(einsum: Einsum, buf, covered) -> bool:
    """``buf`` is indexed by exactly its iterators, in block order, over its whole shape."""
    idx = einsum.accesses[buf]
    ivs = [einsum.iter_vars[k] for k in covered]
    return (len(idx) == len(ivs) and all(ix is iv.var for ix, iv in zip(idx, ivs))
            and all(isinstance(s, E.IntImm) and s.value == int(iv.dom.extent) for s, iv in zip(buf.shape, ivs)))


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
