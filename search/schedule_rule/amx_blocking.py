"""Cache-blocked sketches for the AMX tile intrinsics (``intrinsics.x86_amx``).

An AMX intrinsic keeps its ``m x n`` accumulator tiles in tile registers over its K steps, streaming A and B
tiles; beyond that, its speed is where those tiles come from. L1 delivers two 1 KiB tiles per 16-cycle tile
multiply, L2 under one, so a block of 2 x 2 accumulators (one tile load per multiply) that streams both
operands from L2 waits on L2. The generic tiling rule (``"SSRSRS"``, loops level by level) seldom draws the loop
orders that fix this; these sketches fix them and sample only sizes. For a GEMM-shaped block (the loops above
the intrinsic are ``[batch...,] [taps...,] i, j, k``, in units of the intrinsic's block; taps, reductions the
intrinsic leaves outside such as a direct convolution's, go with ``k``):

- ``"panel"``: ``j`` split into panels of column blocks; order panel, ``i``, column block, ``k``: the panel's
  B stays in L2 while the row blocks sweep it, and each block of C runs its K in a row (the hand schedule's
  default, ``intrinsics.x86_amx_schedule.schedule_amx_gemm``);
- ``"a"``: the same with ``k`` outside the column blocks: the row block's K chunk of A (one intrinsic call's)
  stays in L1 while the column blocks stream their B, the accumulators stored and reloaded between chunks;
- ``"b"``: ``i`` split into regions of row blocks too; order region, panel, ``k``, column block, row block:
  each column block's K chunk of B (contiguous, VNNI-packed) stays in L1 while the region's row blocks stream
  their A.

The K chunk is the intrinsic's (its ``k_steps``): each registered blocking is its own branch.

>>> SKETCHES
('panel', 'a', 'b')
"""
from __future__ import annotations

import re

__all__ = ["SKETCHES", "is_amx", "amx_blocked_loops"]

SKETCHES = ("panel", "a", "b")


def is_amx(meta) -> bool:
    """Whether an intrinsic's ``IntrinMeta`` is an AMX tile block (its ``extra`` names ``m_tiles`` and a
    ``tdp*`` instruction).

    Parameters
    ----------
    meta : IntrinMeta
        The intrinsic's metadata.

    Returns
    -------
    bool
    """
    extra = meta.extra or {}
    return "m_tiles" in extra and str(extra.get("instruction", "")).startswith("tdp")


def amx_blocked_loops(sch, loops, kinds, sketch: str, max_innermost_factor: int = 32) -> list | None:
    """Split and reorder the loops above an AMX intrinsic's block as ``sketch`` (one of ``SKETCHES``).

    Parameters
    ----------
    sch : Schedule
        The schedule (changed in place).
    loops : list of LoopRV
        The loops above the intrinsic's, outermost first.
    kinds : list of str
        Their kinds (``search.schedule_rule.analysis.loop_kinds``: "S", "R", "U").
    sketch : str
        ``"panel"``, ``"a"`` or ``"b"``.
    max_innermost_factor : int
        The most column blocks a panel (and row blocks a region) may hold.

    Returns
    -------
    list of LoopRV or None
        The loops in their new order (outermost first), or None, with ``sch`` unchanged, where the loops are
        not ``[units..., batch..., taps..., i, j, k]`` (spatial loops, reductions the intrinsic leaves outside, such
        as a convolution's taps, then i, j and one reduction loop, innermost). The taps join K: just outside
        ``k`` in every sketch, so that the accumulators stay in their tiles across them.
    """
    if sketch not in SKETCHES:
        raise ValueError(f"unknown AMX sketch {sketch!r}; use one of {SKETCHES}")
    units = [lp for lp, kind in zip(loops, kinds) if kind == "U"]
    body = [(lp, kind) for lp, kind in zip(loops, kinds) if kind != "U"]
    shape = re.fullmatch(r"(S*)(R*)SSR", "".join(kind for _, kind in body))
    if shape is None:
        return None
    batch = [lp for lp, _ in body[:len(shape[1])]]
    taps = [lp for lp, _ in body[len(shape[1]):-3]]  # reductions the intrinsic leaves outside (a conv's taps)
    i, j, k = (lp for lp, _ in body[-3:])
    panel, column = sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=max_innermost_factor))
    if sketch == "b":
        region, row = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=max_innermost_factor))
        order = [region, panel, *taps, k, column, row]
    elif sketch == "a":
        order = [panel, i, *taps, k, column]
    else:
        order = [panel, i, column, *taps, k]
    sch.reorder(*units, *batch, *order)
    return units + batch + order
