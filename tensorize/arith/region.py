"""Buffer regions (lists of ``Range``, one per dimension): relaxation over loops, union, cover checks.

>>> from tensorize.ir.expr import Var, Range
>>> i = Var("i")
>>> [(int(r.min), int(r.extent)) for r in relax_region([Range.from_min_extent(i * 4, 4)], {i: Range(0, 8)})]
[(0, 32)]
"""
from __future__ import annotations

from typing import Mapping, Sequence

from ..ir import expr as E
from .analyzer import Analyzer
from .int_set import IntervalSet, eval_int_set, union


def relax_region(region: Sequence[E.Range], dom_map: Mapping, analyzer: Analyzer | None = None) -> list[E.Range]:
    """The smallest box covering ``region`` when the variables of ``dom_map`` (``{Var: Range}``) take
    every value of their domain (what a consumer reads across a whole loop).

    Parameters
    ----------
    region : list of Range
        The region.
    dom_map : dict of Var to Range
        The variables to relax.
    analyzer : Analyzer, optional
        Knows the variables' bounds (a fresh one when None).

    Returns
    -------
    list of Range
        The box.
    """
    ana = analyzer or Analyzer()
    out = []
    for r in region:
        lo = eval_int_set(r.min, dom_map, ana)
        hi = eval_int_set(E.add(r.min, r.extent) - 1, dom_map, ana)
        out.append(union([lo, hi], ana).to_range(ana))
    return out


def region_to_int_sets(region: Sequence[E.Range], analyzer: Analyzer | None = None) -> list[IntervalSet]:
    """Each range of ``region`` as an inclusive interval.

    Parameters
    ----------
    region : list of Range
        The region.
    analyzer : Analyzer, optional
        Knows the variables' bounds (a fresh one when None).

    Returns
    -------
    list of IntervalSet
        The intervals.
    """
    ana = analyzer or Analyzer()
    return [IntervalSet(r.min, ana.simplify(r.min + r.extent - 1)) for r in region]


def region_union(regions: Sequence[Sequence[E.Range]], analyzer: Analyzer | None = None) -> list[E.Range]:
    """The smallest box covering every region of ``regions`` (all of the same rank).

    Parameters
    ----------
    regions : list of list of Range
        The regions.
    analyzer : Analyzer, optional
        Knows the variables' bounds (a fresh one when None).

    Returns
    -------
    list of Range
        The box.
    """
    ana = analyzer or Analyzer()
    regions = [list(r) for r in regions]
    if not regions:
        raise ValueError("region_union needs at least one region")
    rank = len(regions[0])
    if any(len(r) != rank for r in regions):
        raise ValueError(f"regions of different ranks cannot be united: {[len(r) for r in regions]}")
    out = []
    for dim in range(rank):
        sets = [IntervalSet(r[dim].min, ana.simplify(r[dim].min + r[dim].extent - 1)) for r in regions]
        out.append(union(sets, ana).to_range(ana))
    return out


def region_covers(outer: Sequence[E.Range], inner: Sequence[E.Range], analyzer: Analyzer | None = None) -> bool:
    """True when ``outer`` provably contains ``inner`` in every dimension (False when unknown).

    Parameters
    ----------
    outer : list of Range
        The outer region.
    inner : list of Range
        The inner region.
    analyzer : Analyzer, optional
        Knows the variables' bounds (a fresh one when None).

    Returns
    -------
    bool
        True when proven.
    """
    ana = analyzer or Analyzer()
    if len(outer) != len(inner):
        raise ValueError(f"region ranks differ: {len(outer)} vs {len(inner)}")
    for o, i in zip(outer, inner):
        if not ana.can_prove(E.LE(o.min, i.min)):
            return False
        if not ana.can_prove(E.LE(E.add(i.min, i.extent), E.add(o.min, o.extent))):
            return False
    return True
