"""``multi_level_tiling_wgmma``: GEMMs on Hopper's warpgroup MMA (``wgmma.mma_async``), for ``cuda -arch=sm_90a``.

A block computing ``C[i, j] += A[i, k] * B[j, k]`` or ``A[i, k] * B[k, j]`` (f16 or bf16 in, f32 out; B K-major or,
through the instruction's transpose, MN-major, then with K tiles of 64 only) branches into
one sketch per block tile (``warpgroups`` x 64 rows, ``n`` columns: one ``wgmma.m64n{n}k16`` per warpgroup
and K step) and K tile (``16 * k_steps``: the wgmma group one intrinsic issues), scheduled by
``intrinsics.cuda_wgmma_schedule``: accumulators in the warpgroups' registers, A and B tiles in shared
memory, row-major in the swizzled layout of ``32 * k_steps`` bytes the Tensor Cores read without bank
conflicts. The software-pipeline depth of the fetches is a sampled decision, mutated and measured like any
other; the fetches are spread over the threads by the ``rewrite_cooperative_fetch`` postproc, which also
turns the sampled depth into pipeline stages.

Block tiles the tensor memory accelerator can copy (rows and ``n`` among 64, 128, 256; K tiles of 64; a B
stored K x N in 64-column blocks; a batch axis folded into the rows) get a second, warp-specialised sketch
(``fetch="tma"``): a producer warpgroup copies the tiles with TMA into a sampled number of shared buffers while
the others multiply, and the thread blocks
walk the grid in a sampled number of block rows at a time (L2 reuse); ``cluster_tiles`` may add a third, in
clusters of two blocks that copy their common tile of B once, by TMA multicast. Other blocks, and the
untensorized branch, are left to the next rules. The warp-specialised sketches also get persistent variants:
at most one thread block per streaming multiprocessor, each walking several tiles, so that the producer fills
the next tile's buffers while the consumers store the last one's result (on an H100, 4096^3 f16: 626 against
596 TFLOPS).
"""
from __future__ import annotations

import itertools
import logging

import intrinsics.cuda_wgmma as wg
from intrinsics.cuda_tma import TMA_ROWS
from intrinsics.cuda_wgmma_schedule import gemm_operands, schedule_wgmma_gemm
from tensorize.schedule import ScheduleError

from .analysis import TILED
from .base import RULES, ScheduleRule
from .gpu_limits import GPULimits

logger = logging.getLogger(__name__)

__all__ = ["MultiLevelTilingWGMMA", "targets_wgmma"]


def targets_wgmma(target) -> bool:
    """Whether ``target`` runs ``wgmma`` (sm_90a: its arch-specific features).

    Parameters
    ----------
    target : Target
        A CUDA target.

    Returns
    -------
    bool
        True for ``cuda -arch=sm_90a``.
    """
    return (getattr(target, "arch", "") or "") == "sm_90a"


@RULES.register("multi_level_tiling_wgmma")
class MultiLevelTilingWGMMA(ScheduleRule):
    """Warpgroup-MMA sketches of a GEMM block (B stored N x K or K x N).

    Parameters
    ----------
    block_tiles : sequence of (int, int)
        ``(warpgroups, n)`` block tiles, one sketch each (``n`` in 64, 128, 256).
    k_steps : sequence of int
        ``k16`` steps per shared tile, one sketch each (1, 2 or 4).
    pipeline_depths : sequence of int
        Candidate software-pipeline depths of the fetches (0: none). Deep pipelines of large tiles exceed the
        shared memory and are dropped by the GPU verifier; on an H100, K tiles of 32 were fastest 4 stages deep.
    tma_stages : sequence of int
        Candidate shared buffers of the warp-specialised sketches (empty: no such sketches); too many for the
        shared memory are dropped by the verifier.
    raster_groups : sequence of int
        Candidate block rows walked together by the warp-specialised sketches (1: row by row); those that do
        not divide the block rows are left out.
    persistent_blocks : sequence of int, optional
        Block counts of persistent variants of the warp-specialised sketches (each block walks its tiles; the
        largest divisor of the tiles not above the count is launched); by default the target's multiprocessors
        (``GPULimits.multi_processor_count``: 132 on an H100 SXM or H200); ``()``: none.
    cluster_tiles : sequence of (int, int)
        Block tiles that also get a warp-specialised sketch in clusters of two blocks sharing B's tile by TMA
        multicast (even raster groups only). None by default: on an H100 the clustered kernel computed right but
        ran at half the speed of the unclustered one (336 against 658 TFLOPS), a cost not yet understood.
    """

    def __init__(self, block_tiles=((2, 256), (2, 128), (1, 256), (1, 128), (2, 64)), k_steps=(2, 4),
                 pipeline_depths=(0, 1, 2, 3, 4), tma_stages=(2, 3, 4, 5), raster_groups=(1, 2, 4, 8),
                 cluster_tiles=(), persistent_blocks=None):
        self.block_tiles = tuple(tuple(t) for t in block_tiles)
        self.k_steps = tuple(k_steps)
        self.pipeline_depths = tuple(pipeline_depths)
        self.tma_stages = tuple(tma_stages)
        self.raster_groups = tuple(raster_groups)
        self.cluster_tiles = tuple(tuple(t) for t in cluster_tiles)
        self.persistent_blocks = None if persistent_blocks is None else tuple(persistent_blocks)
        for _, n in self.block_tiles:
            if n not in wg.WGMMA_N:
                raise ValueError(f"wgmma has no N of {n}; choose from {wg.WGMMA_N}")
        for steps in self.k_steps:
            if steps not in wg.K_STEPS:
                raise ValueError(f"no wgmma intrinsic issues {steps} K steps; choose from {wg.K_STEPS}")

    def apply(self, sch, block, ctx):
        """See ``ScheduleRule.apply``: the schedules ``sch`` branches into for ``block``."""
        blk = sch.get(block)
        operands = gemm_operands(blk) if TILED not in blk.annotations and targets_wgmma(ctx.target) else None
        if operands is None:
            return [sch]
        # a B stored K x N is read in 64 x 64 swizzled blocks: K tiles of 64 only
        k_steps = self.k_steps if operands[2] else (4,)
        out = []
        for (warpgroups, n), steps in itertools.product(self.block_tiles, k_steps):
            branch = sch.copy()
            try:
                depth = branch.sample_categorical(list(self.pipeline_depths),
                                                  [1.0 / len(self.pipeline_depths)] * len(self.pipeline_depths))
                schedule_wgmma_gemm(branch, block, warpgroups=warpgroups, n=n, k_steps=steps, stages=depth,
                                    fetch="annotate")
            except (ScheduleError, ValueError) as err:
                logger.debug("wgmma %dx%dx%d does not apply to %s: %s", 64 * warpgroups, n, 16 * steps,
                             blk.name_hint, err)
                continue
            out.append(branch)
        if self.tma_stages:
            out += self._tma_sketches(sch, block, blk, self._persistent_blocks(ctx.target))
        return out + [sch]

    def _persistent_blocks(self, target) -> tuple:
        if self.persistent_blocks is not None:
            return self.persistent_blocks
        sms = GPULimits.of(target).multi_processor_count
        return (sms,) if sms else ()

    def _tma_sketches(self, sch, block, blk, persistent_blocks) -> list:
        out = []
        M = int(blk.iter_vars[-3].dom.extent)
        tiles = [(t, 1, 0) for t in self.block_tiles] + [(t, 2, 0) for t in self.cluster_tiles if t in self.block_tiles]
        tiles += [(t, 1, p) for t in self.block_tiles for p in persistent_blocks]
        for (warpgroups, n), cluster, persistent in tiles:
            if 64 * warpgroups not in TMA_ROWS or n not in TMA_ROWS:
                continue
            rows = -(-M // (64 * warpgroups))
            groups = [g for g in self.raster_groups if rows % g == 0 and (cluster == 1 or g % 2 == 0)]
            if not groups:
                if cluster > 1:
                    continue
                groups = [1]
            branch = sch.copy()
            try:
                stages = branch.sample_categorical(list(self.tma_stages), [1.0 / len(self.tma_stages)] * len(
                    self.tma_stages))
                group = branch.sample_categorical(groups, [1.0 / len(groups)] * len(groups))
                schedule_wgmma_gemm(branch, block, warpgroups=warpgroups, n=n, k_steps=4, stages=stages,
                                    fetch="tma", group=group, cluster=cluster, persistent=persistent)
            except (ScheduleError, ValueError) as err:
                logger.debug("warp-specialised wgmma %dx%d does not apply to %s: %s", 64 * warpgroups, n,
                             blk.name_hint, err)
                continue
            out.append(branch)
        return out
