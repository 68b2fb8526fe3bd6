"""Replaying traces in worker processes: the search's own work spread over the machine's cores.

Turning a trace into a candidate (replay, postprocessors, structural hash, features of the lowered
program) is pure Python and takes tens of milliseconds; a round replays hundreds of them, and
nothing else runs meanwhile (building and measuring come after). ``ReplayPool`` hands each batch
to forked worker processes and returns the results in submission order, so the search proposes the
same programs with one worker or several.

A job is ``(trace, resample, seed)``: the trace (a ``Trace`` or its JSON) to replay, whether every decision is drawn
afresh (a sketch) or kept (a measured or mutated trace), and the seed of the new schedule's random
state, drawn by the caller. A result is ``ReplayResult``: the finished candidate's full trace, its
structural key and features, or the reason it is invalid.

>>> pool = ReplayPool(ctx, space, features, workers=2)          # doctest: +SKIP
>>> pool.run([(sketch.trace.as_json(), True, 7)])[0].key          # doctest: +SKIP
"""
from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import signal
import weakref
from dataclasses import dataclass

import numpy as np

from tensorize.ir.structural import structural_hash
from tensorize.schedule import ScheduleError
from tensorize.schedule.trace import Trace

from ..space_generator.replay import resample_provider

logger = logging.getLogger(__name__)

__all__ = ["ReplayPool", "RayReplayPool", "ReplayResult", "default_workers", "make_replay_pool", "REPLAY_BACKENDS"]

# What the forked workers replay with: set in the parent just before the pool forks.
_WORKER_STATE: tuple | None = None
_INVALID = (ScheduleError, ValueError, TypeError, NotImplementedError, RecursionError)


@dataclass
class ReplayResult:
    """One replayed trace: ``trace_json``/``key``/``features`` when valid, else ``reason``."""

    trace_json: list | None = None
    key: int | None = None
    features: np.ndarray | None = None
    reason: str | None = None


def default_workers() -> int:
    """Worker processes for replay: the cores this process may use, at most 8 (1: in process).

    Returns
    -------
    int
        At least 1.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def _reason(err: BaseException) -> str:
    """A short, countable reason for an invalid candidate."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return f"{type(err).__name__}: {text[:90]}"


def replay_job(ctx, space, features, job) -> tuple[ReplayResult, object]:
    """Replay one job in this process.

    Parameters
    ----------
    ctx : TuneContext
        The task.
    space : SearchSpace
        Its postprocessors and replay function.
    features : object or None
        The feature extractor, or None for no features.
    job : tuple
        ``(trace_json, resample, seed)``.

    Returns
    -------
    tuple
        ``(result, schedule)``: a ``ReplayResult`` and the schedule (None when invalid).
    """
    trace_json, resample, seed = job
    try:
        trace = trace_json if isinstance(trace_json, Trace) else Trace.from_json(trace_json)
        provider = resample_provider(ctx, trace, seed, **space.sampling) if resample else None
        sch = space.replay(ctx, trace, space.postprocs, decision_provider=provider, seed=seed)
        key = structural_hash(sch.mod)
        feats = features.extract_keyed(ctx, [sch], [key])[0] if features is not None else None
    except _INVALID as err:
        logger.debug("invalid candidate: %s", err)
        return ReplayResult(reason=_reason(err)), None
    return ReplayResult(sch.trace.as_json(), key, feats), sch


def _default_signals() -> None:
    """A forked worker ends on SIGTERM, whatever handler its parent installed (Ray's driver installs one): else
    ``Pool.terminate`` waits forever for a worker blocked on the task queue's lock."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _worker_run(job) -> ReplayResult:
    ctx, space, features = _WORKER_STATE
    return replay_job(ctx, space, features, job)[0]


class ReplayPool:
    """Replays batches of jobs in ``workers`` forked processes (``workers=1``: in this process).

    The workers are forked once, when the pool is made, and see the task (module, target,
    postprocessors, feature extractor) as it is then. ``close()`` ends them (also done when the
    pool is garbage collected or the interpreter exits).
    """

    def __init__(self, ctx, space, features=None, workers: int | None = None):
        self.ctx, self.space, self.features = ctx, space, features
        self.workers = default_workers() if workers is None else max(1, int(workers))
        self._pool = None
        if self.workers > 1 and "fork" in multiprocessing.get_all_start_methods():
            global _WORKER_STATE
            _WORKER_STATE = (ctx, space, features)
            try:
                self._pool = multiprocessing.get_context("fork").Pool(self.workers, initializer=_default_signals)
            finally:
                _WORKER_STATE = None
            self._finalizer = weakref.finalize(self, self._pool.terminate)
        else:
            self.workers = 1

    def run(self, jobs: list) -> list[tuple[ReplayResult, object]]:
        """``(result, schedule or None)`` per job, in order. Schedules come back only from jobs run
        in this process; the caller replays a worker's ``trace_json`` when it needs the program.

        Parameters
        ----------
        jobs : list of tuple
            ``(trace_json, resample, seed)`` per job.

        Returns
        -------
        list of tuple
            ``(ReplayResult, Schedule or None)`` per job.
        """
        if not jobs:
            return []
        if self._pool is None or len(jobs) == 1:
            return [replay_job(self.ctx, self.space, self.features, job) for job in jobs]
        chunk = max(1, len(jobs) // (self.workers * 4))
        wire = [(t.as_json() if isinstance(t, Trace) else t, resample, seed) for t, resample, seed in jobs]
        return [(r, None) for r in self._pool.map(_worker_run, wire, chunksize=chunk)]

    def close(self) -> None:
        """End the worker processes (idempotent)."""
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._finalizer.detach()
            self._pool = None


def _replay_state_job(state, job) -> ReplayResult:
    """One job of a Ray replay task: ``state`` is ``(ctx, space, features)``."""
    ctx, space, features = state
    return replay_job(ctx, space, features, job)[0]


class RayReplayPool:
    """Replays batches of jobs as Ray tasks (``search.measure.ray_executor.RayMapPool``): the same
    results, in the same order, as ``ReplayPool`` for the same jobs.

    The task (module, target, postprocessors, feature extractor) is put in Ray's object store when the
    pool is made; the sketches and mutators stay here (a job carries its trace).

    Parameters
    ----------
    ctx, space, features
        As for ``ReplayPool``.
    workers : int, optional
        Workers a batch is shared among, two Ray tasks each (None: the cluster's CPUs).
    address : str, optional
        The cluster to join (``"auto"``, ``"ray://host:port"``); None uses the Ray this process
        already joined, else starts an embedded one on 127.0.0.1.
    num_cpus : int
        CPUs of an embedded Ray.

    Examples
    --------
    >>> pool = RayReplayPool(ctx, space, features, workers=4)       # doctest: +SKIP
    >>> pool.run([(sketch.trace, True, 7)])[0][0].key                # doctest: +SKIP
    """

    def __init__(self, ctx, space, features=None, workers: int | None = None, address: str | None = None,
                 num_cpus: int = 2):
        from search.measure.ray_executor import RayMapPool

        light = dataclasses.replace(space, sketches=[], mutators={}) if dataclasses.is_dataclass(space) else space
        self._pool = RayMapPool(_replay_state_job, (ctx, light, features), workers, address=address,
                                num_cpus=num_cpus)
        self.workers = self._pool.workers

    def run(self, jobs: list) -> list[tuple[ReplayResult, None]]:
        """``(result, None)`` per job, in order (the caller replays ``trace_json`` for the program).

        Parameters
        ----------
        jobs : list of tuple
            ``(trace or trace_json, resample, seed)`` per job.

        Returns
        -------
        list of tuple
            ``(ReplayResult, None)`` per job.
        """
        wire = [(t.as_json() if isinstance(t, Trace) else t, resample, seed) for t, resample, seed in jobs]
        return [(r, None) for r in self._pool.map(wire)]

    def close(self) -> None:
        """Release the pool's state in the object store (idempotent)."""
        self._pool.close()


REPLAY_BACKENDS = {"local": ReplayPool, "ray": RayReplayPool}


def make_replay_pool(ctx, space, features=None, workers: int | None = None, backend: str = "local", **options):
    """The replay pool of ``backend``: ``"local"`` (forked processes) or ``"ray"`` (Ray tasks).

    Parameters
    ----------
    ctx, space, features, workers
        As for ``ReplayPool``.
    backend : str
        A key of ``REPLAY_BACKENDS``.
    **options
        Backend options (``address``, ``num_cpus`` for Ray).

    Returns
    -------
    ReplayPool or RayReplayPool
        With ``run(jobs)`` and ``close()``.

    Examples
    --------
    >>> make_replay_pool(None, None, backend="gpu")
    Traceback (most recent call last):
    ...
    ValueError: unknown replay backend 'gpu'; choose one of: local, ray
    """
    cls = REPLAY_BACKENDS.get(backend)
    if cls is None:
        raise ValueError(f"unknown replay backend {backend!r}; choose one of: {', '.join(sorted(REPLAY_BACKENDS))}")
    return cls(ctx, space, features, workers, **options)
