"""Drawing a CPU candidate's register tile within the register file: the innermost spatial level of the
CPU tiling rules (``i3 j3`` of ``SSRSRS``, under the last reduction loop) holds the accumulators, one vector
register per ``lanes`` elements of the vectorized loop (or per call of an elementwise FMA intrinsic) times the
other innermost factors. Past the register file the accumulators spill to the stack on every step of the
reduction: an AVX2 conv2d (16 ``ymm`` registers) tiled 4x4 vectors ran at 59 GFLOPS, 4x2 at 103 and a hand
schedule with 7x1 at 100. Drawn one split at a time, half of such tilings break the budget; this provider
draws the spatial tilings of a block together (a cheap rejection loop on integers) so that they fit, and the
evolutionary search drops mutations that do not (``register_tile_fits``).

Intrinsics with a reduction inside (``vpdpbusd``-style dots) keep their accumulators in memory between
calls at little cost and are not limited (measured: an AVX2 int8 GEMM ran as fast with 128 calls per tile as
with 8).

>>> from tensorize.schedule.trace import RESAMPLE, Trace
>>> provider = register_tile_provider(Trace([], {}), seed=0, budget=12)
>>> provider(None, None) is RESAMPLE
True
"""
from __future__ import annotations

import random
from functools import lru_cache
from math import ceil, prod

from tensorize.ir.dtype import bits_of
from tensorize.ir.functor import post_order_visit
from tensorize.ir.stmt import Block
from tensorize.schedule.primitives.sampling import draw_tiling
from tensorize.schedule.trace import RESAMPLE, Trace

from ..schedule_rule.analysis import AUTO_TENSORIZE, TILED, is_reduction_block

__all__ = ["register_tile_provider", "register_tile_fits", "register_budget", "register_tiles"]

#: Vector registers left for the operands (a broadcast, a row of weights) and addresses.
OPERAND_REGISTERS = 4

#: Share of fresh CPU samples of a block with a short reduction whose spatial tilings keep only their
#: outermost and register levels (see ``register_tile_provider``).
TWO_LEVEL_SHARE = 0.25

#: A reduction of at most this many steps per output element (a 3x3 to 8x8 window) is short: the block is bound
#: by memory traffic, which middle tile levels do not cut.
SHORT_REDUCTION = 64


def register_budget(ctx) -> int:
    """How many vector registers a candidate's accumulators may take on ``ctx``'s CPU target: the register
    file (32 with AVX-512 or on AArch64, else 16) less ``OPERAND_REGISTERS``; 0 for other targets (no limit).

    Parameters
    ----------
    ctx : TuneContext
        The task.

    Returns
    -------
    int
        The budget, or 0.

    Examples
    --------
    >>> from search.context import TuneContext
    >>> from tensorize.script import tir as T
    >>> @T.prim_func
    ... def f(A: T.Buffer((8,), "float32")):
    ...     for i in range(8):
    ...         with T.block("A"):
    ...             vi = T.axis.spatial(8, i)
    ...             A[vi] = T.float32(0)
    >>> [register_budget(TuneContext.create(f, f"llvm -mcpu={cpu}")) for cpu in ("haswell", "skylake-avx512")]
    [12, 28]
    """
    target = ctx.target
    if target.kind.name != "llvm":
        return 0
    registers = 32 if target.arch == "aarch64" or target.has_feature("avx512f") else 16
    return registers - OPERAND_REGISTERS


@lru_cache(maxsize=None)
def _fma_vectors(intrin_name: str, vector_bits: int) -> int:
    """Vector registers one call of ``intrin_name`` accumulates into when its description is elementwise (no
    reduction inside: a broadcast FMA); 0 for intrinsics with a reduction inside or unknown ones."""
    from tensorize.ir.tensor_intrin import TensorIntrin

    try:
        desc = TensorIntrin.get(intrin_name).desc
    except Exception:  # noqa: BLE001 - an unknown name is not limited
        return 0
    blocks: list[Block] = []
    post_order_visit(desc.body, lambda node: blocks.append(node) if isinstance(node, Block) else None)
    leaves = [b for b in blocks if b.iter_vars]
    if not leaves or any(is_reduction_block(b) for b in leaves):
        return 0
    # the outermost block's write region is what one call accumulates (the leaf writes one element)
    written = max((w for b in blocks for w in b.writes), key=lambda w: prod(int(r.extent) for r in w.region))
    elements = prod(int(r.extent) for r in written.region)
    return max(1, ceil(elements * bits_of(str(written.buffer.dtype)) / vector_bits))


def _tiled_blocks(trace: Trace) -> list[tuple[str, list, list]]:
    """``(structure, spatial tilings, reduction tilings)`` per block the tiling rules marked in ``trace`` (the
    ``sample_perfect_tile`` instructions after its ``TILED`` annotation, told apart by their number of levels)."""
    blocks: list[tuple[str, list, list]] = []
    for inst in trace.insts:
        if inst.kind == "annotate" and inst.args.get("ann_key") == TILED:
            blocks.append((str(inst.args.get("ann_val")), [], []))
        elif inst.kind == "sample_perfect_tile" and blocks and isinstance(inst.decision, (list, tuple)):
            structure, spatial, reductions = blocks[-1]
            if len(inst.decision) == structure.count("S"):
                spatial.append(inst)
            elif len(inst.decision) == structure.count("R"):
                reductions.append(inst)
    return blocks


def register_tiles(trace: Trace, vector_bits: int) -> list[tuple[list, list[int]]]:
    """The register tiles of ``trace``'s CPU tilings: per tiled block, its spatial ``sample_perfect_tile``
    instructions (their innermost factors make the tile) and, for each, how its factor counts: ``m > 1``, the
    lanes of the aligned vectorized loop (``ceil(factor / m)`` registers); ``0``, as it is (a multiplier);
    ``-r``, ``factor * r`` (a loop of elementwise FMA intrinsic calls of ``r`` registers each). Blocks whose
    vectorization is not known (no aligned loop, no elementwise intrinsic) are left out.

    Parameters
    ----------
    trace : Trace
        A candidate's or a sketch's trace.
    vector_bits : int
        The target's vector register width.

    Returns
    -------
    list of (list of Instruction, list of int)
        ``(tilings, per_register)`` per limited block.
    """
    intrin_vectors = max((_fma_vectors(str(inst.args.get("ann_val")), vector_bits) for inst in trace.insts
                          if inst.kind == "annotate" and inst.args.get("ann_key") == AUTO_TENSORIZE), default=0)
    out = []
    for structure, tilings, _reductions in _tiled_blocks(trace):
        if not tilings or not structure.endswith("S"):
            continue
        per_register = [int(inst.args.get("innermost_multiple_of") or 0) for inst in tilings]
        if any(m > 1 for m in per_register):
            out.append((tilings, per_register))
        elif intrin_vectors:
            out.append((tilings, [0] * (len(tilings) - 1) + [-intrin_vectors]))
    return out


def _vectors(factors: list[int], per_register: list[int]) -> int:
    """Registers of one register tile: the innermost factors, the aligned one divided by its lanes, times
    the intrinsic's registers per call (a negative entry)."""
    total = 1
    for factor, m in zip(factors, per_register):
        if m > 1:
            total *= ceil(factor / m)
        elif m < 0:
            total *= factor * -m
        else:
            total *= factor
    return total


def register_tile_fits(trace: Trace, budget: int, vector_bits: int = 256) -> bool:
    """Whether every register tile recorded in ``trace`` takes at most ``budget`` vector registers (always
    true with ``budget`` 0 or without limited tiles); the evolutionary search drops a mutated trace that does
    not fit before replaying it.

    Parameters
    ----------
    trace : Trace
        A candidate's trace.
    budget : int
        ``register_budget(ctx)``.
    vector_bits : int
        The target's vector register width.

    Returns
    -------
    bool
        Whether it fits.
    """
    if budget <= 0:
        return True
    return all(_vectors([int(inst.decision[-1]) for inst in tilings], per_register) <= budget
               for tilings, per_register in register_tiles(trace, vector_bits))


def _draw(rng: random.Random, inst) -> list[int]:
    """A tiling of ``inst``'s loop drawn as ``sample_perfect_tile`` draws it."""
    return draw_tiling(rng, prod(int(d) for d in inst.decision), len(inst.decision),
                       int(inst.args.get("max_innermost_factor", 16)), int(inst.args.get("innermost_multiple_of") or 0))


def _reduction_steps(trace: Trace) -> dict[int, int]:
    """Per tiled block of ``trace`` (keyed by the id of its first spatial ``sample_perfect_tile``), the product of
    its reduction loops' extents."""
    return {id(spatial[0]): prod(prod(int(d) for d in inst.decision) for inst in reductions)
            for _structure, spatial, reductions in _tiled_blocks(trace) if spatial}


def _two_level(tiling: list[int]) -> list[int]:
    """``tiling`` with its middle levels folded into the outermost: ``[a, b, c, d]`` -> ``[a * b * c, 1, 1, d]``."""
    if len(tiling) < 3:
        return list(tiling)
    return [prod(tiling[:-1])] + [1] * (len(tiling) - 2) + [tiling[-1]]


def register_tile_provider(trace: Trace, seed: int, budget: int, vector_bits: int = 256, tries: int = 200,
                           two_level: float | None = None):
    """A ``decision_provider`` for ``Trace.apply_to_schedule`` that resamples every decision, each limited
    block's spatial tilings jointly so that its register tile fits ``budget`` (see the module docstring).

    For a block whose reduction is short (at most ``SHORT_REDUCTION`` steps per output element: a depthwise
    convolution, a pooling window), a share ``two_level`` of the draws keep only the outermost and the register
    level of every spatial tiling of the block (the middle factors move out: ``[14, 2, 2, 4]`` ->
    ``[56, 1, 1, 4]``), the shape of a classic two-level CPU schedule (TOPI's x86 depthwise convolution:
    parallel rows, a register tile; its GEMM and convolution schedules block for the caches, and with long
    reductions the middle levels are that blocking: the search keeps drawing them uniformly). Drawn as
    ``sample_perfect_tile`` draws (uniformly over the tilings), a depthwise convolution's three spatial axes
    have both middle levels at 1 together in about 1 draw of 110; where the middle levels cost time (there:
    the accumulators go through memory once per outer tap, 1.3x slower measured) the search otherwise
    rarely meets the fast programs.

    Parameters
    ----------
    trace : Trace
        The sketch's trace (its recorded tilings give the loop extents).
    seed : int
        Seeds the joint draw.
    budget : int
        ``register_budget(ctx)``; 0 draws every decision independently.
    vector_bits : int
        The target's vector register width.
    tries : int
        Joint draws per block before the smallest-tile draw among them is kept.
    two_level : float, optional
        The share of two-level draws (default ``TWO_LEVEL_SHARE``).

    Returns
    -------
    callable
        ``(inst, old_decision) -> decision | RESAMPLE``.
    """
    chosen: dict[int, list[int]] = {}
    share = TWO_LEVEL_SHARE if two_level is None else float(two_level)
    if budget > 0:
        rng = random.Random(seed)
        steps = _reduction_steps(trace)
        for tilings, per_register in register_tiles(trace, vector_bits):
            best = None
            for _ in range(tries):
                pick = [_draw(rng, inst) for inst in tilings]
                size = _vectors([p[-1] for p in pick], per_register)
                if best is None or size < best[0]:
                    best = (size, pick)
                if size <= budget:
                    break
            flatten = rng.random() < share and steps.get(id(tilings[0]), SHORT_REDUCTION + 1) <= SHORT_REDUCTION
            chosen.update({id(inst): _two_level(p) if flatten else list(p) for inst, p in zip(tilings, best[1])})

    def provider(inst, decision):
        return chosen.get(id(inst), RESAMPLE)

    return provider
