"""Measurements replayed from a database: the ``"replay"`` builder and runner.

For offline studies (compare strategies or cost models on measurements taken once) and to check
that a search is deterministic: given the same seed and the same measured times, it must propose
the same programs. A program the database never measured gets an error, never a made-up time.

>>> from search.measure import BUILDERS, RUNNERS
>>> "replay" in BUILDERS.names() and "replay" in RUNNERS.names()
True
"""
from __future__ import annotations

from typing import Sequence

from ..database.workload import trace_key
from .candidate import Builder, BuildResult, MeasureCandidate, Runner, RunResult

__all__ = ["ReplayBuilder", "ReplayRunner"]


class ReplayBuilder(Builder):
    """"Builds" a candidate by naming its trace; nothing is compiled.

    Parameters
    ----------
    database : str
        The JSON-lines database the runner reads (unused here; accepted so both take the same config).
    """

    def __init__(self, database: str | None = None, work_dir: str | None = None, **_ignored):
        self.database = database

    def build(self, candidates: Sequence[MeasureCandidate], target) -> list[BuildResult]:
        """See ``Builder.build``: results come from the recorded replay."""
        out = []
        for cand in candidates:
            if cand.trace_json is None:
                out.append(BuildResult(None, "a replayed measurement needs the candidate's trace"))
            else:
                out.append(BuildResult(trace_key(cand.trace_json), None, 0.0))
        return out


class ReplayRunner(Runner):
    """Returns the run times (or the failure) recorded for each candidate's trace in ``database``.

    Parameters
    ----------
    database : str
        Path of a JSON-lines tuning database (``search.database.Database``); read once.
    """

    def __init__(self, database: str, work_dir: str | None = None, **_ignored):
        from ..database import Database

        self._measured: dict[str, RunResult] = {}
        for rec in Database(database).get_all_tuning_records():
            key = rec.trace_key
            if key not in self._measured:  # the first measurement of a trace, as the search saw it
                ok = rec.run_secs and rec.is_valid
                self._measured[key] = (RunResult([float(s) for s in rec.run_secs], None, None) if ok else
                                       RunResult(None, rec.error or "failed when measured", rec.error_kind or "run"))

    def run(self, ctx, builds: Sequence[BuildResult]) -> list[RunResult]:
        """See ``Runner.run``: times come from the recorded replay."""
        out = []
        for build in builds:
            if build.error or build.artifact is None:
                out.append(RunResult(None, build.error or "not built", "build"))
            else:
                out.append(self._measured.get(build.artifact) or RunResult(
                    None, "this program was never measured in the replayed database", "run"))
        return out
