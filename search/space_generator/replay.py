"""``replay_candidate``: a concrete candidate from a trace (a sketch's or a mutated one)."""
from __future__ import annotations

from tensorize.schedule import Schedule
from tensorize.schedule.trace import RESAMPLE, Trace

from ..schedule_rule.gpu_limits import is_gpu_target
from .cpu_tiles import register_budget, register_tile_provider
from .gpu_tiles import joint_tile_provider

__all__ = ["replay_candidate", "sample_candidate", "resample", "resample_provider"]


def resample(inst, decision):
    """A ``decision_provider`` that draws every decision afresh."""
    return RESAMPLE


def resample_provider(ctx, trace: Trace, seed: int, two_level_share: float | None = None):
    """The ``decision_provider`` that draws every decision of ``trace`` afresh for ``ctx``: on a CUDA target
    the spatial tilings jointly, within the per-block limits (``gpu_tiles``); on a CPU target each register
    tile's spatial tilings jointly, within the vector register file (``cpu_tiles``); otherwise ``resample``.

    Parameters
    ----------
    ctx : TuneContext
        The task (its target decides).
    trace : Trace
        The trace to replay.
    seed : int
        Seeds the joint draw.
    two_level_share : float, optional
        On a CPU target, the share of two-level draws for blocks with a short reduction
        (``cpu_tiles.register_tile_provider``; default ``cpu_tiles.TWO_LEVEL_SHARE``).

    Returns
    -------
    callable
        ``(inst, old_decision) -> decision | RESAMPLE``.
    """
    if ctx is not None and is_gpu_target(ctx.target):
        return joint_tile_provider(trace, seed)
    budget = register_budget(ctx) if ctx is not None else 0
    if budget:
        return register_tile_provider(trace, seed, budget, ctx.vector_bits(), two_level=two_level_share)
    return resample


def replay_candidate(ctx, trace: Trace, postprocs, decision_provider=None, seed: int | None = None) -> Schedule:
    """Replay ``trace`` without its postproc part on ``Schedule(ctx.mod, seed=seed)``, then
    ``enter_postproc()`` and apply ``postprocs`` in order.

    Parameters
    ----------
    ctx : TuneContext
    trace : Trace
        A sketch's trace (its decisions are used unless ``decision_provider`` says otherwise) or a
        finished candidate's.
    postprocs : list of Postproc
    decision_provider : callable, optional
        ``(inst, old_decision) -> new decision | None | RESAMPLE`` (see ``Trace.apply_to_schedule``);
        ``resample`` draws every decision afresh.
    seed : int, optional
        The random state of the new schedule (``None``: drawn from ``ctx.rng``).

    Returns
    -------
    Schedule
        The candidate; its trace is the replayed part, ``enter_postproc`` and the postprocs' steps.

    Raises
    ------
    ScheduleError
        A primitive of the trace does not apply with these decisions.
    PostprocError
        A postprocessor rejects the candidate.
    """
    if seed is None:
        seed = ctx.rng.randrange(1 << 31)
    sch = Schedule(ctx.mod, seed=seed)
    trace.apply_to_schedule(sch, remove_postproc=True, decision_provider=decision_provider)
    sch.enter_postproc()
    for postproc in postprocs:
        postproc.apply(sch, ctx)
    return sch


def sample_candidate(ctx, sketch: Schedule | Trace, postprocs, seed: int | None = None) -> Schedule:
    """A fresh random candidate of a sketch: ``replay_candidate`` with every decision resampled."""
    trace = sketch.trace if isinstance(sketch, Schedule) else sketch
    if seed is None:
        seed = ctx.rng.randrange(1 << 31)
    return replay_candidate(ctx, trace, postprocs, decision_provider=resample_provider(ctx, trace, seed), seed=seed)
