"""Sampling: ``sample_perfect_tile`` and ``sample_categorical``. Decisions are recorded in the trace
and can be given back (``decision=``) to replay or mutate a schedule."""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from ..base import ScheduleBase, primitive
from ..error import ScheduleError
from ..rv import ExprRV, LoopRV


_MAX_TILE_LEVELS = 16  # tiling levels of one loop (SSRSRS uses 4); more is a mistake, and slow to enumerate


@lru_cache(maxsize=4096)
def perfect_tilings(extent: int, n: int, max_innermost_factor: int) -> tuple[tuple[int, ...], ...]:
    """All ordered ways to write ``extent`` as a product of ``n`` factors with the innermost at most
    ``max_innermost_factor`` (0 or less: no limit).

    Parameters
    ----------
    extent : int
        The loop extent.
    n : int
        The number of factors.
    max_innermost_factor : int
        The largest innermost factor (0 or less: no limit).

    Returns
    -------
    tuple of tuple of int
        Every tiling, factors outermost first.

    Examples
    --------
    >>> perfect_tilings(4, 2, 0)
    ((1, 4), (2, 2), (4, 1))
    """
    def rec(rest: int, k: int) -> list[tuple[int, ...]]:
        if k == 1:
            return [(rest,)]
        out = []
        for d in range(1, rest + 1):
            if rest % d == 0:
                out.extend((d,) + tail for tail in rec(rest // d, k - 1))
        return out

    tilings = rec(extent, n)
    if max_innermost_factor > 0:
        tilings = [t for t in tilings if t[-1] <= max_innermost_factor]
    return tuple(tilings)


def innermost_choices(extent: int, max_innermost_factor: int, innermost_multiple_of: int = 0) -> list[int]:
    """The innermost factors ``sample_perfect_tile`` draws from: the divisors of ``extent`` up to
    ``max_innermost_factor`` (0 or less: no limit) that are multiples of ``innermost_multiple_of``, or all
    of those divisors where none is such a multiple (or ``innermost_multiple_of`` is 0 or 1).

    Parameters
    ----------
    extent : int
        The loop extent.
    max_innermost_factor : int
        The largest innermost factor (0 or less: no limit).
    innermost_multiple_of : int
        The multiple wanted (0 or 1: none).

    Returns
    -------
    list of int
        The allowed innermost factors, ascending.

    Examples
    --------
    >>> innermost_choices(32, 64, 16)
    [16, 32]
    >>> innermost_choices(112, 64, 16)
    [16]
    >>> innermost_choices(7, 64, 16)
    [1, 7]
    """
    limit = max_innermost_factor if max_innermost_factor > 0 else extent
    divisors = [d for d in range(1, min(extent, limit) + 1) if extent % d == 0]
    if innermost_multiple_of > 1:
        aligned = [d for d in divisors if d % innermost_multiple_of == 0]
        if aligned:
            return aligned
    return divisors


def draw_tiling(rng, extent: int, n: int, max_innermost_factor: int, innermost_multiple_of: int = 0) -> list[int]:
    """A tiling of ``extent`` into ``n`` factors: the innermost uniformly among the allowed divisors, the
    others uniformly over the tilings of what is left (TVM's ``SamplePerfectTile``; the search's joint tile
    draws use it too).

    Parameters
    ----------
    rng : random.Random
        The random source.
    extent : int
        The loop extent.
    n : int
        The number of factors.
    max_innermost_factor : int
        The largest innermost factor (0 or less: no limit).
    innermost_multiple_of : int
        Prefer innermost factors that are multiples of this (see ``innermost_choices``).

    Returns
    -------
    list of int
        The factors, outermost first.

    Examples
    --------
    >>> import random
    >>> tiles = draw_tiling(random.Random(0), 32, 3, 16, 8)
    >>> tiles[-1] in (8, 16) and tiles[0] * tiles[1] * tiles[2] == 32
    True
    """
    limit = max_innermost_factor if max_innermost_factor > 0 else extent
    if extent < 1:
        raise ScheduleError(f"cannot tile a loop of extent {extent}")
    if n == 1:
        if extent > limit:
            raise ScheduleError(f"no tiling of extent {extent} into 1 factor has the innermost factor "
                                f"at most {max_innermost_factor}")
        return [extent]
    innermost = rng.choice(innermost_choices(extent, max_innermost_factor, innermost_multiple_of))
    return list(rng.choice(perfect_tilings(extent // innermost, n - 1, 0))) + [innermost]


class Sampling(ScheduleBase):
    """Random sampling: ``sample_perfect_tile`` and ``sample_categorical``; decisions go into the trace."""
    @primitive
    def sample_perfect_tile(self, loop: LoopRV, n: int, max_innermost_factor: int = 16,
                            decision: Sequence[int] | None = None, *, innermost_multiple_of: int = 0) -> list[ExprRV]:
        """Sample ``n`` factors whose product is the loop's extent (innermost at most
        ``max_innermost_factor``), as MetaSchedule does: the innermost factor uniformly among the
        extent's divisors up to ``max_innermost_factor``, then the outer factors uniformly over the
        tilings of the rest. (Uniform over whole tilings would make a small innermost factor, the one
        least fit to vectorize, by far the likeliest: 34% of 4-level tilings of 32 end in 1, 7% in 16.)

        Parameters
        ----------
        loop : LoopRV
            The loop to tile.
        n : int
            The number of factors.
        max_innermost_factor : int
            The largest innermost factor.
        decision : list of int, optional
            Fixed factors (replaying a trace); sampled when None.
        innermost_multiple_of : int
            Draw the innermost factor among the allowed divisors that are multiples of this (the search
            passes the vector lanes for the loop it will vectorize), where the extent has any; 0 (TVM's
            behaviour) or 1: no such constraint. A given ``decision`` is not checked against it.

        Returns
        -------
        list of ExprRV
            The factors, outermost first.

        Example::

            i, j, k = sch.get_loops(sch.get_block("C"))
            factors = sch.sample_perfect_tile(i, n=4, max_innermost_factor=16)
            sch.split(i, factors=factors)

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul(), seed=1)
        >>> i, j, k = sch.get_loops(sch.get_block("C"))
        >>> factors = sch.sample_perfect_tile(i, n=2, max_innermost_factor=4)
        >>> int(factors[0]) * int(factors[1])
        16
        >>> _ = sch.split(i, factors)
        """
        _, _, for_node = self._loop(loop)
        extent = self._int(for_node.extent, "the loop extent")
        n = self._int(n, "n")
        if not 1 <= n <= _MAX_TILE_LEVELS:
            raise ScheduleError(f"sample_perfect_tile: n must be between 1 and {_MAX_TILE_LEVELS}, got {n}")
        if decision is not None:
            decision = [int(d) for d in decision]
            prod = 1
            for d in decision:
                prod *= d
            if len(decision) != n or prod != extent:
                raise ScheduleError(f"decision {decision} is not a perfect tiling of extent {extent} into {n} factors")
        else:
            decision = draw_tiling(self._rng, extent, n, max_innermost_factor, int(innermost_multiple_of))
        self._record_decision(list(decision))
        return [ExprRV(d) for d in decision]

    @primitive
    def sample_categorical(self, candidates: Sequence[int], probs: Sequence[float],
                           decision: int | None = None) -> ExprRV:
        """Pick one of ``candidates`` with probabilities ``probs``; the decision is the chosen index.

        Parameters
        ----------
        candidates : list of int
            The values to choose from.
        probs : list of float
            Their probabilities.
        decision : int, optional
            A fixed index (replaying a trace); sampled when None.

        Returns
        -------
        ExprRV
            The chosen value.

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul(), seed=0)
        >>> int(sch.sample_categorical([16, 64], [0.0, 1.0]))
        64
        """
        candidates = [int(c) for c in candidates]
        if len(candidates) != len(probs) or not candidates:
            raise ScheduleError("sample_categorical needs as many probabilities as candidates (and at least one)")
        if decision is None:
            decision = self._rng.choices(range(len(candidates)), weights=[float(p) for p in probs])[0]
        elif not 0 <= int(decision) < len(candidates):
            raise ScheduleError(f"decision {decision} is not an index into {len(candidates)} candidates")
        decision = int(decision)
        self._record_decision(decision)
        return ExprRV(candidates[decision])
