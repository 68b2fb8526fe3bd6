"""Hopper's warpgroup MMA (``wgmma``, sm_90a) against cuBLAS on an f16 GEMM, in the same run: hand schedules of
``intrinsics.cuda_wgmma_schedule`` and the auto-scheduler's best program on ``cuda -arch=sm_90a`` (its
``multi_level_tiling_wgmma`` sketches compete with WMMA and SIMT ones).

    python benchmarks/gpu_gemm_wgmma.py                              # 4096^3, hand + 64 search trials
    python benchmarks/gpu_gemm_wgmma.py --size 2048 --trials 0       # hand schedules only
    python benchmarks/gpu_gemm_wgmma.py --out-dtype float16          # search the f16-out GEMM (as cupy.matmul)
    python benchmarks/gpu_gemm_wgmma.py --check                      # no GPU: build + nvcc every variant

The GEMM is ``C = A @ B^T`` with A (M x K) and B (N x K), both K-major, accumulated in f32: cuBLAS gets the
same arrays (``cupy.matmul(a, b.T)``, its "TN" case, f16 out), and again with an f32 C through
``cublasGemmEx``. Our hand configurations write f32 (the same work as the second) or, marked ``out_dtype``,
f16 (the same work as the first: the accumulators rounded in the store). Every program's output is checked
against cuBLAS's before it is timed (CUDA events, median of ``--repeat`` timings of ``--launches`` back-to-back
calls, for cuBLAS as for us; the best programs and cuBLAS are also timed one launch at a time, host launch
path included, and reported as ``single_launch``). Without cupy or an sm_90 GPU it says
so and exits with status 0 unless ``--check`` is given.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import tensorize as tvm
from benchmarks import gpu_common
from benchmarks.gpu_common import checked_time, nvcc_check, tune_program
from benchmarks.gpu_common import time_gpu as _time
from intrinsics.cuda_wgmma_schedule import gemm_nt, schedule_wgmma_gemm
from tensorize.runtime.cuda_module import gpu_available

logger = logging.getLogger("gpu_gemm_wgmma")
TARGET = "cuda -arch=sm_90a"
# hand schedules, the warp-specialised TMA ones first (a producer warpgroup fills `stages` buffers of
# (64 * warpgroups + n) x 64 f16; `group`: block rows walked together; `cluster`: pairs of blocks copy their
# common tile of B once, multicast), then the cp.async ones, larger tiles
# first: (stages + 2) tiles of (64 * warpgroups + n) x 16 * k_steps f16 (one version more than the depth: the
# lagging wgmma); at most 227 KiB of shared memory on sm_90; swizzled unless said
CONFIGS = [
    {"warpgroups": 2, "n": 256, "k_steps": 4, "stages": 4, "fetch": "tma", "group": 8},
    {"warpgroups": 2, "n": 256, "k_steps": 4, "stages": 4, "fetch": "tma", "group": 8, "out_dtype": "float16"},
    # persistent: at most one block per SM (132 on an H100/H200), each walking its tiles
    {"warpgroups": 2, "n": 256, "k_steps": 4, "stages": 4, "fetch": "tma", "group": 8, "persistent": 132},
    {"warpgroups": 2, "n": 256, "k_steps": 4, "stages": 4, "fetch": "tma", "group": 8, "persistent": 132,
     "out_dtype": "float16"},
    {"warpgroups": 2, "n": 256, "k_steps": 4, "stages": 4, "fetch": "tma"},
    {"warpgroups": 2, "n": 256, "k_steps": 4, "stages": 3, "fetch": "tma", "group": 4},
    {"warpgroups": 2, "n": 128, "k_steps": 4, "stages": 6, "fetch": "tma", "group": 8},
    # clusters of two blocks sharing B's tile by multicast: right, but half the speed on an H100 (not understood)
    {"warpgroups": 2, "n": 256, "k_steps": 4, "stages": 4, "fetch": "tma", "group": 8, "cluster": 2},
    {"warpgroups": 2, "n": 256, "k_steps": 4, "stages": 2}, {"warpgroups": 2, "n": 256, "k_steps": 2, "stages": 4},
    {"warpgroups": 2, "n": 256, "k_steps": 2, "stages": 5}, {"warpgroups": 2, "n": 128, "k_steps": 4, "stages": 4},
    {"warpgroups": 2, "n": 128, "k_steps": 4, "stages": 3}, {"warpgroups": 1, "n": 256, "k_steps": 4, "stages": 2},
    # two thread blocks per SM (at most 113 KiB of shared memory and 32K registers each)
    {"warpgroups": 2, "n": 128, "k_steps": 4, "stages": 1}, {"warpgroups": 2, "n": 128, "k_steps": 2, "stages": 3},
    {"warpgroups": 1, "n": 256, "k_steps": 2, "stages": 2},
    {"warpgroups": 2, "n": 256, "k_steps": 4, "stages": 2, "swizzle": False},
    # f16 written, as cupy.matmul does: the accumulators rounded in the store (f32 accumulation either way)
    {"warpgroups": 2, "n": 256, "k_steps": 4, "stages": 2, "out_dtype": "float16"},
    {"warpgroups": 2, "n": 256, "k_steps": 2, "stages": 4, "out_dtype": "float16"},
]


def cublas_f32_out(cupy, a, b, reference):
    """cuBLAS's TN GEMM with f16 inputs and an f32 C (``cublasGemmEx``), checked; None where cupy lacks it."""
    n = a.shape[0]
    c = cupy.empty((n, n), "float32")
    try:
        from cupy_backends.cuda.libs import cublas as lib

        handle = cupy.cuda.device.get_cublas_handle()
        one, zero = np.array(1, "float32"), np.array(0, "float32")
        r16f, r32f, compute = 2, 0, getattr(lib, "CUBLAS_COMPUTE_32F", 68)

        def gemm_ex():  # row-major C = A B^T is column-major C^T = B A^T: op(B) = T, op(A) = N
            lib.gemmEx(handle, 1, 0, n, n, n, one.ctypes.data, b.data.ptr, r16f, n, a.data.ptr, r16f, n,
                       zero.ctypes.data, c.data.ptr, r32f, n, compute, -1)
            return c

        gemm_ex()
        cupy.cuda.Device().synchronize()
        if not cupy.allclose(c, reference, atol=2e-2, rtol=2e-2):
            logger.info("cublasGemmEx f32-out gave a different result; not timed")
            return None
        return gemm_ex
    except Exception as err:  # noqa: BLE001 - cupy builds differ in what they expose
        logger.info("cublasGemmEx f16 -> f32 unavailable (%s)", err)
        return None


def _workload(n, out_dtype):
    return gemm_nt(n, n, n, out_dtype=out_dtype, acc_dtype="float32")


def measure(n, repeat, trials, work_dir, max_configs=None, out_dtype="float32") -> dict:
    import cupy

    rng = np.random.default_rng(0)
    a = cupy.asarray(rng.uniform(-1, 1, (n, n)).astype("float16"))
    b = cupy.asarray(rng.uniform(-1, 1, (n, n)).astype("float16"))
    reference = cupy.matmul(a.astype("float32"), b.astype("float32").T)
    flops = 2.0 * n ** 3
    library = _time(cupy, lambda: cupy.matmul(a, b.T), repeat)
    row = {"n": n, "cublas": "cupy.matmul(a, b.T) (cuBLAS TN, f16 out)", "cublas_tflops": flops / library / 1e12}
    print(f"f16 NT GEMM {n}^3: cuBLAS {row['cublas_tflops']:.1f} TFLOPS (f16 out)")
    f32_out = cublas_f32_out(cupy, a, b, reference)
    if f32_out is not None:  # the same work as ours: f32 written
        secs = _time(cupy, f32_out, repeat)
        row["cublas_f32_out_tflops"] = flops / secs / 1e12
        print(f"  cuBLAS f32 out (cublasGemmEx) {row['cublas_f32_out_tflops']:.1f} TFLOPS")

    def run(label, sch, dtype="float32", number=None):
        return checked_time(cupy, sch, TARGET, (a, b), reference, dtype, 2e-2, repeat, label, logger, number)

    single = {"cublas_tflops": flops / _time(cupy, lambda: cupy.matmul(a, b.T), repeat, 1) / 1e12}

    best = None
    for config in CONFIGS[:max_configs]:
        schedule_args = {k: v for k, v in config.items() if k != "out_dtype"}
        written = config.get("out_dtype", "float32")
        secs = run(f"wgmma {config}", schedule_wgmma_gemm(_workload(n, written), **schedule_args), written)
        if secs is not None:
            vs_f32 = (f", {flops / secs / 1e12 / row['cublas_f32_out_tflops']:.2f}x f32 out"
                      if written == "float32" and "cublas_f32_out_tflops" in row else "")
            print(f"  hand wgmma {config}: {flops / secs / 1e12:.1f} TFLOPS ({library / secs:.2f}x cuBLAS{vs_f32})")
            if best is None or secs < best[0]:
                best = (secs, config)
    if best:
        row["hand"] = {"tflops": flops / best[0] / 1e12, "ratio": library / best[0], "config": best[1]}
        config = best[1]
        secs = run("hand, one launch", schedule_wgmma_gemm(_workload(n, config.get("out_dtype", "float32")), **{
            k: v for k, v in config.items() if k != "out_dtype"}), config.get("out_dtype", "float32"), 1)
        single["hand_tflops"] = flops / secs / 1e12 if secs else None
    if trials:
        folder = os.path.join(work_dir, f"wgmma_{n}")
        sch = tune_program(_workload(n, out_dtype), TARGET, trials, folder)
        secs = run("searched", sch, out_dtype) if sch is not None else None
        if secs is not None:
            with open(os.path.join(folder, "best.cu"), "w") as f:
                f.write(tvm.build(sch.mod, target=TARGET).imported_modules[0].get_source())
            row["searched"] = {"tflops": flops / secs / 1e12, "ratio": library / secs, "trials": trials,
                               "out": out_dtype,
                               "wgmma": "wgmma" in sch.mod.script()}
            print(f"  searched {row['searched']['tflops']:.1f} TFLOPS ({row['searched']['ratio']:.2f}x cuBLAS)")
            secs = run("searched, one launch", sch, out_dtype, 1)
            single["searched_tflops"] = flops / secs / 1e12 if secs else None
    row["single_launch"] = single
    print("  one launch per timing (host launch path included): " + ", ".join(
        f"{k[:-len('_tflops')]} {v:.1f}" for k, v in single.items() if v) + " TFLOPS")
    return row


def check(n) -> int:
    """Build every hand configuration for sm_90a and compile it with nvcc (no GPU needed)."""
    sources = []
    for config in CONFIGS:
        written = config.get("out_dtype", "float32")
        sch = schedule_wgmma_gemm(_workload(n, written), **{k: v for k, v in config.items() if k != "out_dtype"})
        name = "wgmma_" + "_".join(str(v) if isinstance(v, str) else str(int(v)) for v in config.values())
        sources.append((name, tvm.build(sch.mod, target=TARGET).imported_modules[0].get_source()))
    return nvcc_check(sources, "sm_90a")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--launches", type=int, default=gpu_common.LAUNCHES,
                        help="back-to-back calls per timing (1: the host's launch path is timed too)")
    parser.add_argument("--trials", type=int, default=64, help="search trials (0: hand schedules only)")
    parser.add_argument("--max-configs", type=int, default=None, help="hand schedules: the first N configurations")
    parser.add_argument("--work-dir", default=None, help="the search's folder (default: a temporary one)")
    parser.add_argument("--out", help="write the results as JSON to this file")
    parser.add_argument("--check", action="store_true", help="build every hand variant and compile it with nvcc")
    parser.add_argument("--out-dtype", default="float32", choices=["float32", "float16"],
                        help="what the searched GEMM writes (f32 accumulation either way; float16 as cupy.matmul)")
    args = parser.parse_args(argv)
    gpu_common.LAUNCHES = args.launches
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.check:
        return check(min(args.size, 1024))
    if not gpu_available():
        print("no CUDA GPU visible to cupy here: nothing to measure (run on an sm_90 GPU node)")
        return 0
    import cupy

    if int(cupy.cuda.Device().compute_capability) != 90:
        print(f"wgmma needs an sm_90 GPU; this one is sm_{cupy.cuda.Device().compute_capability}")
        return 0
    row = measure(args.size, args.repeat, args.trials, args.work_dir or tempfile.mkdtemp(prefix="gpu_wgmma_"),
                  args.max_configs, args.out_dtype)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(row, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
