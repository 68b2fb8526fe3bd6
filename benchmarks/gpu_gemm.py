"""Tensor Core GEMMs on an NVIDIA GPU against cuBLAS in the same run: hand schedules (WMMA and inline-PTX
``mma.sync``) and the auto-scheduler's best program (``search.tune_tir`` with the ``cuda`` builder/runner).

    python benchmarks/gpu_gemm.py --arch sm_90                     # f16->f32 and int8->int32, 4096^3
    python benchmarks/gpu_gemm.py --arch sm_90a                    # the same with Hopper's wgmma: hand
                                                                   # schedules of this NN GEMM, wgmma sketches
                                                                   # in the search, and the NT GEMM of
                                                                   # benchmarks/gpu_gemm_wgmma.py
    python benchmarks/gpu_gemm.py --size 2048 --trials 32 --out gemm.json
    python benchmarks/gpu_gemm.py --arch sm_90a --dtypes float16 --layouts nn   # this NN GEMM only
    python benchmarks/gpu_gemm.py --check                          # no GPU: build + nvcc every variant

cuBLAS is timed through cupy: ``cupy.matmul`` for f16 (f32 accumulation, f16 output) and
``cublasGemmEx`` (s8 x s8 -> s32 on Tensor Cores) for int8, falling back to cupy's int32 matmul
(CUDA cores) where cupy does not expose it. Every program's output is checked against cuBLAS's
before it is timed (CUDA events, median of ``--repeat`` runs). Without cupy or a GPU it says so and
exits with status 0 unless ``--check`` is given.
"""
from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import intrinsics.cuda  # noqa: E402,F401  (registers the Tensor Core intrinsics)
import tensorize as tvm  # noqa: E402
from benchmarks import gpu_common  # noqa: E402
from benchmarks.gpu_common import checked_time, nvcc_check, tune_program  # noqa: E402
from benchmarks.gpu_common import time_gpu as _time  # noqa: E402
from benchmarks.gpu_gemm_wgmma import measure as measure_wgmma  # noqa: E402
from intrinsics.cuda_wgmma import INPUT_TYPES  # noqa: E402
from intrinsics.cuda_wgmma_schedule import schedule_wgmma_gemm  # noqa: E402
from tensorize.runtime.cuda_module import gpu_available  # noqa: E402
from tests.codegen.gpu_schedules import gemm, wmma_gemm  # noqa: E402
from tests.codegen.mma_schedules import mma_gemm  # noqa: E402

logger = logging.getLogger("gpu_gemm")
# larger tiles first: ``--max-configs N`` keeps the N most promising
CONFIGS = [dict(warps=w, warp_tiles=t, k_tiles=k) for t, w, k in
           itertools.product([(4, 2), (2, 4), (2, 2), (1, 1)], [(2, 4), (4, 2), (2, 2)], [2, 1])]
SCHEDULES = {"wmma": wmma_gemm, "mma.sync": mma_gemm}
# wgmma (sm_90a) on this NN GEMM: B's tiles are read through the instruction's transpose (K tiles of 64); the
# warp-specialised TMA producer first (`stages` buffers, `group` block rows walked together), then cp.async
# fetches
WGMMA_CONFIGS = [{"warpgroups": 2, "n": 256, "k_steps": 4, "stages": 4, "fetch": "tma", "group": 8},
                 {"warpgroups": 2, "n": 256, "k_steps": 4, "stages": 4, "fetch": "tma", "group": 8, "persistent": 132},
                 {"warpgroups": 2, "n": 256, "k_steps": 4, "stages": 2},
                 {"warpgroups": 2, "n": 128, "k_steps": 4, "stages": 3}]


def hand_schedule(kind, n, in_dtype, out_dtype, config):
    if kind == "wgmma":
        return schedule_wgmma_gemm(gemm(n, n, n, in_dtype, out_dtype), **config)
    return SCHEDULES[kind](gemm(n, n, n, in_dtype, out_dtype), in_dtype, out_dtype, **config)


def searched_schedule(n, in_dtype, out_dtype, arch, trials, work_dir):
    return tune_program(gemm(n, n, n, in_dtype, out_dtype), f"cuda -arch={arch}", trials, work_dir)


def _inputs(cupy, n, in_dtype):
    rng = np.random.default_rng(0)
    if in_dtype == "int8":
        a, b = rng.integers(-8, 8, (n, n)).astype("int8"), rng.integers(-8, 8, (n, n)).astype("int8")
    else:
        a, b = rng.uniform(-1, 1, (n, n)).astype(in_dtype), rng.uniform(-1, 1, (n, n)).astype(in_dtype)
    return cupy.asarray(a), cupy.asarray(b)


def cublas(cupy, a, b, in_dtype, out_dtype):
    """(callable, name): cuBLAS's GEMM for these dtypes (int8 through cublasGemmEx when cupy exposes it)."""
    if in_dtype != "int8":
        return (lambda: cupy.matmul(a, b)), "cupy.matmul (cuBLAS, f16 out)"
    n = a.shape[0]
    c = cupy.empty((n, n), "int32")
    try:
        from cupy_backends.cuda.libs import cublas as lib

        handle = cupy.cuda.device.get_cublas_handle()
        one, zero = np.array(1, "int32"), np.array(0, "int32")
        r8i, r32i = 3, 10  # CUDA_R_8I, CUDA_R_32I
        compute = getattr(lib, "CUBLAS_COMPUTE_32I", 72)

        def gemm_ex():  # row-major C = A B is column-major C^T = B^T A^T
            lib.gemmEx(handle, 0, 0, n, n, n, one.ctypes.data, b.data.ptr, r8i, n, a.data.ptr, r8i, n,
                       zero.ctypes.data, c.data.ptr, r32i, n, compute, -1)
            return c

        gemm_ex()
        cupy.cuda.Device().synchronize()
        return gemm_ex, "cublasGemmEx s8s8s32"
    except Exception as err:  # noqa: BLE001 - cupy builds differ in what they expose
        logger.info("cublasGemmEx int8 unavailable (%s); timing cupy's int32 matmul instead", err)
        a32, b32 = a.astype("int32"), b.astype("int32")
        return (lambda: cupy.matmul(a32, b32)), "cupy.matmul int32 (CUDA cores)"


def measure(n, in_dtype, out_dtype, arch, repeat, trials, work_dir, max_configs=None):
    import cupy

    a, b = _inputs(cupy, n, in_dtype)
    reference = cupy.matmul(a.astype("float32"), b.astype("float32")).astype(out_dtype)
    flops = 2.0 * n ** 3
    library_fn, library_name = cublas(cupy, a, b, in_dtype, out_dtype)
    library = _time(cupy, library_fn, repeat)
    row = {"dtype": f"{in_dtype}->{out_dtype}", "n": n, "cublas": library_name, "cublas_tflops": flops / library / 1e12}
    print(f"{in_dtype}->{out_dtype} {n}^3: {library_name} {row['cublas_tflops']:.1f} TFLOPS")
    tol = 0 if in_dtype == "int8" else 2e-2

    def run(label, sch):
        return checked_time(cupy, sch, f"cuda -arch={arch}", (a, b), reference, out_dtype, tol, repeat, label,
                            logger)

    kinds = [*SCHEDULES, "wgmma"] if arch == "sm_90a" and in_dtype in INPUT_TYPES else list(SCHEDULES)
    for kind in kinds:
        best = None
        for config in (WGMMA_CONFIGS if kind == "wgmma" else CONFIGS)[:max_configs]:
            secs = run(f"{kind} {config}", hand_schedule(kind, n, in_dtype, out_dtype, config))
            if secs is not None and (best is None or secs < best[0]):
                best = (secs, config)
        if best:
            row[kind] = {"tflops": flops / best[0] / 1e12, "ratio": library / best[0], "config": best[1]}
            print(f"  {kind:9s} {row[kind]['tflops']:.1f} TFLOPS ({row[kind]['ratio']:.2f}x cuBLAS), {best[1]}")
    if trials:
        sch = searched_schedule(n, in_dtype, out_dtype, arch, trials, os.path.join(work_dir, f"{in_dtype}_{n}"))
        secs = run("searched", sch) if sch is not None else None
        if sch is not None:  # the best program, for reading: its trace and CUDA C beside the database
            with open(os.path.join(work_dir, f"{in_dtype}_{n}", "best.cu"), "w") as f:
                f.write(tvm.build(sch.mod, target=f"cuda -arch={arch}").imported_modules[0].get_source())
            with open(os.path.join(work_dir, f"{in_dtype}_{n}", "best_trace.py"), "w") as f:
                f.write(str(sch.trace))
        if secs is not None:
            row["searched"] = {"tflops": flops / secs / 1e12, "ratio": library / secs, "trials": trials}
            print(f"  searched  {row['searched']['tflops']:.1f} TFLOPS ({row['searched']['ratio']:.2f}x cuBLAS)")
    return row


def check(n, arch) -> int:
    """Build every hand variant and a searched space sample for ``arch``; compile them with nvcc."""
    from search.context import TuneContext
    from search.postproc import default_postprocs
    from search.space_generator import PostOrderApply, replay_candidate
    from tensorize.schedule import ScheduleError
    from tensorize.schedule.trace import RESAMPLE

    sources = []
    for dt, ot in (("float16", "float32"), ("int8", "int32")):
        for kind in [*SCHEDULES, "wgmma"] if arch == "sm_90a" and dt in INPUT_TYPES else SCHEDULES:
            for i, config in enumerate(WGMMA_CONFIGS if kind == "wgmma" else CONFIGS[1:2]):
                try:
                    sch = hand_schedule(kind, n, dt, ot, config)
                except ValueError as err:  # e.g. a raster group the small check size's block rows cannot take
                    logger.info("%s %s does not apply at %d: %s", kind, config, n, err)
                    continue
                sources.append((f"{kind}_{dt}_{i}", tvm.build(sch.mod, target=f"cuda -arch={arch}")
                                .imported_modules[0].get_source()))
        ctx = TuneContext.create(gemm(n, n, n, dt, ot), f"cuda -arch={arch}", seed=0)
        for i, sketch in enumerate(PostOrderApply().generate_design_space(ctx)):
            for seed in range(8):  # the first valid sample of each sketch
                try:
                    sch = replay_candidate(ctx, sketch.trace, default_postprocs(ctx),
                                           decision_provider=lambda inst, d: RESAMPLE, seed=seed)
                except ScheduleError:
                    continue
                sources.append((f"searched_{dt}_sketch{i}", tvm.build(sch.mod, target=f"cuda -arch={arch}")
                                .imported_modules[0].get_source()))
                break
    return nvcc_check(sources, arch)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--launches", type=int, default=gpu_common.LAUNCHES,
                        help="back-to-back calls per timing (1: the host's launch path is timed too)")
    parser.add_argument("--trials", type=int, default=64, help="search trials per GEMM (0: hand schedules only)")
    parser.add_argument("--work-dir", default=None, help="the search's folder (default: a temporary one)")
    parser.add_argument("--out", help="write the results as JSON to this file")
    parser.add_argument("--dtypes", default="float16,int8", help="which GEMMs: float16 (->float32), int8 (->int32)")
    parser.add_argument("--layouts", default="nn,nt",
                        help="nn: this GEMM (C = A @ B); nt: with sm_90a, also the NT GEMM of gpu_gemm_wgmma.py")
    parser.add_argument("--check", action="store_true", help="build every variant and compile it with nvcc")
    parser.add_argument("--max-configs", type=int, default=None,
                        help="hand schedules: try only the first N tile configurations (largest tiles first)")
    args = parser.parse_args(argv)
    gpu_common.LAUNCHES = args.launches
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.check:
        return check(min(args.size, 256), args.arch)
    if not gpu_available():
        print("no CUDA GPU visible to cupy here: nothing to measure (install cupy-cuda13x and run on a GPU node)")
        return 0
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="gpu_gemm_")
    dtypes, layouts = args.dtypes.split(","), args.layouts.split(",")
    rows = [measure(args.size, dt, ot, args.arch, args.repeat, args.trials, work_dir, args.max_configs)
            for dt, ot in (("float16", "float32"), ("int8", "int32")) if dt in dtypes and "nn" in layouts]
    if args.arch == "sm_90a" and "float16" in dtypes and "nt" in layouts:  # Hopper's wgmma, on the NT layout
        rows.append({"wgmma": measure_wgmma(args.size, args.repeat, args.trials, work_dir, args.max_configs)})
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
