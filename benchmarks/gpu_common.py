"""What the GPU benchmarks share: CUDA-event timing and a short search with the project's search settings."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import numpy as np

LAUNCHES = 10  # back-to-back calls per timing: each launch is issued while the previous kernel runs


def time_gpu(cupy, fn, repeat, number=None):
    """Median seconds per call of ``fn`` over ``repeat`` timings of ``number`` back-to-back calls each (after one
    warm-up), timed with CUDA events.

    With ``number=1`` the host's launch path (argument checks, the Python call) lies between the events and
    counts as GPU time: on a 0.2 ms kernel that is several percent, for cuBLAS through cupy as for us. Calls
    issued back to back measure the kernels, as the search's runner and ``time_evaluator`` do."""
    number = LAUNCHES if number is None else number
    fn()
    times = []
    for _ in range(repeat):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(number):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3 / number)
    return float(np.median(times))


def checked_time(cupy, sch, target, inputs, reference, out_dtype, tol, repeat, label, logger, number=None):
    """Median seconds of ``sch`` built for ``target`` on ``inputs`` (a new output of ``reference``'s shape in
    ``out_dtype``; ``number`` calls per timing, as ``time_gpu``), or None where the build or launch fails or the
    output is not ``reference`` within ``tol``."""
    import tensorize as tvm

    c = cupy.zeros(reference.shape, out_dtype)
    try:
        rt = tvm.build(sch.mod, target=target)
        rt["main"](*inputs, c)
        cupy.cuda.Device().synchronize()
    except Exception as err:  # noqa: BLE001 - a variant the GPU rejects (shared memory, registers)
        logger.info("%s failed: %s", label, err)
        return None
    if not cupy.allclose(c.astype(reference.dtype), reference, atol=tol, rtol=tol):
        logger.warning("%s gives wrong results (max error %.3g); skipped", label,
                       float(cupy.abs(c.astype(reference.dtype) - reference).max()))
        return None
    return time_gpu(cupy, lambda: rt["main"](*inputs, c), repeat, number)


def tune_program(mod, target, trials, work_dir):
    """The search's best schedule of ``mod`` after ``trials`` on the GPU (the ``cuda`` builder and runner)."""
    import yaml

    from search.tune import compile_tir, tune_tir

    # the search parameters of configs/search/evolutionary.yaml, as the CPU benchmarks use them (the class
    # defaults are MetaSchedule's population of 512: minutes of Python replay per round)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    with open(os.path.join(root, "configs", "search", "evolutionary.yaml")) as f:
        strategy_config = yaml.safe_load(f)["strategy"]
    db = tune_tir(mod, target, work_dir, max_trials_global=trials, num_trials_per_iter=min(16, trials),
                  builder="cuda", runner="cuda", progress=False, strategy_config=strategy_config)
    return compile_tir(db, mod, target)




def nvcc_check(sources, arch: str) -> int:
    """Compile each ``(name, CUDA source)`` with nvcc for ``arch`` and print ok (with ptxas's register count) or
    the error; 1 when any failed, else 0."""
    folder, failures = tempfile.mkdtemp(prefix="gpu_check_"), 0
    for name, source in sources:
        cu = os.path.join(folder, name.replace(".", "_") + ".cu")
        with open(cu, "w") as f:
            f.write(source)
        done = subprocess.run(["nvcc", f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-o", cu[:-3] + ".cubin", cu],
                              capture_output=True, text=True, check=False)
        failures += done.returncode != 0
        regs = [line.strip() for line in done.stderr.splitlines() if "registers" in line]
        print(f"{name}: {('ok, ' + regs[-1] if regs else 'ok') if done.returncode == 0 else done.stderr[:500]}")
    shutil.rmtree(folder, ignore_errors=True)
    return 1 if failures else 0
