"""``RayBuilder`` / ``RayRunner``: the local builder's and runner's work as Ray tasks (the only module of the
project that imports ``ray``, and only when one of them is used).

Tasks are placed by resources: host x86 code anywhere by default, ``{"arm64": 1}`` for aarch64
targets, a GPU for cuda targets (``resources=`` overrides). A build task returns the shared library's
bytes, which the driver writes to its work folder; a run task gets those bytes and the workload's
inputs and reference (put in the object store once per workload). Run tasks are submitted one at a
time so timings never overlap. A task whose worker dies (an LLVM abort, a segfault) is not retried:
it fails its candidate (build error or ``"crash"``); one past its timeout is cancelled (``"timeout"``).

With no ``address`` an embedded Ray starts on loopback only (``num_cpus`` CPUs, no dashboard);
``address="auto"`` or ``"ray://host:port"`` joins a cluster.

AArch64 candidates (``cross.py``) carry their object code and signatures beside the library: an
``arm64`` node that is an ARM machine loads the library, any other runs the code under qemu-user
(``RayRunner(emulation=...)``). ``RayMapPool`` maps a function over jobs as Ray tasks for the search
(``search.strategy.parallel.RayReplayPool``).

>>> builder = RayBuilder(address=None)                                      # doctest: +SKIP
>>> runner = RayRunner(timeout_s=10)                                        # doctest: +SKIP
>>> runner.run(ctx, builder.build(candidates, ctx.target))                  # doctest: +SKIP
"""
from __future__ import annotations

import itertools
import logging
import os
import shutil
import tempfile
import time
import uuid
from typing import Any, Sequence

from .candidate import BuildResult, Builder, MeasureCandidate, RunResult, Runner
from .cross import is_cross, read_sidecars, sidecar_paths
from .inputs import WorkloadData, prepare_workload
from .process import project_root
from .tasks import RunFailure, TimingConfig

logger = logging.getLogger(__name__)

__all__ = ["RayBuilder", "RayRunner", "RayMapPool", "connect", "placement"]


def _ray():
    # Read when ray is first imported: loopback-only local clusters without an auth token file (set these
    # variables yourself to join a cluster that needs a token).
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    return ray


def connect(address: str | None = None, num_cpus: int = 2, runtime_env: dict | None = None) -> None:
    """Join the cluster at ``address``, or start an embedded loopback-only Ray (once per process)."""
    ray = _ray()
    if ray.is_initialized():
        return
    if runtime_env is None:  # workers find this project's packages as the driver does
        path = os.pathsep.join(filter(None, [project_root(), os.environ.get("PYTHONPATH", "")]))
        runtime_env = {"env_vars": {"PYTHONPATH": path}}
    if address:
        ray.init(address=address, runtime_env=runtime_env, log_to_driver=False)
        return
    # "local": a new instance even when another Ray runs on this machine (without an address, ray.init joins the
    # latest cluster started here, e.g. another job's, and refuses num_cpus)
    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1",
             runtime_env=runtime_env, log_to_driver=False)
    logger.info("started an embedded Ray on 127.0.0.1 with %d CPUs", num_cpus)


def placement(target, exclusive: bool) -> dict:
    """Ray task options placing work for ``target``: a GPU for cuda, the ``arm64`` resource for aarch64, none
    for x86. ``exclusive`` (measurements) takes the whole resource, so one runs per node at a time."""
    kind = getattr(getattr(target, "kind", None), "name", str(target).split()[0])
    if kind in ("cuda", "nvptx"):
        return {"num_gpus": 1 if exclusive else 0.01}
    if getattr(target, "arch", "") == "aarch64":
        return {"resources": {"arm64": 1 if exclusive else 0.01}}
    return {}


# -- the tasks (wrapped by ray.remote on first use) ------------------------------------------------
def _build_task(mod, target_text: str):
    import ray

    from .cross import build_cross_artifact, is_cross, read_sidecars
    from .tasks import build_artifact

    folder = tempfile.mkdtemp(prefix="tensorize-ray-build-")
    node = ray.get_runtime_context().get_node_id()
    cross = is_cross(target_text)
    try:
        path = os.path.join(folder, "candidate.so")
        try:
            secs = (build_cross_artifact if cross else build_artifact)(mod, target_text, path)
        except Exception as err:  # noqa: BLE001 - reported as the candidate's build error
            return None, 0.0, f"build failed: {type(err).__name__}: {err}", node, None
        with open(path, "rb") as f:  # AArch64: also the object code and metadata an emulating node links
            return f.read(), secs, None, node, (read_sidecars(path) if cross else None)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _reference_task(mod, args, outputs):
    from .tasks import reference_outputs

    return reference_outputs(mod, list(args), outputs)


def _run_task(library: bytes, args, reference, outputs, tols, timing, cross=None, emulation=None):
    from tensorize.runtime.aarch64 import host_is_aarch64

    from .cross import check_and_time_emulated
    from .tasks import check_and_time

    folder = tempfile.mkdtemp(prefix="tensorize-ray-run-")
    try:
        path = os.path.join(folder, f"{uuid.uuid4().hex}.so")
        with open(path, "wb") as f:
            f.write(library)
        try:
            if cross is not None and not host_is_aarch64():  # an arm64 node that emulates: qemu-user
                return ("ok", check_and_time_emulated(*cross, list(args), list(reference), outputs, tols, timing,
                                                      **(emulation or {})))
            return ("ok", check_and_time(path, list(args), list(reference), outputs, tols, timing))
        except RunFailure as failure:
            return ("error", str(failure), failure.kind)
        except Exception as err:  # noqa: BLE001
            return ("error", f"{type(err).__name__}: {err}", "run")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# The shared state of a map (``RayMapPool``), unpickled once per worker process and map.
_MAP_STATES: dict[str, Any] = {}


def _map_task(state_key: str, state_box: list, func, jobs: list) -> list:
    state = _MAP_STATES.get(state_key)
    if state is None:  # the reference comes boxed in a list, so Ray does not fetch it for every task
        state = _ray().get(state_box[0])
        _MAP_STATES.clear()  # one map's state at a time per worker
        _MAP_STATES[state_key] = state
    return [func(state, job) for job in jobs]


_REMOTE: dict[str, Any] = {}


def _remote(name: str):
    if name not in _REMOTE:
        func = {"build": _build_task, "reference": _reference_task, "run": _run_task, "map": _map_task}[name]
        # a replay is pure and repeatable: its task is retried when a worker dies; a measurement is not
        _REMOTE[name] = _ray().remote(max_retries=2 if name == "map" else 0)(func)
    return _REMOTE[name]


def _died(err: Exception) -> bool:
    exceptions = _ray().exceptions
    return isinstance(err, (exceptions.WorkerCrashedError, exceptions.NodeDiedError, exceptions.LocalRayletDiedError))


class RayMapPool:
    """``func(state, job)`` over batches of jobs as Ray tasks, results in submission order.

    ``state`` (the task: module, target, postprocessors, feature extractor) is put in the object store
    once and unpickled once per worker process; each batch is cut into contiguous chunks, one task
    each, so the results do not depend on how many workers there are. The search's replay pool
    (``search.strategy.parallel.RayReplayPool``) is its user.

    Parameters
    ----------
    func : callable
        A module-level function ``func(state, job) -> result`` (pickled by reference).
    state : object
        What every job needs; picklable.
    workers : int, optional
        Workers a batch is shared among: it is cut into two tasks per worker (None: the cluster's CPUs).
    address, num_cpus, runtime_env
        As for ``RayBuilder``: the cluster to join, or the embedded Ray's CPUs.
    options : dict, optional
        Ray task options (resources) of the tasks.

    Examples
    --------
    >>> pool = RayMapPool(pow_of_state, 2, workers=2)                          # doctest: +SKIP
    >>> pool.map([1, 2, 3])                                                     # doctest: +SKIP
    [2, 4, 8]
    """

    def __init__(self, func, state, workers: int | None = None, address: str | None = None, num_cpus: int = 2,
                 runtime_env: dict | None = None, options: dict | None = None):
        ray = _ray()
        connect(address, num_cpus, runtime_env)
        if workers is None:
            workers = int(ray.cluster_resources().get("CPU", 1))
        self.workers = max(1, int(workers))
        self._func, self._key = func, uuid.uuid4().hex
        self._state = [ray.put(state)]
        self._task = _remote("map").options(**(options or {}))

    def map(self, jobs: list) -> list:
        """``func(state, job)`` for each job, in order.

        Parameters
        ----------
        jobs : list
            Picklable jobs.

        Returns
        -------
        list
            One result per job. A task that fails raises here (its exception, or Ray's when its
            worker died).
        """
        if not jobs:
            return []
        if self._state is None:
            raise RuntimeError("this RayMapPool was closed; make a new one")
        size = -(-len(jobs) // (self.workers * 2))  # two chunks per worker: a slow chunk delays less
        refs = [self._task.remote(self._key, self._state, self._func, jobs[i:i + size])
                for i in range(0, len(jobs), size)]
        return [result for chunk in _ray().get(refs) for result in chunk]

    def close(self) -> None:
        """Drop the shared state (idempotent; Ray itself stays up for the builder and runner)."""
        self._state = None


class RayBuilder(Builder):
    """Builds candidates as Ray tasks; same results as ``LocalBuilder``.

    Parameters
    ----------
    work_dir : str, optional
        Where the libraries are written (``artifacts/``); a temporary folder removed by ``close()`` if None.
    address : str, optional
        A cluster to join (``"auto"``, ``"ray://host:port"``); None starts an embedded loopback Ray.
    timeout_s : float
        Seconds a build may take before its task is cancelled.
    resources : dict, optional
        Ray task options replacing the placement chosen from the target.
    num_cpus : int
        CPUs of the embedded Ray.
    """

    def __init__(self, work_dir: str | None = None, address: str | None = None, timeout_s: float = 120.0,
                 resources: dict | None = None, num_cpus: int = 2, runtime_env: dict | None = None):
        self._own_dir = work_dir is None
        self.work_dir = os.path.abspath(work_dir) if work_dir else tempfile.mkdtemp(prefix="tensorize-build-")
        self.artifact_dir = os.path.join(self.work_dir, "artifacts")
        os.makedirs(self.artifact_dir, exist_ok=True)
        self.address, self.timeout_s, self.resources = address, timeout_s, resources
        self._num_cpus, self._runtime_env = num_cpus, runtime_env
        self._counter = itertools.count()
        self._tag = uuid.uuid4().hex[:6]
        self.placements: list[str] = []  # the node id of each build, in order (for checking placement)

    def build(self, candidates: Sequence[MeasureCandidate], target) -> list[BuildResult]:
        """See ``Builder.build``: builds run as Ray tasks."""
        ray = _ray()
        connect(self.address, self._num_cpus, self._runtime_env)
        options = self.resources if self.resources is not None else placement(target, exclusive=False)
        task = _remote("build").options(**options)
        start = time.perf_counter()
        refs = [task.remote(c.mod, str(target)) for c in candidates]
        results = []
        for ref in refs:  # each build gets timeout_s from when the previous one was collected
            ready, _ = ray.wait([ref], timeout=self.timeout_s)
            if not ready:
                ray.cancel(ref, force=True)
                results.append(BuildResult(None, f"build timed out after {self.timeout_s:g} s", self.timeout_s))
                continue
            try:
                library, secs, error, node, sidecars = ray.get(ref)
            except Exception as err:  # noqa: BLE001 - the task's worker died or the task raised
                kind = "the compiler crashed" if _died(err) else "build failed"
                results.append(BuildResult(None, f"{kind}: {err}", time.perf_counter() - start))
                continue
            self.placements.append(node)
            if error:
                results.append(BuildResult(None, error, secs))
                continue
            path = os.path.join(self.artifact_dir, f"{self._tag}_{next(self._counter):06d}.so")
            with open(path, "wb") as f:
                f.write(library)
            for file, data in zip(sidecar_paths(path), sidecars or ()):
                with open(file, "wb") as f:
                    f.write(data.encode() if isinstance(data, str) else data)
            results.append(BuildResult(path, None, secs))
        return results

    def close(self) -> None:
        """Remove the builder's working directory (when it made it)."""
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)


class RayRunner(Runner):
    """Checks and times candidates as Ray tasks, one at a time; same results as ``LocalRunner``.

    Parameters are those of ``LocalRunner`` plus ``address``, ``resources``, ``num_cpus`` and
    ``runtime_env`` as for ``RayBuilder``, and ``emulation``: how an ``arm64`` node that is not an ARM
    machine runs AArch64 candidates, the keyword arguments of ``cross.check_and_time_emulated``
    (``{"cpu": "max", "emulator": "auto"}`` by default: qemu-user emulating every feature).
    """

    def __init__(self, work_dir: str | None = None, timeout_s: float = 30.0, number: int = 3, repeat: int = 3,
                 min_repeat_ms: float = 30.0, cache_flush_bytes: int = 0, seed: int = 0,
                 reference_timeout_s: float = 600.0, address: str | None = None, resources: dict | None = None,
                 num_cpus: int = 2, runtime_env: dict | None = None, emulation: dict | None = None,
                 enable_cpu_cache_flush: bool = False):
        self._own_dir = work_dir is None
        self.work_dir = os.path.abspath(work_dir) if work_dir else tempfile.mkdtemp(prefix="tensorize-run-")
        self.timeout_s, self.seed, self.reference_timeout_s = timeout_s, seed, reference_timeout_s
        self.emulation = {"cpu": "max", "emulator": "auto", "timeout_s": timeout_s, **(emulation or {})}
        self.timing = TimingConfig(number, repeat, min_repeat_ms, cache_flush_bytes,
                                   enable_cpu_cache_flush=enable_cpu_cache_flush)
        self.address, self.resources = address, resources
        self._num_cpus, self._runtime_env = num_cpus, runtime_env
        self._workloads: dict[int, tuple[Any, WorkloadData, Any, Any]] = {}

    def _options(self, ctx) -> dict:
        return self.resources if self.resources is not None else placement(ctx.target, exclusive=True)

    def _workload(self, ctx):
        ray = _ray()
        cached = self._workloads.get(id(ctx.mod))
        if cached is not None and cached[0] is ctx.mod:
            return cached[1:]
        task = _remote("reference").options(**self._options(ctx))

        def compute(mod, args, outputs):
            ref = task.remote(mod, args, outputs)
            ready, _ = ray.wait([ref], timeout=self.reference_timeout_s)
            if not ready:
                ray.cancel(ref, force=True)
                raise TimeoutError(f"computing the reference outputs took more than {self.reference_timeout_s:g} s")
            return ray.get(ref)

        data = prepare_workload(ctx.mod, self.work_dir, self.seed, compute)
        entry = (ctx.mod, data, ray.put(data.arguments), ray.put(data.reference))
        self._workloads[id(ctx.mod)] = entry
        return entry[1:]

    def run(self, ctx, builds: Sequence[BuildResult]) -> list[RunResult]:
        """See ``Runner.run``: runs happen as Ray tasks."""
        if not any(b.artifact and not b.error for b in builds):
            return [RunResult(None, b.error or "the candidate was not built", "build") for b in builds]
        connect(self.address, self._num_cpus, self._runtime_env)
        data, args_ref, reference_ref = self._workload(ctx)
        task = _remote("run").options(**self._options(ctx))
        cross = is_cross(ctx.target)
        return [self._run_one(task, build, data, args_ref, reference_ref, cross) for build in builds]

    def _run_one(self, task, build: BuildResult, data: WorkloadData, args_ref, reference_ref,
                 cross: bool = False) -> RunResult:
        ray = _ray()
        if build.error or not build.artifact:
            return RunResult(None, build.error or "the candidate was not built", "build")
        with open(build.artifact, "rb") as f:
            library = f.read()
        sidecars = read_sidecars(build.artifact) if cross else None
        if cross and sidecars is None:
            return RunResult(None, f"{build.artifact} has no object code and metadata beside it; build AArch64 "
                             "candidates with the 'ray' builder", "run")
        ref = task.remote(library, args_ref, reference_ref, data.outputs, data.tolerances, self.timing, sidecars,
                          self.emulation)
        ready, _ = ray.wait([ref], timeout=self.timeout_s)
        if not ready:
            ray.cancel(ref, force=True)
            return RunResult(None, f"the candidate ran past the {self.timeout_s:g} s limit", "timeout")
        try:
            reply = ray.get(ref)
        except Exception as err:  # noqa: BLE001
            if _died(err):
                return RunResult(None, f"the candidate crashed: {err}", "crash")
            return RunResult(None, f"{type(err).__name__}: {err}", "run")
        if reply[0] == "ok":
            return RunResult([float(s) for s in reply[1]], None, None)
        return RunResult(None, reply[1], reply[2])

    def close(self) -> None:
        """Remove the runner's working directory (when it made it)."""
        self._workloads.clear()
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)
