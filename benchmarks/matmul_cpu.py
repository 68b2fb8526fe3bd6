"""1024x1024x1024 float32 matmul: the seed-003 progression and our best hand schedule, next to numpy.

Run: ``python benchmarks/matmul_cpu.py [--size 1024] [--repeat 15] [--skip-default]``

Prints, for each variant, seconds per call, GFLOPS, the ratio to numpy (numpy timed in alternating
blocks with the variant, ``--repeat`` calls each, medians; see ``measure_alternating`` for why
blocks with a pause and not call-by-call alternation), and the compile time split into lowering
(``tvm.lower``) and LLVM (code generation, O3, JIT; the first build also pays for LLVM's one-time
initialisation). numpy runs in this same process; this script unsets
``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` before numpy loads so that OpenBLAS picks its best
kernel for this CPU.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

for _var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(_var, None)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import tensorize as tvm  # noqa: E402
from tensorize import te  # noqa: E402
from tensorize.codegen import build_module  # noqa: E402
from tensorize.ir import IRModule  # noqa: E402
from tensorize.target import Target  # noqa: E402


def matmul_module(M: int, N: int, K: int, dtype: str = "float32") -> IRModule:
    """The seed-003 program: C[m, n] = sum_k A[m, k] * B[k, n]."""
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A", dtype=dtype)
    B = te.placeholder((K, N), name="B", dtype=dtype)
    C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")
    return IRModule({"main": te.create_prim_func([A, B, C]).with_attr("global_symbol", "main")})


def seed_tiled(mod: IRModule, parallel: bool) -> "tvm.tir.Schedule":
    """Seed 003: 32x32 tiles with reorder (and the outer loop parallel)."""
    sch = tvm.s_tir.Schedule(mod)
    block_c = sch.get_sblock("C")
    y, x, k = sch.get_loops(block_c)
    yo, yi = sch.split(y, [None, 32])
    xo, xi = sch.split(x, [None, 32])
    sch.reorder(yo, xo, k, yi, xi)
    if parallel:
        sch.parallel(yo)
    return sch


def packed_kernel(mod: IRModule, mr: int = 8, nr: int = 32, kc: int = 256) -> "tvm.tir.Schedule":
    """Our hand schedule, in the style of GotoBLAS:

    * B is packed into (N/nr, K, nr) panels (cache_read + transform_layout), so the micro-kernel
      reads one contiguous, 64-byte aligned row of ``nr`` floats per k; the pack is a parallel,
      vectorized copy of ``nr`` contiguous floats at a time;
    * the column panels are the outer, parallel loop and the row blocks run inside it, so each
      thread keeps its B panel (K x nr floats) in L2 while it streams the rows of A past it;
    * an mr x nr register tile of accumulators (cache_write to "local" + reverse_compute_at) with
      the mr rows unrolled and the nr columns vectorized: mr * nr / 16 zmm accumulators, one
      broadcast of A per row and nr / 16 vector loads of B per k;
    * K is split by ``kc`` so that one k-block of the panel and of the A rows stays in L1.

    Final choice: mr=8, nr=32, kc=256, loop order xo (parallel), yo, ko, ki, yi (unrolled),
    xi (vectorized). The inner loop is 16 FMAs, 8 broadcasts and 2 aligned loads per k with 16 zmm
    accumulators, no spills; on 2 AVX-512 cores it runs at about numpy's speed (~140-190 GFLOPS
    vs ~150-165, timed apart; see ``measure_alternating``). Measured and not kept, none clearly
    better within the run-to-run noise (~+-15%): mr 4/6/12/14, nr 64 (with mr 4/6), kc 128/512/1024
    (kc 128 a little slower); packing A as well into (M/mr, K, mr) panels (a full parallel pre-pack;
    ~10-15% slower, the extra pass costs more than the strided A rows do); parallelising over row
    blocks (yo outer; ~20-30% slower: every thread then streams all of packed B, which exceeds L2);
    unrolling ki by 2 or 4 (no change at mr=8, and with mr=12 it spills and halves the speed).
    """
    sch = tvm.tir.Schedule(mod)
    block_c = sch.get_block("C")
    K = int(sch.get(sch.get_loops(block_c)[2]).extent)
    b_pack = sch.cache_read(block_c, 1, "global")
    sch.transform_layout(block_c, ("read", 1), lambda k, n: (n // nr, k, n % nr))
    c_local = sch.cache_write(block_c, 0, "local")
    y, x, k = sch.get_loops(block_c)
    yo, yi = sch.split(y, [None, mr])
    xo, xi = sch.split(x, [None, nr])
    ko, ki = sch.split(k, [None, min(kc, K)])
    sch.reorder(xo, yo, ko, ki, yi, xi)
    sch.reverse_compute_at(c_local, yo)
    sch.parallel(xo)
    sch.unroll(yi)
    sch.vectorize(xi)
    sch.decompose_reduction(block_c, ko)
    # The write-back of the register tile: vectorize its inner axis.
    sch.vectorize(sch.get_loops(c_local)[-1])
    # The pack: rows in parallel, each row copied nr contiguous floats at a time.
    pack_rows, pack_cols = sch.get_loops(b_pack)
    sch.parallel(pack_rows)
    _, pack_lanes = sch.split(pack_cols, [None, nr])
    sch.vectorize(pack_lanes)
    return sch


def measure_alternating(rt_mod, args, numpy_call, repeat: int, rounds: int = 3,
                        settle_s: float = 0.3) -> tuple[float, float]:
    """Median seconds of the kernel and of numpy, timed in alternating blocks so that both see the
    same load (the machine may be shared: a ratio of medians taken minutes apart would mostly
    measure that).

    Blocks, not single calls: the two thread pools must not meet. After a call, OpenBLAS's worker
    threads spin for about 2**28 cycles (~0.1 s) and libgomp's for a while too; a call of the other
    library made in that window shares the 2 cores with the spinning pool and runs at roughly half
    speed (call-by-call alternation measured this kernel at ~60-80 GFLOPS instead of ~150, and numpy
    at ~110 instead of ~155). So each block waits ``settle_s`` first and discards one warm-up call.
    """
    timer = rt_mod.time_evaluator(rt_mod.entry_name, tvm.cpu(0), number=1, repeat=1)
    per_block = max(1, -(-repeat // rounds))
    ours, theirs = [], []
    for _ in range(rounds):
        time.sleep(settle_s)
        timer(*args)
        ours += [float(timer(*args).median) for _ in range(per_block)]
        time.sleep(settle_s)
        numpy_call()
        for _ in range(per_block):
            start = time.perf_counter()
            numpy_call()
            theirs.append(time.perf_counter() - start)
    return float(np.median(ours)), float(np.median(theirs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--skip-default", action="store_true", help="skip the slow untransformed schedule")
    opts = parser.parse_args()
    M = N = K = opts.size
    flops = 2.0 * M * N * K
    rng = np.random.default_rng(0)
    a_np = rng.random((M, K), dtype=np.float32)
    b_np = rng.random((K, N), dtype=np.float32)
    expected = a_np @ b_np

    np_times = []
    for _ in range(max(opts.repeat, 5)):
        start = time.perf_counter()
        np.matmul(a_np, b_np)
        np_times.append(time.perf_counter() - start)
    np_s = float(np.median(np_times))
    print(f"numpy (OpenBLAS, OPENBLAS_CORETYPE/L2_SIZE unset here): {np_s:.4f} s  {flops / np_s / 1e9:7.1f} GFLOPS")

    mod = matmul_module(M, N, K)
    variants = []
    if not opts.skip_default:
        variants.append(("default schedule", lambda: tvm.tir.Schedule(mod)))
    variants += [
        ("32x32 tiles + reorder (seed 003)", lambda: seed_tiled(mod, parallel=False)),
        ("  + parallel (seed 003)", lambda: seed_tiled(mod, parallel=True)),
        ("packed B, 8x32 register tile, vectorized, parallel", lambda: packed_kernel(mod)),
    ]
    dev = tvm.cpu(0)
    target = Target("llvm -mcpu=native")
    print(f"{'variant':52s} {'seconds':>9s} {'GFLOPS':>8s} {'vs numpy':>9s} {'lower s':>8s} {'llvm s':>8s}")
    for name, make in variants:
        sch = make()
        start = time.perf_counter()
        lowered = tvm.lower(sch.mod)
        lower_s = time.perf_counter() - start
        rt_mod = build_module(lowered, target)
        llvm_s = time.perf_counter() - start - lower_s
        a = tvm.nd.array(a_np, dev)
        b = tvm.nd.array(b_np, dev)
        c = tvm.nd.array(np.zeros((M, N), dtype="float32"), dev)
        rt_mod(a, b, c)
        np.testing.assert_allclose(c.numpy(), expected, rtol=1e-3)
        repeat = 1 if name == "default schedule" else opts.repeat
        seconds, np_beside = measure_alternating(rt_mod, (a, b, c), lambda: np.matmul(a_np, b_np), repeat,
                                                  rounds=min(3, repeat))
        print(f"{name:52s} {seconds:9.4f} {flops / seconds / 1e9:8.1f} {np_beside / seconds:9.3f} "
              f"{lower_s:8.3f} {llvm_s:8.3f}")


if __name__ == "__main__":
    main()
