"""Tensor Core GEMMs on an NVIDIA GPU: the WMMA schedule against cuBLAS (``cupy.matmul``) in the same run.

    python benchmarks/gpu_gemm.py                  # f16->f32 4096^3 and int8->int32 4096^3
    python benchmarks/gpu_gemm.py --size 2048 --repeat 20

Without cupy or a GPU it says so and exits with status 0 (nothing to measure); ``--source`` then still
writes the generated CUDA C. The schedule is the hand WMMA schedule of ``tests/codegen/gpu_schedules.py``
with a few block shapes tried; the best is reported with its ratio to cuBLAS.
"""
from __future__ import annotations

import argparse
import itertools
import logging
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import tensorize as tvm  # noqa: E402
from tensorize.runtime.cuda_module import gpu_available  # noqa: E402
from tests.codegen.gpu_schedules import gemm, wmma_gemm  # noqa: E402

logger = logging.getLogger("gpu_gemm")
CONFIGS = [dict(warps=w, warp_tiles=t, k_tiles=k) for w, t, k in
           itertools.product([(2, 2), (2, 4), (4, 2)], [(1, 1), (2, 2), (2, 4), (4, 2)], [1, 2])]


def build(n, in_dtype, out_dtype, config, arch):
    sch = wmma_gemm(gemm(n, n, n, in_dtype, out_dtype), in_dtype, out_dtype, **config)
    return tvm.build(sch.mod, target=f"cuda -arch={arch}")


def measure(n, in_dtype, out_dtype, arch, repeat):
    import cupy

    rng = np.random.default_rng(0)
    if in_dtype == "int8":
        a_np = rng.integers(-8, 8, (n, n)).astype("int8")
        b_np = rng.integers(-8, 8, (n, n)).astype("int8")
    else:
        a_np = rng.uniform(-1, 1, (n, n)).astype(in_dtype)
        b_np = rng.uniform(-1, 1, (n, n)).astype(in_dtype)
    a, b = cupy.asarray(a_np), cupy.asarray(b_np)
    c = cupy.zeros((n, n), out_dtype)
    reference = cupy.matmul(a.astype(out_dtype), b.astype(out_dtype))
    flops = 2.0 * n ** 3

    def time_cupy():
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        if in_dtype == "int8":  # cuBLAS int8 GEMM through cupy's int32 path (cupy has no s8 x s8 -> s32 matmul)
            fn = lambda: cupy.matmul(a.astype("int32"), b.astype("int32"))  # noqa: E731
        else:
            fn = lambda: cupy.matmul(a, b)  # noqa: E731 - f16 x f16 -> f16 with f32 accumulation (cuBLAS)
        fn()
        start.record()
        for _ in range(repeat):
            fn()
        stop.record()
        stop.synchronize()
        return cupy.cuda.get_elapsed_time(start, stop) / 1e3 / repeat

    best = None
    for config in CONFIGS:
        try:
            rt = build(n, in_dtype, out_dtype, config, arch)
            rt["main"](a, b, c)
        except Exception as err:  # noqa: BLE001 - a config the GPU rejects (shared memory, registers) is skipped
            logger.info("config %s failed: %s", config, err)
            continue
        tol = 0 if in_dtype == "int8" else 1e-2
        if not cupy.allclose(c, reference, atol=tol, rtol=tol):
            logger.warning("config %s gives wrong results; skipped", config)
            continue
        seconds = rt.time_evaluator("main", tvm.cuda(0), number=repeat, repeat=3)(a, b, c).median
        if best is None or seconds < best[0]:
            best = (seconds, config)
    library = time_cupy()
    print(f"{in_dtype}->{out_dtype} {n}^3: cuBLAS (cupy.matmul) {flops / library / 1e12:.1f} TFLOPS")
    if best is None:
        print("  no WMMA configuration ran")
        return
    seconds, config = best
    print(f"  tensorize WMMA {flops / seconds / 1e12:.1f} TFLOPS ({library / seconds:.2f}x cuBLAS), config {config}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--arch", default="sm_80")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--source", help="write the CUDA C of the first configuration (f16->f32) to this file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.source:
        source = build(args.size, "float16", "float32", CONFIGS[0], args.arch).imported_modules[0].get_source()
        with open(args.source, "w") as f:
            f.write(source)
        print(f"wrote {args.source}")
    if not gpu_available():
        print("no CUDA GPU visible to cupy here: nothing to measure (install cupy-cuda13x and run on a GPU node)")
        return 0
    measure(args.size, "float16", "float32", args.arch, args.repeat)
    measure(args.size, "int8", "int32", args.arch, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
