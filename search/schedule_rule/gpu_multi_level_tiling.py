"""``multi_level_tiling_gpu``: MetaSchedule's CUDA tiling of reductions (SIMT code on CUDA cores).

With the structure ``"SSSRRSRS"`` a GEMM becomes ``i0 j0 | i1 j1 | i2 j2 | k0 | k1 | i3 j3 | k2 | i4 j4``:
the first spatial level is bound to ``blockIdx`` (``j0`` to ``.x``, ``i0`` to ``.y``), the second to
``vthread`` (virtual threads: serial in each thread, they spread a thread's outputs apart), the third
to ``threadIdx``.
Each input gets a ``shared`` copy computed at the first reduction level (one tile per ``k0``,
annotated ``meta_schedule.cooperative_fetch`` so ``rewrite_cooperative_fetch`` spreads its loops over
the block's threads) and the output tile of each thread stays in registers (``local`` cache written
back after the thread's loops).
"""
from __future__ import annotations

from .analysis import TILED, loop_kinds, needs_multi_level_tiling
from .base import RULES, ScheduleRule
from .gpu_limits import COOPERATIVE_FETCH
from .tiling import tile_loops

__all__ = ["MultiLevelTilingGPU", "bind_loops", "add_shared_reads"]


def bind_loops(sch, loops, axis: str, dims: str = "xyz"):
    """Bind ``loops`` (one tile level, outermost first) to the thread axes ``axis.x/y/z``: the innermost
    loop to ``.x``, the next to ``.y``, ...; leading loops beyond the axes are fused into the outermost
    one (unfused loops keep index arithmetic free of div/mod, which buffer compaction needs).

    Parameters
    ----------
    sch : Schedule
        The schedule.
    loops : list of LoopRV
        The loops of one level.
    axis : str
        ``"blockIdx"``, ``"threadIdx"`` or ``"vthread"``.
    dims : str
        The axes to use, innermost loop first.

    Returns
    -------
    list of LoopRV
        The bound loops, outermost first.
    """
    loops = list(loops)
    if len(loops) > len(dims):
        head = len(loops) - len(dims) + 1
        loops = [sch.fuse(*loops[:head])] + loops[head:]
    for loop, dim in zip(reversed(loops), dims):
        sch.bind(loop, f"{axis}.{dim}")
    return loops


def add_shared_reads(sch, block, loop, vector_lanes=(1, 2, 4), scope="shared") -> list:
    """A ``shared`` copy of every buffer ``block`` only reads, computed at ``loop`` and marked for a
    cooperative fetch with a sampled vector length.

    Parameters
    ----------
    sch : Schedule
        The schedule.
    block : BlockRV
        The consumer.
    loop : LoopRV
        Where the copies go (``compute_at``).
    vector_lanes : sequence of int
        Candidate elements per thread of the fetch's innermost loop.
    scope : str
        The copies' storage scope.

    Returns
    -------
    list of BlockRV
        The copy blocks.
    """
    blk = sch.get(block)
    written = {id(w.buffer) for w in blk.writes}
    indices = [i for i, r in enumerate(blk.reads) if id(r.buffer) not in written]
    copies = []
    for index in indices:
        copy = sch.cache_read(block, index, scope)
        sch.compute_at(copy, loop, preserve_unit_loops=True)
        lanes = sch.sample_categorical(list(vector_lanes), [1.0 / len(vector_lanes)] * len(vector_lanes))
        sch.annotate(copy, COOPERATIVE_FETCH, lanes)
        copies.append(copy)
    return copies


@RULES.register("multi_level_tiling_gpu")
class MultiLevelTilingGPU(ScheduleRule):
    """Tile a reduction for CUDA cores: ``structure`` levels, three bound spatial levels, shared reads,
    a register (``local``) output tile.

    Parameters
    ----------
    structure : str
        Tile levels, outermost first; its first three "S" levels are bound to ``blockIdx.x``,
        ``vthread.x`` and ``threadIdx.x``.
    max_innermost_factor : int
        Upper bound of the innermost factor of each split.
    vector_lanes : sequence of int
        Candidate vector lengths of the cooperative fetches.
    """

    def __init__(self, structure: str = "SSSRRSRS", max_innermost_factor: int = 64, vector_lanes=(1, 2, 4)):
        if structure.count("S") < 3 or "R" not in structure:
            raise ValueError(f"a GPU tiling structure needs three S levels and an R level, got {structure!r}")
        self.structure = structure
        self.max_innermost_factor = max_innermost_factor
        self.vector_lanes = tuple(vector_lanes)

    def apply(self, sch, block, ctx):
        """See ``ScheduleRule.apply``: the schedules ``sch`` branches into for ``block``."""
        blk = sch.get(block)
        if TILED in blk.annotations or not needs_multi_level_tiling(blk):
            return [sch]
        kinds = loop_kinds(sch, block)
        if not kinds or "O" in kinds or "S" not in kinds or "R" not in kinds:
            return [sch]
        sch.annotate(block, TILED, self.structure)
        tiles = tile_loops(sch, sch.get_loops(block), kinds, self.structure, self.max_innermost_factor)
        s_pos = [i for i, c in enumerate(self.structure) if c == "S"]
        r_pos = [i for i, c in enumerate(self.structure) if c == "R"]
        # bind before the caches go in: compute_at then sizes a shared copy for the whole thread block
        for pos, axis in zip(s_pos[:3], ("blockIdx", "vthread", "threadIdx")):
            tiles[pos] = bind_loops(sch, tiles[pos], axis)
        local = sch.cache_write(block, 0, "local")
        sch.reverse_compute_at(local, tiles[s_pos[2]][-1], preserve_unit_loops=True)
        add_shared_reads(sch, block, tiles[r_pos[0]][-1], self.vector_lanes)
        return [sch]
