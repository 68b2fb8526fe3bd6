"""What is measured and what comes back: ``MeasureCandidate``, ``BuildResult``, ``RunResult``, and the
``Builder`` / ``Runner`` interfaces every executor (local processes, Ray) implements.

>>> RunResult(None, "outputs differ", "wrong_output").ok
False
>>> RunResult([1e-3, 2e-3], None, None).mean_secs
0.0015
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from tensorize.ir.function import IRModule

__all__ = ["MeasureCandidate", "BuildResult", "RunResult", "Builder", "Runner", "ERROR_KINDS"]

#: ``RunResult.error_kind`` values: the build failed, the run raised, the process died, the candidate
#: ran past its time limit, or its outputs differ from the untransformed program's.
ERROR_KINDS = ("build", "run", "crash", "timeout", "wrong_output")


@dataclass
class MeasureCandidate:
    """A scheduled program to measure: ``mod`` (an IRModule) and, for the record, its trace as JSON."""

    mod: IRModule
    trace_json: list | None = None


@dataclass
class BuildResult:
    """A built candidate: ``artifact`` (the shared library's path) or ``error`` (why it failed)."""

    artifact: str | None
    error: str | None
    build_secs: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether the build produced an artifact."""
        return self.artifact is not None and self.error is None


@dataclass
class RunResult:
    """A measured candidate: ``run_secs`` (seconds per run, one per repeat) or ``error`` with its
    ``error_kind`` (one of ``ERROR_KINDS``)."""

    run_secs: list[float] | None
    error: str | None
    error_kind: str | None

    def __post_init__(self):
        if self.error_kind is not None and self.error_kind not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {self.error_kind!r}; use one of {ERROR_KINDS}")

    @property
    def ok(self) -> bool:
        """Whether the run gave times."""
        return self.error is None and bool(self.run_secs)

    @property
    def mean_secs(self) -> float:
        """The mean time per run, ``inf`` for a failed candidate (what cost models are given)."""
        return math.fsum(self.run_secs) / len(self.run_secs) if self.ok else math.inf


class Builder:
    """Compiles candidates in isolation: a compiler crash fails only the candidate that caused it."""

    def build(self, candidates: Sequence[MeasureCandidate], target) -> list[BuildResult]:
        """Build each candidate for ``target``; one result per candidate, in order."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop the worker processes (the builder starts them again when used)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Runner:
    """Runs built candidates one at a time, checks their outputs against the untransformed program
    ``ctx.mod`` on random inputs, and times them."""

    def run(self, ctx, builds: Sequence[BuildResult]) -> list[RunResult]:
        """Run each build; one result per build, in order."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop the measuring process (the runner starts it again when used)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
