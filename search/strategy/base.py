"""What every search strategy shares: the candidate record, the space it samples, and sampling with
failures counted by reason.

A strategy proposes candidates to measure (``generate_measure_candidates``) and learns from their
measured times (``notify_runner_results``). Candidates are schedules of the task's module whose
traces replay: the database stores the trace, ``compile_tir`` replays it.
"""
from __future__ import annotations

import collections
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tensorize.schedule import Schedule
from tensorize.schedule.trace import Trace

from ..context import TuneContext
from .parallel import make_replay_pool

logger = logging.getLogger(__name__)

__all__ = ["Candidate", "SearchSpace", "SearchStrategy", "Sampler"]


class Candidate:
    """One proposed program: its trace, structural key (equal programs, equal keys), score and
    features. The schedule is replayed from the trace when first asked for (candidates replayed in
    worker processes come back as traces)."""

    __slots__ = ("key", "score", "features", "_sch", "_trace", "_trace_json", "_ctx")

    def __init__(self, key: int, sch: Schedule | None = None, trace_json: list | None = None, ctx=None,
                 features: np.ndarray | None = None, score: float = 0.0):
        if sch is None and (trace_json is None or ctx is None):
            raise ValueError("a Candidate needs its schedule, or its trace and the TuneContext to replay it")
        self.key, self.score, self.features = key, score, features
        self._sch, self._trace, self._trace_json, self._ctx = sch, None, trace_json, ctx

    @property
    def sch(self) -> Schedule:
        """The candidate's schedule, replayed from its trace (in this process) on first access."""
        if self._sch is None:
            sch = Schedule(self._ctx.mod)
            self.trace.apply_to_schedule(sch)
            self._sch = sch
        return self._sch

    @property
    def trace(self) -> Trace:
        """The candidate's schedule trace (parsed from its JSON when the schedule was not replayed here)."""
        if self._sch is not None:
            return self._sch.trace
        if self._trace is None:
            self._trace = Trace.from_json(self._trace_json)
        return self._trace

    def __repr__(self) -> str:
        return f"Candidate(key={self.key}, score={self.score:.4g})"


@dataclass
class SearchSpace:
    """The sketches of a task and the components that turn traces into valid candidates."""

    sketches: list
    postprocs: list
    mutators: dict                      # Mutator -> probability
    replay: Any                          # replay_candidate(ctx, trace, postprocs, decision_provider, seed)
    sampling: dict = field(default_factory=dict)  # keywords of resample_provider for fresh samples


class Sampler:
    """Turns traces into valid candidates, counting invalid ones by reason and timing the work.

    ``replay_batch`` replays many traces at once (in worker processes when the pool has several);
    ``from_sketch`` replays a sketch with fresh decisions, ``from_trace`` a (mutated) trace. Invalid
    candidates come back as ``None``. Seeds are drawn from ``ctx.rng`` in job order, so the
    results do not depend on the number of workers, nor on the ``backend`` (``"local"`` forked
    processes, ``"ray"`` Ray tasks with ``backend_options`` such as ``address``).

    A trace replayed with its decisions kept gives the same program every time (the postprocessors
    draw nothing), so the results of such replays are remembered, keyed by the trace without its
    postprocessing (the last ``memo_size``): the evolutionary search meets the same trace again in
    every round (the best measured programs seed each population) and through mutations that undo
    one another.
    """

    def __init__(self, ctx: TuneContext, space: SearchSpace, features=None, workers: int | None = 1,
                 backend: str = "local", backend_options: dict | None = None, memo_size: int = 8192):
        self.ctx, self.space = ctx, space
        self.invalid: collections.Counter = collections.Counter()
        self.valid = 0
        self.seconds = 0.0
        self.memo_size = int(memo_size)
        self.memo_hits = 0
        self._memo: collections.OrderedDict = collections.OrderedDict()
        self.pool = make_replay_pool(ctx, space, features, workers, backend, **(backend_options or {}))

    @staticmethod
    def _memo_key(trace) -> str:
        """The replay memo's key of a trace (a Trace or its JSON): its instructions and decisions before
        post-processing, as JSON text."""
        if not isinstance(trace, Trace):
            trace = Trace.from_json(trace)
        return json.dumps(trace.as_json(remove_postproc=True), default=lambda v: getattr(v, "value", str(v)))

    def _replay(self, jobs: list) -> list:
        """``(ReplayResult, schedule or None)`` per job: remembered results for kept-decision traces
        replayed before, the pool's for the rest."""
        if not self.memo_size:
            return self.pool.run(jobs)
        keys = [None if resample else self._memo_key(t) for t, resample, _ in jobs]
        results: list = [None] * len(jobs)
        todo = []
        for i, key in enumerate(keys):
            hit = self._memo.get(key) if key is not None else None
            if hit is not None:
                self._memo.move_to_end(key)
                self.memo_hits += 1
                results[i] = (hit, None)
            else:
                todo.append(i)
        for i, done in zip(todo, self.pool.run([jobs[i] for i in todo])):
            results[i] = done
            if keys[i] is not None:
                self._memo[keys[i]] = done[0]
                if len(self._memo) > self.memo_size:
                    self._memo.popitem(last=False)
        return results

    def replay_batch(self, traces: list, resample: bool) -> list[Candidate | None]:
        """Candidates (``None`` where invalid) of ``traces``, with every decision drawn afresh when ``resample``.

        Parameters
        ----------
        traces : list of Trace or list
            The traces to replay (Trace objects or their JSON).
        resample : bool
            Draw every sampling decision afresh (a sketch) rather than keep the trace's (a measured or
            mutated trace).

        Returns
        -------
        list of Candidate or None
            One per trace, in order; invalid ones are counted in ``invalid`` by reason.
        """
        start = time.perf_counter()
        jobs = [(t, resample, self.ctx.rng.randrange(1 << 31)) for t in traces]
        out: list[Candidate | None] = []
        for result, sch in self._replay(jobs):
            if result.reason is not None:
                self.invalid[result.reason] += 1
                out.append(None)
                continue
            self.valid += 1
            out.append(Candidate(result.key, sch=sch, trace_json=result.trace_json, ctx=self.ctx,
                                 features=result.features))
        self.seconds += time.perf_counter() - start
        return out

    def from_sketch(self, sketch: Schedule) -> Candidate | None:
        """A candidate from ``sketch`` with every decision drawn afresh.

        Parameters
        ----------
        sketch : Schedule
            A sketch of the design space.

        Returns
        -------
        Candidate or None
            None when the sampled program is invalid.
        """
        return self.replay_batch([sketch.trace], resample=True)[0]

    def from_trace(self, trace: Trace) -> Candidate | None:
        """The candidate of ``trace``, its decisions kept (a measured or mutated trace).

        Parameters
        ----------
        trace : Trace
            The trace to replay.

        Returns
        -------
        Candidate or None
            None when the program is invalid.
        """
        return self.replay_batch([trace], resample=False)[0]

    def close(self) -> None:
        """End the replay workers."""
        self.pool.close()


class SearchStrategy:
    """Base class: ``pre_tuning`` once, then rounds of ``generate_measure_candidates`` /
    ``notify_runner_results``.

    ``measured`` holds the keys of every program measured so far (this run and the database's), so
    no program is measured twice. Set ``replay_backend = "ray"`` (and ``replay_options``) on a strategy
    before ``pre_tuning`` to replay and featurise candidates as Ray tasks.
    """

    num_workers: int | None = None   # replay processes (None: the cores this process may use)
    replay_backend: str = "local"    # "local" (forked processes) or "ray" (Ray tasks): the same proposals
    replay_options: dict = {}        # the backend's options, e.g. {"address": "auto"} for Ray

    def __init__(self):
        self.ctx: TuneContext | None = None
        self.space: SearchSpace | None = None
        self.sampler: Sampler | None = None
        self.measured: set[int] = set()
        self.measured_traces: list[tuple[float, Trace]] = []   # (mean seconds, trace), valid ones
        self.cost_model = None
        self.features = None

    def pre_tuning(self, ctx: TuneContext, space: SearchSpace, cost_model=None, feature_extractor=None,
                   measured: list[tuple[int, float, Trace]] = ()) -> None:
        """Start a run. ``measured`` lists (key, mean seconds, trace) of programs already measured
        (from the database when a run resumes).

        Parameters
        ----------
        ctx : TuneContext
            The task: module, target, random state.
        space : SearchSpace
            Its sketches, postprocessors, mutators and replay function.
        cost_model : object, optional
            Predicts the score of candidates (None: no model).
        feature_extractor : object, optional
            Extracts the cost model's features (used only with a cost model).
        measured : list of tuple
            ``(key, mean seconds, trace)`` of programs measured before.
        """
        self.ctx, self.space = ctx, space
        self.cost_model, self.features = cost_model, feature_extractor
        self.sampler = Sampler(ctx, space, feature_extractor if cost_model is not None else None, self.num_workers,
                               self.replay_backend, self.replay_options)
        for key, secs, trace in measured:
            self.measured.add(key)
            if np.isfinite(secs):
                self.measured_traces.append((secs, trace))

    def generate_measure_candidates(self, n: int) -> list[Candidate]:
        """Up to ``n`` new candidates to measure (empty when the space is exhausted).

        Parameters
        ----------
        n : int
            How many candidates the round wants.

        Returns
        -------
        list of Candidate
            Programs not measured before, distinct.
        """
        raise NotImplementedError

    def notify_runner_results(self, candidates: list[Candidate], mean_secs: list[float]) -> None:
        """Record measured times (``inf`` for a failed candidate).

        Parameters
        ----------
        candidates : list of Candidate
            The candidates of the round.
        mean_secs : list of float
            Their mean run times, in seconds, in the same order.
        """
        for cand, secs in zip(candidates, mean_secs):
            self.measured.add(cand.key)
            if np.isfinite(secs):
                self.measured_traces.append((float(secs), cand.trace))

    @property
    def invalid_counts(self) -> dict[str, int]:
        """Samples rejected so far, by reason."""
        return dict(self.sampler.invalid) if self.sampler else {}

    def close(self) -> None:
        """End the replay workers (the run is over)."""
        if self.sampler is not None:
            self.sampler.close()

    def _fresh_samples(self, n: int, max_attempts: int, seen: set[int]) -> list[Candidate]:
        """Up to ``n`` valid, unmeasured, distinct programs sampled from the sketches (round robin),
        replayed in batches of the number still wanted."""
        out: list[Candidate] = []
        sketches = self.space.sketches
        attempts = 0
        while len(out) < n and attempts < max_attempts and sketches:
            batch = min(n - len(out), max_attempts - attempts)
            picks = [sketches[(attempts + i) % len(sketches)].trace for i in range(batch)]
            attempts += batch
            for cand in self.sampler.replay_batch(picks, resample=True):
                if cand is None or cand.key in seen or cand.key in self.measured or len(out) >= n:
                    continue
                seen.add(cand.key)
                out.append(cand)
        return out
