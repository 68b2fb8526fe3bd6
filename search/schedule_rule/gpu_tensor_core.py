"""``multi_level_tiling_tensor_core``: GEMM-like blocks on Tensor Cores (WMMA), for CUDA targets.

For each WMMA multiply-accumulate intrinsic the target runs, the tensorization candidate generator
(``search.candidates``) rewrites the block so its innermost loops are one 16x16x16 tile (reindex,
layout, padding for non-dividing shapes). The loops outside are tiled ``"SSRRS"``::

    block tile (blockIdx) | warps (threadIdx.y/z) | k0 | k1 | warp tiles | 16x16x16 intrinsic

Inputs are copied to ``shared`` memory at ``k0`` (cooperative fetch, vectorized, rows of 32 bytes padded
to 48 against bank conflicts, software-pipelined to a sampled depth: the tiles of the next iterations
load with ``cp.async`` while this one computes; in the intrinsic's tile layout: the
candidate's layout copies are inlined into the fetch and into the output's store where they can be) and into ``wmma.matrix_a/b``
fragments at ``k1``; the output tile of each warp accumulates in ``wmma.accumulator`` fragments,
zeroed by the fill intrinsic and written back by the store intrinsic. Every warp-level block is
annotated ``meta_schedule.auto_tensorize`` (``rewrite_tensorize`` tensorizes it) and the compute
``meta_schedule.warp_execution`` (threadIdx.x is the 32 lanes).
"""
from __future__ import annotations

import logging

from tensorize.ir import dtype as dt
from tensorize.ir.functor import substitute
from tensorize.ir.tensor_intrin import TensorIntrin
from tensorize.schedule import ScheduleError

from ..candidates import apply_candidate, get_tensorize_candidates
from .analysis import AUTO_TENSORIZE, TILED, loop_kinds, needs_multi_level_tiling
from .base import RULES, ScheduleRule
from .gpu_limits import COOPERATIVE_FETCH, PIPELINE_DEPTH, WARP_EXECUTION, GPULimits
from .gpu_multi_level_tiling import bind_loops
from .tiling import tile_loops

logger = logging.getLogger(__name__)

__all__ = ["MultiLevelTilingTensorCore", "WMMA_FAMILIES"]

# sync intrinsic -> (load a, load b, fill, store)
WMMA_FAMILIES = {
    "wmma_sync_16x16x16_f16f16f32": ("wmma_load_16x16x16_f16_a", "wmma_load_16x16x16_f16_b",
                                     "wmma_fill_16x16x16_f32", "wmma_store_16x16x16_f32_global"),
    "wmma_sync_16x16x16_f16f16f16": ("wmma_load_16x16x16_f16_a", "wmma_load_16x16x16_f16_b",
                                     "wmma_fill_16x16x16_f16", "wmma_store_16x16x16_f16_global"),
    "wmma_sync_16x16x16_s8s8s32": ("wmma_load_16x16x16_s8_a", "wmma_load_16x16x16_s8_b",
                                   "wmma_fill_16x16x16_s32", "wmma_store_16x16x16_s32_global"),
}
_STRUCTURE = "SSRRS"


def _inner_tile(sch, block, intrin) -> None:
    """Blockize the two innermost loops of a copy block and mark the tile for ``intrin``."""
    loops = sch.get_loops(block)
    tile = sch.blockize(loops[-2])
    sch.annotate(tile, AUTO_TENSORIZE, intrin)


def _inline_copy(sch, blocks, reverse: bool) -> None:
    """Inline the candidate's layout copy (``*_reindex*``) into the shared fetch (or the output copy into
    the accumulator's store), so no separate kernel relayouts a whole operand through global memory;
    a copy that cannot be inlined (a padded output's guard) stays a kernel of its own."""
    for block in blocks:
        blk = sch.get(block)
        if "reindex" not in blk.name_hint:
            continue
        try:
            # iterate the copy over the tiled layout, so its store (or load) indices are plain iterators
            target = blk.body.value if reverse else blk.body
            indices = list(target.indices)
            ivs = [iv.var for iv in blk.iter_vars]
            sch.transform_block_layout(block, lambda *args: [substitute(i, dict(zip(ivs, args))) for i in indices])
            if reverse:
                sch.reverse_compute_inline(block)
            else:
                sch.compute_inline(block)
        except ScheduleError as err:
            logger.debug("the layout copy %s stays: %s", sch.get(block).name_hint, err.reason)


def _pad_rows(sch, shared) -> None:
    """Pad the rows of a shared tile of 32 bytes (16 f16) to 48: the eight rows a fragment load
    (``ldmatrix``) reads at once then fall in distinct banks instead of two rows per bank; 16-byte rows
    (int8) are conflict-free already. TVM's Tensor Core rule aligns its shared tiles the same way."""
    buf = sch.get(shared).writes[0].buffer
    if len(buf.shape) < 2 or not hasattr(buf.shape[-1], "value"):
        return
    elem = max(1, dt.bits_of(buf.dtype) // 8)
    cols = int(buf.shape[-1].value)
    if cols * elem == 32:
        sch.storage_align(shared, 0, len(buf.shape) - 2, 32 // elem, 16 // elem)


def _operand_reads(sch, block, cand) -> list:
    """(read index of ``block``, desc operand) for the desc's A and B operands."""
    blk = sch.get(block)
    names = dict(cand.operands)
    out = []
    for operand in ("A", "B"):
        base = names.get(operand)
        for index, region in enumerate(blk.reads):
            name = region.buffer.name
            if base is not None and (name == base or name.startswith(base + "_")):
                out.append((index, operand))
                break
    return out


@RULES.register("multi_level_tiling_tensor_core")
class MultiLevelTilingTensorCore(ScheduleRule):
    """Tensor Core branches of a block, one per WMMA intrinsic with a candidate (the untensorized block
    is left to the next rules too).

    Parameters
    ----------
    intrinsics : sequence of str, optional
        WMMA sync intrinsics to try (default: those of ``ctx.intrinsics`` this target runs).
    max_innermost_factor : int
        Upper bound of the warp-tile factors.
    vector_lanes : sequence of int
        Candidate vector lengths of the cooperative fetches.
    pipeline_depths : sequence of int
        Candidate software-pipeline depths of the shared fetches (0: none; ``d``: the tiles of ``d``
        iterations ahead are fetched, with ``cp.async`` on sm_80+, while this one computes).
    """

    def __init__(self, intrinsics=None, max_innermost_factor: int = 4, vector_lanes=(1, 2, 4, 8),
                 pipeline_depths=(0, 1, 2)):
        self.intrinsics = None if intrinsics is None else tuple(intrinsics)
        self.max_innermost_factor = max_innermost_factor
        self.vector_lanes = tuple(vector_lanes)
        self.pipeline_depths = tuple(pipeline_depths)

    def _intrinsics(self, ctx):
        names = self.intrinsics if self.intrinsics is not None else ctx.intrinsics
        limits = GPULimits.of(ctx.target)
        return [n for n in names if n in WMMA_FAMILIES and limits.supports(TensorIntrin.get(n).meta)]

    def apply(self, sch, block, ctx):
        """See ``ScheduleRule.apply``: the schedules ``sch`` branches into for ``block``."""
        blk = sch.get(block)
        if TILED in blk.annotations or not needs_multi_level_tiling(blk):
            return [sch]
        out = []
        for intrin in self._intrinsics(ctx):
            try:
                cands = get_tensorize_candidates(sch, block, intrin)
            except (ScheduleError, ValueError, KeyError) as err:
                logger.debug("no %s candidates for %s: %s", intrin, blk.name_hint, err)
                continue
            for cand in list(cands)[:1]:
                branch = sch.copy()
                try:
                    self._tensorize(branch, block, cand, intrin)
                except (ScheduleError, ValueError) as err:
                    logger.debug("%s does not apply to %s: %s", intrin, blk.name_hint, err)
                    continue
                out.append(branch)
        return out + [sch]

    def _tensorize(self, sch, block, cand, intrin) -> None:
        load_a, load_b, fill, store = WMMA_FAMILIES[intrin]
        inner = apply_candidate(sch, cand)
        loops = sch.get_loops(block)
        inner_var = sch.get(inner).loop_var
        split_at = next(i for i, lp in enumerate(loops) if sch.get(lp).loop_var is inner_var)
        kinds = loop_kinds(sch, block)[:split_at]
        if "O" in kinds or "S" not in kinds or "R" not in kinds:
            raise ValueError("the loops outside the intrinsic are not plain spatial/reduction loops")
        sch.annotate(block, TILED, _STRUCTURE)
        tiles = tile_loops(sch, loops[:split_at], kinds, _STRUCTURE, self.max_innermost_factor)
        tiles[0] = bind_loops(sch, tiles[0], "blockIdx")
        tiles[1] = bind_loops(sch, tiles[1], "threadIdx", "zy")  # warps; threadIdx.x is the lanes
        acc = sch.cache_write(block, 0, "wmma.accumulator")
        sch.reverse_compute_at(acc, tiles[1][-1], preserve_unit_loops=True)
        _inline_copy(sch, sch.get_consumers(acc), reverse=True)  # the store writes the output itself
        # the init before blockize: its fill tiles then cover exactly the warp's accumulator tiles
        init = sch.decompose_reduction(block, tiles[2][0])
        _inner_tile(sch, init, fill)
        compute = sch.blockize(inner)
        sch.annotate(compute, AUTO_TENSORIZE, intrin)
        sch.annotate(compute, WARP_EXECUTION, 1)
        sch.annotate(compute, TILED, _STRUCTURE)
        reads = _operand_reads(sch, compute, cand)
        if len(reads) != 2:
            raise ValueError("the intrinsic's A and B operands are not found among the block's reads")
        for index, operand in reads:
            shared = sch.cache_read(compute, index, "shared")
            sch.compute_at(shared, tiles[2][-1], preserve_unit_loops=True)
            _pad_rows(sch, shared)
            lanes = sch.sample_categorical(list(self.vector_lanes), [1.0 / len(self.vector_lanes)] * len(self.vector_lanes))
            sch.annotate(shared, COOPERATIVE_FETCH, lanes)
            _inline_copy(sch, sch.get_producers(shared), reverse=False)  # fetch straight from the input
        if any(self.pipeline_depths):  # something other than "no pipeline" to choose from
            depth = sch.sample_categorical(list(self.pipeline_depths),
                                           [1.0 / len(self.pipeline_depths)] * len(self.pipeline_depths))
            sch.annotate(tiles[2][-1], PIPELINE_DEPTH, depth)
        for index, operand in reads:
            frag = sch.cache_read(compute, index, "wmma.matrix_a" if operand == "A" else "wmma.matrix_b")
            sch.compute_at(frag, tiles[3][-1], preserve_unit_loops=True)
            _inner_tile(sch, frag, load_a if operand == "A" else load_b)
        _inner_tile(sch, acc, store)
