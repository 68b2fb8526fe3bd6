"""``LocalRunner``: check and time built candidates in one long-lived child process on this machine.

Candidates run one at a time (measurements never overlap) in a child process
(``search.measure.worker``). For each workload the runner draws random inputs once and computes the
untransformed program's outputs (``inputs.prepare_workload``; both cached in the work folder, so a
resumed run reuses them); every candidate runs once on fresh copies of the inputs with zeroed outputs,
its outputs are compared with the reference, and only then is it timed. A candidate past the timeout
is stopped (the child is killed and restarted); one that kills the child is a crash.

>>> runner = LocalRunner(work_dir="tune", timeout_s=10, repeat=3)          # doctest: +SKIP
>>> runner.run(ctx, builder.build(candidates, ctx.target))[0].run_secs     # doctest: +SKIP
[0.00121, 0.00119, 0.0012]
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
from typing import Sequence

from tensorize.errors import TVMError

from .candidate import BuildResult, RunResult, Runner
from .inputs import WorkloadData, prepare_workload
from .process import WorkerProcess
from .tasks import TimingConfig

logger = logging.getLogger(__name__)

__all__ = ["LocalRunner"]


class LocalRunner(Runner):
    """Runs candidates in one child process.

    Parameters
    ----------
    work_dir : str, optional
        Where the inputs and reference outputs are cached (``workloads/``); a temporary folder, removed
        by ``close()``, when not given.
    timeout_s : float
        Seconds one candidate may take (check run and timing) before it is stopped.
    number, repeat, min_repeat_ms, cache_flush_bytes
        Timing, as ``time_evaluator``: ``run_secs`` has ``repeat`` entries.
    seed : int
        Seed of the random inputs.
    reference_timeout_s : float
        Seconds allowed to build and run the untransformed program once per workload.
    max_measure_secs : float
        Timing budget of one candidate after its check run (see ``TimingConfig``).
    enable_cpu_cache_flush : bool
        Time single runs, each after evicting all arguments but the first from the caches (see ``TimingConfig``).
    """

    def __init__(self, work_dir: str | None = None, timeout_s: float = 30.0, number: int = 3, repeat: int = 3,
                 min_repeat_ms: float = 30.0, cache_flush_bytes: int = 0, seed: int = 0,
                 reference_timeout_s: float = 600.0, max_measure_secs: float = 1.0,
                 enable_cpu_cache_flush: bool = False):
        self._own_dir = work_dir is None
        self.work_dir = os.path.abspath(work_dir) if work_dir else tempfile.mkdtemp(prefix="tensorize-run-")
        self.timeout_s = timeout_s
        self.timing = TimingConfig(number, repeat, min_repeat_ms, cache_flush_bytes, max_measure_secs,
                                   enable_cpu_cache_flush)
        self.seed = seed
        self.reference_timeout_s = reference_timeout_s
        self._child = WorkerProcess("runner")
        self._workloads: dict[int, tuple[object, WorkloadData]] = {}

    @property
    def restarts(self) -> int:
        """How often the measuring process was restarted (after a crash or a timeout)."""
        return self._child.restarts

    def workload(self, ctx) -> WorkloadData:
        """The inputs and reference of ``ctx.mod`` (computed once per workload, then reused)."""
        mod = ctx.mod
        cached = self._workloads.get(id(mod))
        if cached is not None and cached[0] is mod:
            return cached[1]
        target = getattr(ctx, "target", None)
        if target is not None and not getattr(target, "is_host", True):
            raise TVMError(f"the local runner runs code for this machine only, not for {target}; use the 'ray' "
                           "runner with a node of that architecture")
        if target is not None and getattr(target, "is_host", False):
            from tensorize.target.llvm import host_cpu, host_lacks

            missing = host_lacks(target.features)
            if missing:
                raise TVMError(f"the local runner cannot run code for {target} here: this CPU ({host_cpu()[0]}) lacks "
                               f"{', '.join(missing)}; tune for 'llvm -mcpu=native', or use the 'ray' runner with a "
                               "node that has them")
        data = prepare_workload(mod, self.work_dir, self.seed, self._reference)
        self._workloads[id(mod)] = (mod, data)
        return data

    def _reference(self, mod, args, outputs):
        reply = self._child.call("reference", (mod, args, outputs), self.reference_timeout_s)
        if reply[0] != "ok":
            if reply[0] in ("dead", "timeout"):
                self._child.restart()
            raise TVMError(f"computing the reference outputs of the untransformed workload failed ({reply[0]}): "
                           f"{reply[1]}")
        return reply[1]

    def run(self, ctx, builds: Sequence[BuildResult]) -> list[RunResult]:
        """Check and time each built candidate of the workload ``ctx.mod``; one ``RunResult`` per build."""
        data = self.workload(ctx) if any(b.artifact and not b.error for b in builds) else None
        return [self._run_one(build, data) for build in builds]

    def _run_one(self, build: BuildResult, data: WorkloadData | None) -> RunResult:
        if build.error or not build.artifact:
            return RunResult(None, build.error or "the candidate was not built", "build")
        payload = (build.artifact, data.inputs_path, data.reference_path, data.outputs, data.tolerances,
                   self.timing)
        reply = self._child.call("run", payload, self.timeout_s)
        status = reply[0]
        if status == "ok":
            return RunResult([float(s) for s in reply[1]], None, None)
        if status == "error":
            return RunResult(None, reply[1], reply[2] if len(reply) > 2 else "run")
        self._child.restart()
        if status == "timeout":
            return RunResult(None, f"the candidate ran past the {self.timeout_s:g} s limit", "timeout")
        return RunResult(None, f"the candidate crashed: {reply[1]}", "crash")

    def close(self) -> None:
        """Stop the worker and remove the runner's working directory (when it made it)."""
        self._child.close()
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __del__(self):
        child = getattr(self, "_child", None)
        if child is not None and child.alive:
            child.kill()
