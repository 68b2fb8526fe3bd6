"""Drawing a CUDA candidate's tilings together: the five-level spatial tilings of the GPU rules
(``blockIdx``, ``vthread``, ``threadIdx``, then two inner levels) are sampled jointly so that the thread
block stays within ``max_threads``, each thread's tile within ``max_thread_elements`` and the block's
registers within the register file. Drawn one
split at a time, about 99% of the tilings of a 1024^3 GEMM break a per-block limit and are rejected
only after lowering; drawn together (a cheap rejection loop on integers), most fit. Every other decision
is drawn afresh as usual, and ``verify_gpu_code`` still checks each candidate.

>>> from tensorize.schedule.trace import RESAMPLE
>>> provider = joint_tile_provider(Trace([], {}), seed=0)
>>> provider(None, None) is RESAMPLE
True
"""
from __future__ import annotations

import random
from math import prod

from tensorize.schedule.primitives.sampling import perfect_tilings
from tensorize.schedule.trace import RESAMPLE, Trace

from ..schedule_rule.gpu_limits import REGISTERS_PER_BLOCK

__all__ = ["joint_tile_provider", "tilings_fit", "GPU_TILE_LEVELS"]

GPU_TILE_LEVELS = 5  # CUDA cores: blockIdx, vthread, threadIdx, inner, innermost
WARP_TILE_LEVELS = 3  # Tensor Cores (no 5-level tiling in the trace): blockIdx, warps, fragments


def _layout(trace: Trace):
    """The spatial GPU tilings of ``trace`` and how to read them: ``(insts, thread_level, per_thread_levels,
    lanes)``. The CUDA-core rule splits each spatial loop in five levels; the Tensor Core rule in three
    (its reduction in two), one warp of 32 lanes per ``threadIdx`` step."""
    tiles = [inst for inst in trace.insts if inst.kind == "sample_perfect_tile" and isinstance(inst.decision, (list, tuple))]
    five = [inst for inst in tiles if len(inst.decision) == GPU_TILE_LEVELS]
    if five:
        return five, 2, (1, 3, 4), 1
    three = [inst for inst in tiles if len(inst.decision) == WARP_TILE_LEVELS]
    if three and any(inst.kind == "bind" and str(inst.args.get("thread_axis", "")).startswith("threadIdx")
                     for inst in trace.insts):
        return three, 1, (2,), 32
    return [], 0, (), 1


SCALAR_REGISTERS = 40  # indices, addresses, loop counters of one thread
FRAGMENT_REGISTERS = 12  # one 16x16 f32/s32 accumulator fragment (8) and its share of the A/B fragments


def _fits(tilings, layout, max_threads: int, max_thread_elements: int) -> bool:
    _, thread_level, per_thread_levels, lanes = layout
    threads = lanes * prod(int(p[thread_level]) for p in tilings)
    per_thread = prod(int(p[k]) for p in tilings for k in per_thread_levels)
    # the register file: a thread's output tile (one register per element, or per warp fragment) and
    # its scalars, times the threads, must fit or the kernel spills to local memory
    registers = (FRAGMENT_REGISTERS if lanes > 1 else 1) * per_thread + SCALAR_REGISTERS
    return threads <= max_threads and per_thread <= max_thread_elements and threads * registers <= REGISTERS_PER_BLOCK


def tilings_fit(trace: Trace, max_threads: int = 1024, max_thread_elements: int = 256) -> bool:
    """Whether the GPU spatial tilings recorded in ``trace`` keep the thread block within ``max_threads``
    and each thread's tile within ``max_thread_elements`` (see ``joint_tile_provider``): the evolutionary
    search drops a mutated trace that does not, before replaying it.

    Parameters
    ----------
    trace : Trace
        A candidate's trace.
    max_threads, max_thread_elements : int
        The bounds.

    Returns
    -------
    bool
        True also when the trace has no such tilings.
    """
    layout = _layout(trace)
    return _fits([inst.decision for inst in layout[0]], layout, max_threads, max_thread_elements)


def joint_tile_provider(trace: Trace, seed: int, max_threads: int = 1024, max_thread_elements: int = 256,
                        tries: int = 200):
    """A ``decision_provider`` for ``Trace.apply_to_schedule`` that resamples every decision, the GPU
    spatial tilings jointly (see the module docstring).

    Parameters
    ----------
    trace : Trace
        The sketch's trace (its recorded tilings give the loop extents).
    seed : int
        Seeds the joint draw.
    max_threads : int
        Upper bound of the product of the ``threadIdx`` factors.
    max_thread_elements : int
        Upper bound of the product of each thread's factors (``vthread`` and the inner levels).
    tries : int
        Joint draws before the last one is kept as it is.

    Returns
    -------
    callable
        ``(inst, old_decision) -> decision | RESAMPLE``.
    """
    layout = _layout(trace)
    tiles = layout[0]
    chosen: dict[int, list[int]] = {}
    if tiles:
        rng = random.Random(seed)
        options = [perfect_tilings(prod(int(d) for d in inst.decision), len(inst.decision),
                                   int(inst.args.get("max_innermost_factor", 16))) for inst in tiles]
        if all(options):
            for _ in range(tries):
                pick = [rng.choice(o) for o in options]
                if _fits(pick, layout, max_threads, max_thread_elements):
                    break
            chosen = {id(inst): list(p) for inst, p in zip(tiles, pick)}

    def provider(inst, decision):
        return chosen.get(id(inst), RESAMPLE)

    return provider
