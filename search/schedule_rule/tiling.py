"""The tiling both multi-level tiling rules share: split loops by sampled perfect tiles into a
structure such as "SSRSRS", and put a write cache (or a fused elementwise consumer) into the tile."""
from __future__ import annotations

from tensorize.schedule import ScheduleError

from .analysis import is_elementwise_of

__all__ = ["tile_loops", "add_write_reuse"]


def tile_loops(sch, loops, kinds, structure: str, max_innermost_factor: int,
               aligned: dict[int, int] | None = None) -> list[list]:
    """Split each loop (kind "S" or "R") into as many levels as ``structure`` has of its kind and
    reorder them level by level; unit loops ("U") go first. ``aligned`` maps a loop's position to a
    multiple its innermost factor is drawn as (``sample_perfect_tile``'s ``innermost_multiple_of``).
    Returns the loops of each level of ``structure`` (outermost first)."""
    levels = {k: [i for i, c in enumerate(structure) if c == k] for k in "SR"}
    tiles: list[list] = [[] for _ in structure]
    units = []
    aligned = aligned or {}
    for position, (loop, kind) in enumerate(zip(loops, kinds)):
        if kind == "U":
            units.append(loop)
            continue
        positions = levels[kind]
        if len(positions) == 1:
            tiles[positions[0]].append(loop)
            continue
        # (0 leaves TVM's draw, and the trace as TVM's: the extension is recorded only when set)
        factors = sch.sample_perfect_tile(loop, n=len(positions), max_innermost_factor=max_innermost_factor,
                                          innermost_multiple_of=aligned.get(position, 0))
        for pos, part in zip(positions, sch.split(loop, factors=factors)):
            tiles[pos].append(part)
    order = units + [loop for tile in tiles for loop in tile]
    if len(order) > 1:
        sch.reorder(*order)
    if units:
        tiles[0] = units + tiles[0]
    return tiles


def add_write_reuse(sch, block, tiles, structure: str, levels, scope: str = "global") -> list:
    """Branches of ``sch`` (copies) where the block's output tile stays local: its single elementwise
    consumer is fused into the tile (``reverse_compute_at``), or else a ``cache_write`` stage is, after
    the last loop of the ``level``-th spatial tile (1-based, over the "S" positions of ``structure``),
    for each level in ``levels``. Branches that cannot be built are dropped."""
    s_positions = [i for i, c in enumerate(structure) if c == "S"]
    out = []
    consumers = sch.get_consumers(block)
    fuse = None
    if len(consumers) == 1 and is_elementwise_of(sch.get(consumers[0]), sch.get(block)):
        fuse = consumers[0]
    for level in levels:
        if level < 1 or level > len(s_positions):
            continue
        tile = next((tiles[p] for p in reversed(s_positions[:level]) if tiles[p]), None)
        if tile is None:
            continue
        branch = sch.copy()
        try:
            stage = fuse if fuse is not None else branch.cache_write(block, 0, scope)
            branch.reverse_compute_at(stage, tile[-1], preserve_unit_loops=True)
        except ScheduleError:
            continue
        out.append(branch)
    return out
