"""What every search strategy shares: the candidate record, the space it samples, and sampling with
failures counted by reason.

A strategy proposes candidates to measure (``generate_measure_candidates``) and learns from their
measured times (``notify_runner_results``). Candidates are schedules of the task's module whose
traces replay: the database stores the trace, ``compile_tir`` replays it.
"""
from __future__ import annotations

import collections
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tensorize.ir.structural import structural_hash
from tensorize.schedule import Schedule, ScheduleError
from tensorize.schedule.trace import RESAMPLE, Trace

from ..context import TuneContext

logger = logging.getLogger(__name__)

__all__ = ["Candidate", "SearchSpace", "SearchStrategy", "Sampler"]


@dataclass
class Candidate:
    """One proposed program: its schedule, trace and structural key (equal programs, equal keys)."""

    sch: Schedule
    key: int
    score: float = 0.0
    features: np.ndarray | None = None

    @property
    def trace(self) -> Trace:
        """The candidate's schedule trace."""
        return self.sch.trace


@dataclass
class SearchSpace:
    """The sketches of a task and the components that turn traces into valid candidates."""

    sketches: list
    postprocs: list
    mutators: dict                      # Mutator -> probability
    replay: Any                          # replay_candidate(ctx, trace, postprocs, decision_provider, seed)


def _reason(err: BaseException) -> str:
    """A short, countable reason for an invalid candidate."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return f"{type(err).__name__}: {text[:90]}"


class Sampler:
    """Turns traces into valid candidates, counting invalid ones by reason and timing the work.

    ``from_sketch`` replays a sketch with fresh decisions; ``from_trace`` replays a (mutated) trace.
    Both return ``None`` for an invalid candidate.
    """

    def __init__(self, ctx: TuneContext, space: SearchSpace):
        self.ctx, self.space = ctx, space
        self.invalid: collections.Counter = collections.Counter()
        self.valid = 0
        self.seconds = 0.0

    def _replay(self, trace: Trace, provider) -> Candidate | None:
        start = time.perf_counter()
        try:
            sch = self.space.replay(self.ctx, trace, self.space.postprocs, decision_provider=provider,
                                    seed=self.ctx.rng.randrange(1 << 31))
            cand = Candidate(sch, structural_hash(sch.mod))
            self.valid += 1
            return cand
        except (ScheduleError, ValueError, TypeError, NotImplementedError, RecursionError) as err:
            self.invalid[_reason(err)] += 1
            logger.debug("invalid candidate: %s", err)
            return None
        finally:
            self.seconds += time.perf_counter() - start

    def from_sketch(self, sketch: Schedule) -> Candidate | None:
        """A new candidate from ``sketch`` with every decision resampled, or None when invalid."""
        return self._replay(sketch.trace, lambda inst, decision: RESAMPLE)

    def from_trace(self, trace: Trace) -> Candidate | None:
        """The candidate ``trace`` gives when replayed as is, or None when invalid."""
        return self._replay(trace, None)


class SearchStrategy:
    """Base class: ``pre_tuning`` once, then rounds of ``generate_measure_candidates`` /
    ``notify_runner_results``.

    ``measured`` holds the keys of every program measured so far (this run and the database's), so
    no program is measured twice.
    """

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
        (from the database when a run resumes)."""
        self.ctx, self.space = ctx, space
        self.sampler = Sampler(ctx, space)
        self.cost_model, self.features = cost_model, feature_extractor
        for key, secs, trace in measured:
            self.measured.add(key)
            if np.isfinite(secs):
                self.measured_traces.append((secs, trace))

    def generate_measure_candidates(self, n: int) -> list[Candidate]:
        """Up to ``n`` new candidates to measure (empty when the space is exhausted)."""
        raise NotImplementedError

    def notify_runner_results(self, candidates: list[Candidate], mean_secs: list[float]) -> None:
        """Record measured times (``inf`` for a failed candidate)."""
        for cand, secs in zip(candidates, mean_secs):
            self.measured.add(cand.key)
            if np.isfinite(secs):
                self.measured_traces.append((float(secs), cand.trace))

    @property
    def invalid_counts(self) -> dict[str, int]:
        """Samples rejected so far, by reason."""
        return dict(self.sampler.invalid) if self.sampler else {}

    def _fresh_samples(self, n: int, max_attempts: int, seen: set[int]) -> list[Candidate]:
        """Up to ``n`` valid, unmeasured, distinct programs sampled from the sketches (round robin)."""
        out: list[Candidate] = []
        sketches = self.space.sketches
        attempts = 0
        while len(out) < n and attempts < max_attempts and sketches:
            sketch = sketches[attempts % len(sketches)]
            attempts += 1
            cand = self.sampler.from_sketch(sketch)
            if cand is None or cand.key in seen or cand.key in self.measured:
                continue
            seen.add(cand.key)
            out.append(cand)
        return out
