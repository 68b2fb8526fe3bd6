"""``multi_level_tiling``: MetaSchedule's CPU tiling of reductions and reuse-carrying blocks."""
from __future__ import annotations

from tensorize.graph.default_schedule import fuse_image_pixels

from .analysis import TILED, contiguous_output_loop, is_elementwise_of, loop_kinds, needs_multi_level_tiling
from .base import RULES, ScheduleRule
from .tiling import add_write_reuse, tile_loops

__all__ = ["MultiLevelTiling"]


@RULES.register("multi_level_tiling")
class MultiLevelTiling(ScheduleRule):
    """Tile a block's loops as ``structure`` (CPU: "SSRSRS": spatial loops split into 4 levels by
    ``sample_perfect_tile``, reduction loops into 2, reordered level by level), annotate the block
    ``meta_schedule.tiling_structure``, and branch over where the output tile is cached.

    With ``structure="SSRSRS"`` a GEMM becomes ``i0 j0 | i1 j1 | k0 | i2 j2 | k1 | i3 j3``: ``i3 x j3`` is
    the register tile (``j3`` vectorized, ``i3`` unrolled by the postprocs), ``k1`` runs over it, and
    the write cache holds the accumulators of one ``i1 j1`` (level 2) or ``i0 j0`` (level 1) tile.

    Parameters
    ----------
    structure : str
        Tile levels from outer to inner ("S" spatial, "R" reduction).
    max_innermost_factor : int
        Upper bound of the innermost factor of each split.
    write_levels : sequence of int
        The spatial levels (1-based) after which a write cache / fused consumer may go.
    write_required : bool
        Drop the branch without a write cache.
    align_vector_tile : bool
        Draw the innermost tile of the loop that indexes the output's contiguous dimension (the one the
        postprocs vectorize) as a multiple of the target's vector lanes where its extent allows: a tile
        of half a vector register (depthwise ``c = [1, 2, 2, 8]`` on AVX-512) interleaves two output
        positions in one register, whose loads and stores are then gathers and scatters.
    fuse_pixels : bool
        On a CPU target, also tile a copy of the block whose image rows and columns (and its elementwise
        epilogue's) are fused into one axis of pixels, where that fills the register tile better
        (``tensorize.graph.default_schedule.fuse_image_pixels``: a 7x7 image's 49 pixels make 8 full tiles of
        6 where its rows made tiles of at most 7): the sketches the default schedule's fast programs come from.
    """

    def __init__(self, structure: str = "SSRSRS", max_innermost_factor: int = 64, write_levels=(1, 2),
                 write_required: bool = False, write_scope: str = "global", align_vector_tile: bool = True,
                 fuse_pixels: bool = True):
        self.structure = structure
        self.fuse_pixels = fuse_pixels
        self.align_vector_tile = align_vector_tile
        self.max_innermost_factor = max_innermost_factor
        self.write_levels = tuple(write_levels)
        self.write_required = write_required
        self.write_scope = write_scope

    def apply(self, sch, block, ctx):
        """See ``ScheduleRule.apply``: the schedules ``sch`` branches into for ``block``."""
        blk = sch.get(block)
        if TILED in blk.annotations or not needs_multi_level_tiling(blk):
            return [sch]
        kinds = loop_kinds(sch, block)
        if not kinds or "O" in kinds or "S" not in kinds:
            return [sch]
        fused = self._fused_pixels(sch, block, ctx) if self.fuse_pixels else None
        branches = self._tile(sch, block, ctx, kinds)
        if fused is not None:
            branches += self._tile(fused, block, ctx, loop_kinds(fused, block))
        return branches

    @staticmethod
    def _fused_pixels(sch, block, ctx):
        """A copy of ``sch`` with the image rows and columns of ``block`` and of its elementwise epilogue fused
        into one axis of pixels (``fuse_image_pixels``, as the default CPU schedule does), or None: not a CPU
        target, no such epilogue, or the register tile would not fill better."""
        if ctx is None or ctx.target.kind.name != "llvm":
            return None
        consumers = sch.get_consumers(block)
        if len(consumers) != 1 or not is_elementwise_of(sch.get(consumers[0]), sch.get(block)):
            return None  # the output is the function's: its layout cannot change
        fused = sch.copy()
        lanes = ctx.vector_lanes(str(sch.get(block).writes[0].buffer.dtype))
        # (another result than the epilogue is a local copy made for an epilogue of another shape: not this sketch)
        return fused if fuse_image_pixels(fused, block, consumers[0], lanes) is consumers[0] else None

    def _tile(self, sch, block, ctx, kinds) -> list:
        blk = sch.get(block)
        aligned = {}
        if self.align_vector_tile and ctx is not None and ctx.target.kind.name == "llvm":
            position = contiguous_output_loop(sch, block)
            if position is not None and kinds[position] == "S":
                aligned[position] = ctx.vector_lanes(str(blk.writes[0].buffer.dtype))
        sch.annotate(block, TILED, self.structure)
        tiles = tile_loops(sch, sch.get_loops(block), kinds, self.structure, self.max_innermost_factor, aligned)
        branches = add_write_reuse(sch, block, tiles, self.structure, self.write_levels, self.write_scope)
        if not self.write_required or not branches:
            branches.insert(0, sch)
        return branches
