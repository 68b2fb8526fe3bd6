"""The matmul hand schedule (benchmarks/matmul_cpu.py ``packed_kernel``) compiles to the code a
GEMM micro-kernel should be: accumulators in zmm registers, broadcast-FMA per k, no stack traffic,
no heap or stack buffers left for the register tile, a contiguous vector pack of B."""
import re

import numpy as np
import pytest

import tensorize as tvm
from tests.perf_smoke.asm_shapes import AVX512_TARGET, build, count, hottest_block, llvm_functions, load_benchmark

SIZE = 256
MR, NR = 8, 32


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("matmul_cpu")


@pytest.fixture(scope="module")
def avx512_kernel(bench):
    sch = bench.packed_kernel(bench.matmul_module(SIZE, SIZE, SIZE), mr=MR, nr=NR, kc=128)
    return build(sch, AVX512_TARGET)


def test_packed_kernel_matches_numpy(bench):
    sch = bench.packed_kernel(bench.matmul_module(SIZE, SIZE, SIZE), mr=MR, nr=NR, kc=128)
    rt_mod = build(sch, "llvm -mcpu=native")
    rng = np.random.default_rng(1)
    a, b = rng.random((SIZE, SIZE), dtype=np.float32), rng.random((SIZE, SIZE), dtype=np.float32)
    c = tvm.nd.array(np.zeros((SIZE, SIZE), dtype="float32"))
    rt_mod(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)


def test_micro_kernel_is_register_tiled_zmm_fma(avx512_kernel):
    inner = hottest_block(avx512_kernel.get_source("asm"))
    # One k step of an 8x32 tile: 8 rows x 2 zmm = 16 FMAs on zmm registers (more if LLVM unrolled k).
    fmas = count(inner, r"^vfmadd\d+ps\s.*%zmm")
    assert fmas >= MR * NR // 16 and fmas % (MR * NR // 16) == 0, inner
    # The B row comes in as aligned full-width loads, A as broadcasts folded into loads.
    assert count(inner, r"^vbroadcastss\s") + count(inner, r"\{1to16\}") >= MR, inner
    assert count(inner, r"^vmovaps\s+-?\d*\(%\w+\), %zmm") + count(inner, r"^vfmadd\d+ps\s+-?\d*\(") >= NR // 16, inner
    # Address arithmetic is strength-reduced: only the loop counter and the B pointer move.
    overhead = [i for i in inner if not re.match(r"^(vfmadd\d+ps|vbroadcastss|vmovaps|vmovups)\s", i)]
    assert len(overhead) <= 5, overhead
    # Accumulators never leave registers: no stack access, no stores in the k loop.
    assert not [i for i in inner if "%rsp" in i or "%rbp" in i], inner
    assert not [i for i in inner if re.match(r"^vmov\w+\s+%zmm\d+, ", i)], inner


def test_register_tile_leaves_no_allocas_or_heap_buffers(avx512_kernel):
    functions = llvm_functions(avx512_kernel.get_source("ll"))
    kernels = {name: body for name, body in functions.items() if "_parallel_" in name}
    assert kernels, list(functions)
    for name, body in kernels.items():
        assert "alloca" not in body, f"{name} keeps a stack buffer:\n{body}"
        assert "aligned_alloc" not in body, name
        assert "masked.scatter" not in body and "masked.gather" not in body, name
    assert any(re.search(r"phi <(16|32) x float>", body) for body in kernels.values())


def test_entry_point_params_are_noalias_and_aligned(avx512_kernel):
    entry = llvm_functions(avx512_kernel.get_source("ll"))["main"]
    header = entry.splitlines()[0]
    assert header.count("noalias") == 3 and header.count("align 64") == 3, header




def test_parallel_body_keeps_noalias_so_vectorizer_needs_no_alias_checks(bench):
    """Seed 003's tiled + parallel schedule: the outlined loop body reaches the buffers through the
    OpenMP closure, yet LLVM must still know they do not overlap (no run-time overlap checks)."""
    sch = bench.seed_tiled(bench.matmul_module(SIZE, SIZE, SIZE), parallel=True)
    rt_mod = build(sch, AVX512_TARGET)
    ll = rt_mod.get_source("ll")
    assert "GOMP_parallel" in ll
    assert "found.conflict" not in ll and "memcheck" not in ll
    assert re.search(r"fmul[^\n]*<\d+ x float>", ll), "the inner loop was not vectorized"
