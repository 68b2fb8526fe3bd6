"""``LocalBuilder``: compile candidates in worker processes on this machine.

Each worker is a child process (``search.measure.worker``) building one candidate at a time; the
candidates of a batch are spread over ``max_workers`` of them. A worker that dies (LLVM aborts the
process on some errors) fails only the candidate it was building, with the tail of its stderr; it is
restarted and the batch goes on. IR is shipped to the workers by pickle (the IR nodes are plain
immutable objects; pickling a scheduled GEMM takes well under a millisecond), or as TVMScript text
when a module does not pickle.

>>> with LocalBuilder(max_workers=2) as builder:                            # doctest: +SKIP
...     results = builder.build([MeasureCandidate(sch.mod)], "llvm -mcpu=native")
>>> results[0].artifact                                                    # doctest: +SKIP
'/tmp/tensorize-build-.../000000_3f2a.so'
"""
from __future__ import annotations

import itertools
import logging
import os
import pickle
import shutil
import tempfile
import time
import uuid
from collections import deque
from typing import Sequence

from .candidate import BuildResult, Builder, MeasureCandidate
from .process import WORKER_CPUS_ENV, WorkerProcess

logger = logging.getLogger(__name__)

__all__ = ["LocalBuilder"]


class LocalBuilder(Builder):
    """Builds candidates in ``max_workers`` child processes.

    Parameters
    ----------
    work_dir : str, optional
        Where the shared libraries go (under ``artifacts/``); a temporary folder, removed by ``close()``,
        when not given.
    max_workers : int
        Worker processes building at the same time (started at once, so they are ready for the first batch).
    timeout_s : float
        Seconds one candidate may take to build before its worker is stopped and the build fails.
    cpus : sequence of int, optional
        CPUs the workers run on (``os.sched_setaffinity`` in each worker); default: the CPUs this process may
        use. A caller that pins itself to a few cores for timing gives the builders the others.
    """

    def __init__(self, work_dir: str | None = None, max_workers: int = 2, timeout_s: float = 120.0,
                 cpus: Sequence[int] | None = None):
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        if cpus is not None and not list(cpus):
            raise ValueError("cpus must name at least one CPU (or be None: this process's CPUs)")
        self._own_dir = work_dir is None
        self.work_dir = os.path.abspath(work_dir) if work_dir else tempfile.mkdtemp(prefix="tensorize-build-")
        self.artifact_dir = os.path.join(self.work_dir, "artifacts")
        os.makedirs(self.artifact_dir, exist_ok=True)
        self.max_workers = max_workers
        self.timeout_s = timeout_s
        env = {"TVM_NUM_THREADS": "1"}
        if cpus is not None:
            env[WORKER_CPUS_ENV] = ",".join(str(int(c)) for c in cpus)
        self._workers = [WorkerProcess(f"builder{i}", env=env) for i in range(max_workers)]
        for worker in self._workers:  # their imports (a second or more) overlap the search's first round
            worker.start()
        self._counter = itertools.count()
        self._tag = uuid.uuid4().hex[:6]

    def _artifact_path(self) -> str:
        return os.path.join(self.artifact_dir, f"{self._tag}_{next(self._counter):06d}.so")

    def build(self, candidates: Sequence[MeasureCandidate], target) -> list[BuildResult]:
        """Build every candidate for ``target``; one ``BuildResult`` per candidate, in order."""
        target_text = str(target)
        results: list[BuildResult | None] = [None] * len(candidates)
        pending = deque(enumerate(candidates))
        busy: dict[WorkerProcess, tuple[int, str, float]] = {}
        while pending or busy:
            for worker in self._workers:
                if worker in busy or not pending:
                    continue
                index, candidate = pending.popleft()
                path = self._artifact_path()
                start = time.perf_counter()
                if self._send(worker, candidate, target_text, path):
                    busy[worker] = (index, path, start)
                else:
                    results[index] = BuildResult(None, f"build failed: {worker.death_report()}",
                                                 time.perf_counter() - start)
                    worker.restart()
            if not busy:
                continue
            self._collect(busy, results)
        return results  # type: ignore[return-value]

    @staticmethod
    def _send(worker: WorkerProcess, candidate: MeasureCandidate, target: str, path: str) -> bool:
        try:
            return worker.send("build", (candidate.mod, target, path))
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as err:
            logger.debug("the candidate does not pickle (%s); sending it as TVMScript", err)
            return worker.send("build_script", (candidate.mod.script(), target, path))

    def _collect(self, busy: dict, results: list) -> None:
        """Wait for the next worker to finish (or time out) and record its result."""
        now = time.perf_counter()
        wait = min(start + self.timeout_s - now for _, _, start in busy.values())
        ready = _wait_any(list(busy), max(wait, 0.0))
        now = time.perf_counter()
        for worker in list(busy):
            index, path, start = busy[worker]
            if worker in ready:
                reply = worker.receive()
                del busy[worker]
                results[index] = self._result(reply, path, now - start)
                if reply[0] == "dead":
                    logger.warning("a build worker died building candidate %d; restarting it", index)
                    worker.restart()
            elif now - start >= self.timeout_s:
                del busy[worker]
                worker.restart()
                results[index] = BuildResult(None, f"build timed out after {self.timeout_s:g} s", now - start)

    @staticmethod
    def _result(reply: tuple, path: str, elapsed: float) -> BuildResult:
        if reply[0] == "ok":
            return BuildResult(path, None, float(reply[1]))
        if reply[0] == "dead":
            return BuildResult(None, f"the compiler crashed: {reply[1]}", elapsed)
        return BuildResult(None, f"build failed: {reply[1]}", elapsed)

    def close(self) -> None:
        """Remove the builder's working directory (when it made it)."""
        for worker in self._workers:
            worker.close()
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __del__(self):
        for worker in getattr(self, "_workers", ()):
            if worker.alive:
                worker.kill()


def _wait_any(workers: list[WorkerProcess], timeout: float) -> set[WorkerProcess]:
    import select

    ready, _, _ = select.select(workers, [], [], timeout)
    return set(ready)
