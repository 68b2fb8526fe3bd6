"""Building and measuring CUDA candidates: ``GPUBuilder`` (``"cuda"`` in ``BUILDERS``) and ``GPURunner``
(``"cuda"`` in ``RUNNERS``).

The builder writes each candidate's CUDA C and launch plan (kernels, grids, blocks, workspaces) to
a JSON artifact and, when ``nvcc`` is installed, compiles the source for the target's architecture
(a candidate nvcc rejects fails its build). The runner needs cupy and a visible GPU: it compiles the
artifact through NVRTC, runs it once on the workload's random inputs, compares the outputs with the
untransformed program's, then times it with CUDA events. The reference outputs are computed once per
workload on the GPU (the untransformed program with its spatial loops bound to blocks x threads), or on
the CPU where that fails. Without a GPU every run fails with an error that says so.

>>> builder = GPUBuilder()                                                     # doctest: +SKIP
>>> builds = builder.build([MeasureCandidate(sch.mod)], "cuda -arch=sm_90")    # doctest: +SKIP
>>> GPURunner().run(ctx, builds)[0].run_secs                                   # doctest: +SKIP
[0.000121, 0.000119, 0.00012]
"""
from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import shutil
import subprocess
import tempfile
import time
from typing import Sequence

import numpy as np

from tensorize.errors import TVMError

from .candidate import BuildResult, Builder, MeasureCandidate, Runner, RunResult
from .inputs import WorkloadData, fresh_arguments, prepare_workload

logger = logging.getLogger(__name__)

__all__ = ["GPUBuilder", "GPURunner", "load_artifact", "thread_bound_program"]


def thread_bound_program(mod, threads: int = 128):
    """``mod`` unchanged but for its top-level blocks' leading spatial loops, each fused and bound to
    ``blockIdx.x`` x ``threadIdx.x``: the untransformed program as a (slow, plain) GPU kernel.

    Parameters
    ----------
    mod : IRModule or PrimFunc
        The workload.
    threads : int
        Threads per CUDA block.

    Returns
    -------
    IRModule
        The bound program.

    Raises
    ------
    TVMError
        A block has no spatial loop to bind.

    Examples
    --------
    >>> from tensorize import te
    >>> A = te.placeholder((100, 8), name="A")
    >>> B = te.compute((100,), lambda i: A[i, 0] + A[i, 7], name="B")
    >>> 'thread_binding(128, thread="threadIdx.x")' in thread_bound_program(te.create_prim_func([A, B])).script()
    True
    """
    from tensorize.schedule import Schedule

    from ..schedule_rule.gpu_auto_bind import bind_block

    sch = Schedule(mod)
    for block in sch.get_child_blocks(sch.get_block("root")):
        if not bind_block(sch, block, threads):
            raise TVMError(f"block {sch.get(block).name_hint!r} has no spatial loop to bind to GPU threads")
    return sch.mod


def _reference_outputs(target, mod, args, outputs):
    """The untransformed program's outputs: on the GPU when one is visible (its blocks' spatial loops
    bound to blocks x threads, nothing else changed), else built for and run on the CPU.

    A naive CPU build is far too slow for the GPU's workloads (a 4096^3 GEMM's loop nest runs for
    minutes in one thread), so the CPU is only the fallback."""
    import tensorize as tvm
    from tensorize.runtime.cuda_module import cupy_or_none

    cupy = cupy_or_none()
    if cupy is not None:
        try:
            return _gpu_reference(cupy, target, mod, args, outputs)
        except Exception as err:  # noqa: BLE001 - fall back to the CPU whatever the GPU path raised
            logger.warning("computing the reference on the GPU failed (%s); computing it on the CPU", err)
    rt = tvm.build(mod, target="llvm")
    nd = [tvm.nd.array(a) for a in fresh_arguments(args, outputs)]
    rt(*nd)
    return [nd[i].numpy() for i in outputs]


def _gpu_reference(cupy, target, mod, args, outputs):
    import tensorize as tvm

    rt = tvm.build(thread_bound_program(mod), target=target)
    device_args = [cupy.asarray(a) for a in fresh_arguments(args, outputs)]
    rt(*device_args)
    cupy.cuda.Device().synchronize()
    logger.info("computed the reference outputs on the GPU")
    return [cupy.asnumpy(device_args[i]) for i in outputs]


class GPUBuilder(Builder):
    """CUDA C + launch plan per candidate, checked by ``nvcc`` when it is installed.

    Parameters
    ----------
    work_dir : str, optional
        Where the artifacts go (under ``artifacts/``); a temporary folder when not given.
    use_nvcc : bool
        Compile each source with ``nvcc -cubin`` (when on the PATH) so a failing one fails its build.
    timeout_s : float
        Seconds ``nvcc`` may take per candidate.
    """

    def __init__(self, work_dir: str | None = None, use_nvcc: bool = True, timeout_s: float = 120.0):
        self._own_dir = work_dir is None
        self.work_dir = os.path.abspath(work_dir) if work_dir else tempfile.mkdtemp(prefix="tensorize-cuda-")
        self.artifact_dir = os.path.join(self.work_dir, "artifacts")
        os.makedirs(self.artifact_dir, exist_ok=True)
        self.nvcc = shutil.which("nvcc") if use_nvcc else None
        self.timeout_s = timeout_s
        self._count = 0

    def build(self, candidates: Sequence[MeasureCandidate], target) -> list[BuildResult]:
        """Build every candidate for ``target`` (a cuda target); one ``BuildResult`` per candidate."""
        return [self._build_one(c, target) for c in candidates]

    def _build_one(self, candidate: MeasureCandidate, target) -> BuildResult:
        import tensorize as tvm

        start = time.perf_counter()
        self._count += 1
        path = os.path.join(self.artifact_dir, f"{os.getpid()}_{self._count:06d}.json")
        try:
            rt = tvm.build(candidate.mod, target=str(target))
        except (TVMError, ValueError, TypeError, KeyError) as err:
            return BuildResult(None, f"build failed: {err}", time.perf_counter() - start)
        device = rt.imported_modules[0]
        plan = {"target": str(target), "arch": device.arch(), "source": device.get_source(), "functions": {}}
        for name, func in rt._functions.items():
            plan["functions"][name] = {
                "launches": [[k.name, list(k.grid), list(k.block), k.shared_bytes,
                              [dataclasses.asdict(m) for m in k.tensor_maps]] for k in func.launches],
                "params": [[d, None if s is None else [int(x) for x in s]] for d, s in func.params],
                "workspaces": [[d, int(n)] for d, n in func.workspaces]}
        if self.nvcc:
            error = self._nvcc(plan["source"], plan["arch"], path)
            if error:
                return BuildResult(None, f"nvcc rejected the kernel: {error}", time.perf_counter() - start)
        with open(path, "w") as f:
            json.dump(plan, f)
        return BuildResult(path, None, time.perf_counter() - start)

    def _nvcc(self, source: str, arch: str, path: str) -> str | None:
        cu = path[:-5] + ".cu"
        with open(cu, "w") as f:
            f.write(source)
        try:
            done = subprocess.run([self.nvcc, f"-arch={arch}", "-cubin", "-o", path[:-5] + ".cubin", cu],
                                  capture_output=True, text=True, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            return f"nvcc ran past {self.timeout_s:g} s"
        return None if done.returncode == 0 else done.stderr.strip()[-2000:]

    def close(self) -> None:
        """Remove the builder's folder (when it made it)."""
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)


def load_artifact(path: str):
    """The ``CUDAHostModule`` a ``GPUBuilder`` artifact describes (compiled by NVRTC on first call).

    Parameters
    ----------
    path : str
        The artifact (JSON).

    Returns
    -------
    CUDAHostModule
        The module; ``mod["main"](*cuda_tensors)`` launches.
    """
    from tensorize.runtime.cuda_module import CUDAHostModule, CUDASourceModule, KernelLaunch
    from tensorize.runtime.tensor_map import TensorMapSpec
    from tensorize.target import Target

    with open(path) as f:
        plan = json.load(f)
    target = Target(plan["target"])
    device = CUDASourceModule(plan["source"], target)
    functions = {}
    for name, spec in plan["functions"].items():
        launches = [KernelLaunch(name, tuple(grid), tuple(block), int(shared), tuple(TensorMapSpec(**m) for m in maps))
                    for name, grid, block, shared, maps in spec["launches"]]
        params = [(d, None if s is None else tuple(s)) for d, s in spec["params"]]
        functions[name] = (launches, params, [tuple(w) for w in spec["workspaces"]])
    return CUDAHostModule(functions, device, target)


class GPURunner(Runner):
    """Check and time CUDA candidates on the visible GPU (cupy).

    Parameters
    ----------
    work_dir : str, optional
        Where the workload's inputs and reference outputs are cached.
    number, repeat : int
        Calls per timing and timings per candidate.
    min_repeat_ms : float
        Each timing repeats calls until it lasts this long.
    seed : int
        The random inputs' seed.
    """

    def __init__(self, work_dir: str | None = None, number: int = 3, repeat: int = 3, min_repeat_ms: float = 10.0,
                 seed: int = 0, timeout_s: float = 30.0):
        self._own_dir = work_dir is None
        self.work_dir = os.path.abspath(work_dir) if work_dir else tempfile.mkdtemp(prefix="tensorize-cuda-run-")
        self.number, self.repeat, self.min_repeat_ms, self.seed = number, repeat, min_repeat_ms, seed
        self.timeout_s = timeout_s
        self._workloads: dict[int, tuple[object, WorkloadData]] = {}

    def workload(self, ctx) -> WorkloadData:
        """The inputs and reference outputs of ``ctx.mod`` (computed once, cached in ``work_dir``)."""
        cached = self._workloads.get(id(ctx.mod))
        if cached is not None and cached[0] is ctx.mod:
            return cached[1]
        data = prepare_workload(ctx.mod, self.work_dir, self.seed, functools.partial(_reference_outputs, ctx.target))
        self._workloads[id(ctx.mod)] = (ctx.mod, data)
        return data

    def run(self, ctx, builds: Sequence[BuildResult]) -> list[RunResult]:
        """Check and time each built candidate; one ``RunResult`` per build."""
        from tensorize.runtime.cuda_module import cupy_or_none

        cupy = cupy_or_none()
        out = []
        for build in builds:
            if build.error or not build.artifact:
                out.append(RunResult(None, build.error or "the candidate was not built", "build"))
            elif cupy is None:
                out.append(RunResult(None, "no CUDA GPU is visible (cupy cannot see a device): run the 'cuda' "
                                           "runner on a machine with an NVIDIA GPU and cupy installed", "run"))
            else:
                out.append(self._run_one(cupy, build, self.workload(ctx)))
        return out

    def _run_one(self, cupy, build: BuildResult, data: WorkloadData) -> RunResult:
        try:
            mod = load_artifact(build.artifact)
            func = mod["main"] if "main" in mod._functions else next(iter(mod._functions.values()))
            args = [cupy.asarray(a) for a in fresh_arguments(data.arguments, data.outputs)]
            func(*args)
            cupy.cuda.Device().synchronize()
        except Exception as err:  # noqa: BLE001 - NVRTC, launch and driver errors come in many types
            return RunResult(None, f"the candidate failed on the GPU: {err}", "run")
        for i, ref, (rtol, atol) in zip(data.outputs, data.reference, data.tolerances):
            got = cupy.asnumpy(args[i])
            if not np.allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True):
                return RunResult(None, f"output {i} differs from the reference (max error "
                                       f"{float(np.max(np.abs(got.astype('float64') - ref))):.3g})", "wrong_output")
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        number = self.number
        start.record()
        func(*args)
        stop.record()
        stop.synchronize()
        once = max(cupy.cuda.get_elapsed_time(start, stop), 1e-3)
        number = max(number, int(self.min_repeat_ms / once) + 1)
        secs = []
        for _ in range(self.repeat):
            start.record()
            for _ in range(number):
                func(*args)
            stop.record()
            stop.synchronize()
            secs.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3 / number)
        return RunResult(secs, None, None)

    def close(self) -> None:
        """Remove the runner's folder (when it made it)."""
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)
