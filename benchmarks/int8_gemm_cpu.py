"""1024^3 u8 x s8 -> s32 GEMM tensorized with AVX512-VNNI, next to baselines and the machine's VNNI peak.

Run: ``python benchmarks/int8_gemm_cpu.py [--size 1024] [--repeat 10] [--mr 4 --nb 4]``

B arrives packed as (N/16, K/4, 16, 4) (the layout vpdpbusd reads, as in TVM's VNNI schedules). Our
schedule: an mr x (16*nb) tile of int32 accumulators in a "local" buffer (cache_write +
reverse_compute_at) that LLVM keeps in zmm registers, the reduction stepped 4 at a time through the
``dot_16x4_vnni`` intrinsic with the mr x nb calls unrolled, tiles over (N, M) fused and parallel.

Baselines measured in the same process: numpy int32 matmul (OpenBLAS has no int8 GEMM), PyTorch
``torch._int_mm`` (s8 x s8 -> s32; its u8 operand is shifted to s8 and corrected) when it runs here,
and the VNNI peak: a TensorIR kernel of 24 independent vpdpbusd accumulator chains on one register-resident
A and B (26 zmm registers, no spills: 2 ports x 5 cycles latency need 10 chains in flight), on every thread,
checked against the same kernel in C (``benchmarks/c_peaks.py``, gcc -mavx512vnni): its result must be
equal and its rate close, so "of peak" is measured against what the hardware does. (An earlier kernel held
16 accumulators and 16 B registers: 33 zmm, so LLVM reloaded B from the stack in the loop.)

Without AVX512-VNNI on this CPU the script says so and exits 0.
This script unsets ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` before numpy loads so that OpenBLAS
picks its best kernel for this CPU.
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
from tensorize.script import tir as T  # noqa: E402

import intrinsics  # noqa: E402,F401  (registers dot_16x4_vnni)
from intrinsics.x86 import VNNI_DOT_16x4_INTRIN  # noqa: E402
from tensorize.target import host_cpu  # noqa: E402

from c_peaks import VNNI_CHAINS, CKernelUnavailable, ptr, vnni_peak_c  # noqa: E402

TARGET = "llvm -mcpu=native"


def int8_gemm_packed(M: int, N: int, K: int):
    """C[i, j] = sum_k int32(A[i, k]) * int32(B[j, k]) with B stored packed as (N/16, K/4, 16, 4)."""

    @T.prim_func
    def gemm(A: T.Buffer((M, K), "uint8"), B: T.Buffer((N // 16, K // 4, 16, 4), "int8"),
             C: T.Buffer((M, N), "int32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i, j, k in T.grid(M, N, K):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0
                C[vi, vj] = C[vi, vj] + T.Cast("int32", A[vi, vk]) * T.Cast("int32", B[vj // 16, vk // 4, vj % 16, vk % 4])

    return gemm


def vnni_schedule(M: int, N: int, K: int, mr: int = 4, nb: int = 4) -> "tvm.tir.Schedule":
    """The hand-tensorized schedule (see the module docstring)."""
    sch = tvm.tir.Schedule(int8_gemm_packed(M, N, K))
    block = sch.get_block("C")
    c_local = sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    i_o, i_i = sch.split(i, [None, mr])
    j_o, j_m, j_i = sch.split(j, [None, nb, 16])
    k_o, k_i = sch.split(k, [None, 4])
    # j outer, i inner: one B panel (16*nb columns x K) stays in L2 while every row block runs over it.
    sch.reorder(j_o, i_o, k_o, i_i, j_m, j_i, k_i)
    sch.reverse_compute_at(c_local, i_o)
    sch.parallel(sch.fuse(j_o, i_o))
    init = sch.decompose_reduction(block, k_o)
    sch.vectorize(sch.get_loops(init)[-1])
    sch.unroll(sch.get_loops(init)[-2])
    sch.unroll(sch.get_loops(init)[-3])
    update = sch.blockize(j_i)
    sch.tensorize(update, VNNI_DOT_16x4_INTRIN)
    loops = sch.get_loops(update)
    sch.unroll(loops[-1])  # j_m
    sch.unroll(loops[-2])  # i_i
    wb = sch.get_loops(c_local)
    wb_o, wb_i = sch.split(wb[-1], [None, 16])
    sch.vectorize(wb_i)
    sch.unroll(wb_o)
    sch.unroll(wb[-2])
    return sch


def vnni_peak_kernel(chains: int = VNNI_CHAINS, steps: int = 1 << 20, threads: int = 2):
    """``threads`` parallel copies of ``chains`` independent vpdpbusd accumulator chains, ``steps`` long,
    on one register-resident A (broadcast) and B: what the VNNI units can do at most. Every chain adds
    the same dot product, so ``C[t, c, i] = steps * sum_k A[t, k] * B[t, i, k]``."""

    @T.prim_func
    def peak(A: T.Buffer((threads, 4), "uint8"), B: T.Buffer((threads, 16, 4), "int8"),
             C: T.Buffer((threads, chains, 16), "int32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for t, s, c, i, k in T.grid(threads, steps, chains, 16, 4):
            with T.block("C"):
                vt, vs, vc, vi, vk = T.axis.remap("SRSSR", [t, s, c, i, k])
                with T.init():  # the local accumulators of cache_write start from zero, not from memory
                    C[vt, vc, vi] = 0
                C[vt, vc, vi] = C[vt, vc, vi] + T.Cast("int32", A[vt, vk]) * T.Cast("int32", B[vt, vi, vk])

    sch = tvm.tir.Schedule(peak)
    block = sch.get_block("C")
    t, s, c, i, k = sch.get_loops(block)
    c_local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(c_local, t)
    sch.parallel(t)
    sch.tensorize(i, VNNI_DOT_16x4_INTRIN)
    sch.unroll(c)
    ops = 2.0 * threads * steps * chains * 16 * 4
    return sch, ops, (threads, chains, steps)


def time_call(fn, repeat: int) -> float:
    """Best seconds of ``fn()`` over ``repeat`` runs after one warm-up: on a shared 2-core machine the
    minimum is the run the other processes disturbed least (the same rule for every row)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.min(times))


def torch_int_mm(a_u8: np.ndarray, b_s8: np.ndarray, repeat: int):
    """torch._int_mm on s8 x s8 (a shifted by -128, corrected with 128 * column sums of B), or None."""
    try:
        import torch
    except ImportError:
        return None, "torch is not installed"
    try:
        torch.set_num_threads(2)
        a = torch.from_numpy((a_u8.astype(np.int16) - 128).astype(np.int8))
        bt = torch.from_numpy(np.ascontiguousarray(b_s8.T))
        correction = torch.from_numpy(128 * b_s8.astype(np.int32).sum(axis=1))

        def run():
            return torch._int_mm(a, bt) + correction

        out = run().numpy()
        return (time_call(run, repeat), out), f"torch {torch.__version__}"
    except Exception as err:  # an unsupported op on this build: report it and go on
        return None, f"torch._int_mm failed: {err}"


def measure_vnni_peak(rng, repeat: int, threads: int = 2) -> float:
    """GOPS of our TensorIR peak kernel; also runs the C kernel, checks both results and prints both."""
    dev = tvm.cpu(0)
    peak_sch, peak_ops, (threads, chains, steps) = vnni_peak_kernel(threads=threads)
    peak_f = tvm.build(peak_sch.mod, target=TARGET)
    assert "vpdpbusd" in peak_f.get_source("asm")
    a = rng.integers(0, 256, (threads, 4), dtype=np.uint8)
    b = rng.integers(-128, 128, (threads, 16, 4), dtype=np.int8)
    pa, pb = tvm.nd.array(a, dev), tvm.nd.array(b, dev)
    pc = tvm.nd.array(np.zeros((threads, chains, 16), "int32"), dev)
    peak_f(pa, pb, pc)
    dot = np.einsum("tk,tik->ti", a.astype(np.int64), b.astype(np.int64))
    expected = (steps * dot).astype(np.uint32).view(np.int32)[:, None, :].repeat(chains, 1)  # int32 wraps
    np.testing.assert_array_equal(pc.numpy(), expected)
    peak_s = time_call(lambda: peak_f(pa, pb, pc), repeat)
    ours = peak_ops / peak_s / 1e9
    try:
        c_fn = vnni_peak_c(chains)
    except CKernelUnavailable as err:
        print(f"C reference of the VNNI peak skipped: {err}")
        return ours
    out = np.zeros((threads, chains, 16), np.int32)
    c_fn(ptr(a), ptr(b), ptr(out), steps, threads)
    np.testing.assert_array_equal(out, expected)
    c_s = time_call(lambda: c_fn(ptr(a), ptr(b), ptr(out), steps, threads), repeat)
    c_gops = peak_ops / c_s / 1e9
    print(f"VNNI peak, {threads} threads x {chains} chains: ours {ours:8.1f} GOPS, C (gcc -mavx512vnni) "
          f"{c_gops:8.1f} GOPS ({ours / c_gops:.0%} of C; the same result)")
    return max(ours, c_gops)  # "of peak" against the faster of the two


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--mr", type=int, default=4, help="rows of the register tile")
    parser.add_argument("--nb", type=int, default=4, help="zmm registers (16 columns each) per tile row")
    opts = parser.parse_args()
    if "avx512vnni" not in host_cpu()[1]:
        print(f"no AVX512-VNNI on this CPU ({host_cpu()[0]}): the VNNI GEMM and its peak kernel cannot run here; "
              "nothing measured")
        return
    M = N = K = opts.size
    ops = 2.0 * M * N * K
    print("OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset in this process (numpy picks its best kernel).")
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (M, K), dtype=np.uint8)
    b = rng.integers(-128, 128, (N, K), dtype=np.int8)
    b_packed = np.ascontiguousarray(b.reshape(N // 16, 16, K // 4, 4).transpose(0, 2, 1, 3))
    a32, bt32 = a.astype(np.int32), np.ascontiguousarray(b.astype(np.int32).T)
    expected = a32 @ bt32

    rows = []
    # numpy has no BLAS path for integers: its int32 matmul is a plain loop (seconds), timed once.
    start = time.perf_counter()
    a32 @ bt32
    np_s = time.perf_counter() - start
    rows.append(("numpy int32 matmul (operands pre-widened)", np_s))

    torch_result, torch_note = torch_int_mm(a, b, opts.repeat)
    if torch_result is not None:
        torch_s, torch_out = torch_result
        np.testing.assert_array_equal(torch_out, expected)
        rows.append((f"PyTorch _int_mm s8 ({torch_note})", torch_s))
    else:
        print(f"PyTorch baseline skipped: {torch_note}")

    dev = tvm.cpu(0)
    start = time.perf_counter()
    sch = vnni_schedule(M, N, K, opts.mr, opts.nb)
    f = tvm.build(sch.mod, target=TARGET)
    compile_s = time.perf_counter() - start
    A, B, C = tvm.nd.array(a, dev), tvm.nd.array(b_packed, dev), tvm.nd.array(np.zeros((M, N), "int32"), dev)
    f(A, B, C)
    np.testing.assert_array_equal(C.numpy(), expected)
    ours = time_call(lambda: f(A, B, C), opts.repeat)
    rows.append((f"tensorize VNNI, {opts.mr}x{16 * opts.nb} register tile, parallel", ours))

    peak_gops = measure_vnni_peak(rng, opts.repeat)

    print(f"u8 x s8 -> s32 GEMM {M}x{N}x{K}, B packed (N/16, K/4, 16, 4); {os.cpu_count()} cores")
    print(f"VNNI peak (the faster of ours and C): {peak_gops:8.1f} GOPS")
    print("times are the best of the repeats (the machine is shared); ratios use the same rule")
    print(f"{'variant':58s} {'ms':>8s} {'GOPS':>8s} {'vs numpy':>9s} {'of peak':>8s}")
    for name, seconds in rows:
        gops = ops / seconds / 1e9
        print(f"{name:58s} {seconds * 1e3:8.2f} {gops:8.1f} {np_s / seconds:9.2f} {gops / peak_gops:8.1%}")
    print(f"(our schedule compiled in {compile_s:.2f} s)")


if __name__ == "__main__":
    main()
