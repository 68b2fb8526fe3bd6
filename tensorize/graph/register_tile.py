"""The register tile of the default CPU schedule: the vector width of a reduction's last spatial axis and the
rows of its second-to-last that fill the accumulator registers (``default_schedule._schedule_reduction``).
"""
from __future__ import annotations

import math

from ..arith.index_map import IndexMap
from ..ir.expr import IterVar
from ..ir.functor import collect_vars

__all__ = ["accumulator_registers", "reuse_rows", "stores_in_iterator_order"]


def _vector_width(n: int, lanes: int) -> int:
    """The widest of ``2 * lanes``, ``lanes``, ``lanes / 2``, ... down to 2 that divides ``n`` (1 if none).

    Only whole or power-of-two parts of a register: LLVM splits a 24- or 25-lane vector into pieces
    with a shuffle per element (a 1x1 convolution to 24 channels ran at a tenth of its speed)."""
    width = 2 * lanes
    while width >= 2:
        if n % width == 0:
            return width
        width //= 2
    return 1


def _lane_width(n: int, lanes: int) -> int:
    """``_vector_width(n, lanes)``, except a whole register for an odd extent longer than one (197
    tokens), its last vector masked, where the widest divisor would be a sliver or a scalar."""
    width = _vector_width(n, lanes)
    return lanes if width < lanes // 2 and n > lanes else width


def accumulator_registers(lanes: int) -> int:
    """Vector registers the accumulator tile may take: 12 of AVX2's 16, 14 of AVX-512's 32 (the rest hold the
    weight vectors and the broadcast input).

    Parameters
    ----------
    lanes : int
        float32 lanes of a vector register (8: AVX2, 16: AVX-512).

    Returns
    -------
    int

    Examples
    --------
    >>> accumulator_registers(8), accumulator_registers(16)
    (12, 14)
    """
    return 14 if lanes >= 16 else 12


def _register_tile(last: int, rows_extent: int, lanes: int, registers: int | None = None) -> tuple[int, int]:
    """(vector width, rows) of the accumulator tile: ``rows`` x ``vec`` floats in at most
    ``registers`` vector registers (12 of AVX2's 16, 14 of AVX-512's 32: the rest hold the weight
    vectors and the broadcast input), the vector width a divisor of ``last`` made of whole registers
    or a power-of-two part of one. The rows need not divide their extent (the last tile is guarded):
    the choice maximises the accumulators doing useful work, ``rows * regs`` times the share of the
    guarded tiles' rows inside the extent (fewer than 8 independent accumulators leave the FMA
    pipes idle: BERT's 128-row dense layer ran 10% faster with 6 rows than with 4)."""
    return _scored_register_tile(last, rows_extent, lanes, registers)[:2]


def _scored_register_tile(last: int, rows_extent: int, lanes: int, registers: int | None = None):
    """``_register_tile``'s (vector width, rows) and their score (the accumulators doing useful work)."""
    if registers is None:
        registers = accumulator_registers(lanes)
    best, best_score = None, -1.0
    for vec in sorted({d for d in (2 * lanes, lanes) if last % d == 0} or {_lane_width(last, lanes)},
                      reverse=True):
        regs = max(1, vec // lanes)
        for rows in range(min(rows_extent, registers // regs), 0, -1):
            useful = rows_extent / (math.ceil(rows_extent / rows) * rows)
            score = rows * regs * useful
            if score > best_score + 1e-9:
                best, best_score = (rows, vec), score
    return best[1], best[0], best_score


def stores_in_iterator_order(blk, ns: int) -> bool:
    """Whether block ``blk``'s first ``ns`` iterators are spatial and it stores ``buf[those iterators]`` in order.

    Parameters
    ----------
    blk : Block
        The block.
    ns : int
        Its spatial iterators.

    Returns
    -------
    bool
    """
    ivs, body = blk.iter_vars, blk.body
    return all(iv.iter_type == IterVar.DataPar for iv in ivs[:ns]) and hasattr(body, "indices") \
        and len(body.indices) == ns and all(i is iv.var for i, iv in zip(body.indices, ivs))


def reuse_rows(sch, block, spatial: list) -> None:
    """Make the register tile's rows of axes that reuse the weight vectors (``spatial``: the block's spatial
    loops, bound one to one to its iterators). Where the second-to-last axis indexes an operand that the vector
    axis indexes too (each row would need its own weight vectors), the axes that index none of those operands
    move innermost, before the vector axis: when the block writes an intermediate buffer in iterator order,
    by permuting the block's iterators and that buffer's layout alike (so that ``fuse_image_pixels`` may then
    fuse two such axes into one of pixels), else by reordering the loops (the innermost such axis only). A
    transposed convolution's output phases pick its kernel taps: a tile of phases loaded 2 weight vectors per
    2 multiply-adds, a tile of 4 output columns 2 per 8.

    Parameters
    ----------
    sch : Schedule
        The schedule (changed in place when axes move; the caller reads the loops again).
    block : BlockRV
        The reduction block.
    spatial : list of LoopRV
        Its spatial loops, outermost first.
    """
    blk, ns = sch.get(block), len(spatial)
    ivs = blk.iter_vars
    if ns < 3 or [int(sch.get(lp).extent) for lp in spatial] != [int(iv.dom.extent) for iv in ivs[:ns]] \
            or any(iv.iter_type != IterVar.DataPar for iv in ivs[:ns]):
        return
    written = {id(region.buffer) for region in blk.writes}
    weights: set = set()
    for region in blk.reads:
        used = {id(v) for r in region.region for v in collect_vars(r.min)}
        if id(region.buffer) not in written and id(ivs[ns - 1].var) in used:
            weights |= used
    free = [k for k in range(ns - 1) if id(ivs[k].var) not in weights and int(ivs[k].dom.extent) > 1]
    if id(ivs[ns - 2].var) not in weights or not free:
        return
    order = [k for k in range(ns - 1) if k not in free] + free + [ns - 1]
    params = {id(b) for b in sch.mod["main"].buffer_map.values()}
    if len(blk.writes) == 1 and id(blk.writes[0].buffer) not in params and stores_in_iterator_order(blk, ns):
        trial = sch.copy()  # tried on a copy first: both steps apply or neither
        try:
            _permute(trial, block, order, len(ivs))
        except Exception:  # noqa: BLE001 - a consumer the new layout cannot serve: reorder the loops instead
            pass
        else:
            _permute(sch, block, order, len(ivs))
            return
    sch.reorder(*spatial[:free[-1]], *spatial[free[-1] + 1:ns - 1], spatial[free[-1]], spatial[ns - 1])


def _permute(sch, block, order: list, n_iters: int) -> None:
    """Put ``block``'s spatial iterators, and the axes of the buffer it writes, in ``order``."""
    ns = len(order)
    sch.transform_layout(block, ("write", 0), IndexMap.from_func(lambda *idx: tuple(idx[k] for k in order), ndim=ns))
    sch.transform_block_layout(block, IndexMap.from_func(
        lambda *idx: (*(idx[k] for k in order), *idx[ns:]), ndim=n_iters))
