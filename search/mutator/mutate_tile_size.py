"""``mutate_tile_size``: move a factor between two levels of one ``sample_perfect_tile`` decision."""
from __future__ import annotations

from tensorize.schedule.trace import Instruction

from .base import MUTATORS, Mutator, replace_instruction

__all__ = ["MutateTileSize"]


def _divisors(n: int) -> list[int]:
    return [d for d in range(2, n + 1) if n % d == 0]


@MUTATORS.register("mutate_tile_size")
class MutateTileSize(Mutator):
    """Pick a ``sample_perfect_tile`` decision, a level ``x`` with a factor above 1 and another level
    ``y``; divide ``tile[x]`` by one of its divisors ``d`` and multiply ``tile[y]`` by it (the product,
    the loop extent, stays; the innermost level stays within ``max_innermost_factor`` and, where it was drawn
    as a multiple of ``innermost_multiple_of``, stays such a multiple)."""

    def apply(self, trace, ctx, rng):
        """See ``Mutator.apply``: a copy of ``trace`` with one decision of this kind changed, or None."""
        tiles = [inst for inst in trace.insts if inst.kind == "sample_perfect_tile"
                 and sum(1 for f in inst.decision if f > 1) >= 1 and len(inst.decision) > 1]
        while tiles:
            inst = tiles.pop(rng.randrange(len(tiles)))
            new = self._mutate(list(inst.decision), int(inst.args.get("max_innermost_factor", 0) or 0), rng,
                               int(inst.args.get("innermost_multiple_of", 0) or 0))
            if new is not None:
                return replace_instruction(trace, inst, Instruction(inst.kind, dict(inst.args), inst.outputs, new))
        return None

    @staticmethod
    def _mutate(tile: list[int], max_innermost: int, rng, multiple: int = 0) -> list[int] | None:
        moves = []
        n = len(tile)
        keep_aligned = multiple > 1 and tile[-1] % multiple == 0
        for x in range(n):
            for d in _divisors(tile[x]):
                for y in range(n):
                    if y == x:
                        continue
                    if y == n - 1 and max_innermost > 0 and tile[y] * d > max_innermost:
                        continue
                    if keep_aligned and x == n - 1 and (tile[x] // d) % multiple:
                        continue
                    moves.append((x, y, d))
        if not moves:
            return None
        x, y, d = moves[rng.randrange(len(moves))]
        tile[x] //= d
        tile[y] *= d
        return tile
