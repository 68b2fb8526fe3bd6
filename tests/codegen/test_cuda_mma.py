"""Tensor Core GEMMs through inline PTX (ldmatrix + mma.sync): the CUDA compiles with nvcc (per-lane register
arrays, no local memory), the tensorized program runs lane by lane through the PTX model, and the
descriptions run on the CPU through LLVM."""
from __future__ import annotations

import numpy as np
import pytest

import tensorize as tvm
from tensorize.script import tir as T
from tensorize.transform.gpu_emulation import run_warp_emulated

from .gpu_schedules import gemm
from .mma_schedules import mma_gemm
from .test_cuda import needs_nvcc, nvcc_ptx, run_emulated

CASES = [("float16", "float32"), ("int8", "int32")]


def _inputs(M, N, K, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "int8":
        return rng.integers(-128, 128, (M, K)).astype(dtype), rng.integers(-128, 128, (K, N)).astype(dtype)
    return rng.uniform(-1, 1, (M, K)).astype(dtype), rng.uniform(-1, 1, (K, N)).astype(dtype)


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtypes", CASES)
def test_mma_gemm_compiles_to_mma_sync(arch, dtypes, tmp_path):
    sch = mma_gemm(gemm(128, 64, 64, *dtypes), *dtypes, warps=(2, 2), warp_tiles=(2, 1))
    source = tvm.build(sch.mod, target=f"cuda -arch={arch}").imported_modules[0].get_source()
    # one register array per lane: a 16x16 f32 tile is 8 registers, 2x1 tiles per warp
    assert ("float C_warp[16];" if dtypes[0] == "float16" else "int C_warp[16];") in source
    ptx = nvcc_ptx(source, arch, tmp_path)
    assert "mma.sync.aligned" in ptx and "local" not in ptx
    if dtypes[0] == "float16":
        assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx
    else:
        assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx


@pytest.mark.parametrize("dtypes", CASES)
@pytest.mark.parametrize("shape", [(64, 64, 64), (40, 24, 72)])
def test_tensorized_mma_gemm_runs_lane_by_lane(dtypes, shape):
    M, N, K = shape
    a, b = _inputs(M, N, K, dtypes[0])
    c = np.zeros((M, N), dtypes[1])
    model = run_warp_emulated(mma_gemm(gemm(M, N, K, *dtypes), *dtypes), a, b, c)
    assert model.executed > 0
    np.testing.assert_allclose(c, a.astype(dtypes[1]) @ b.astype(dtypes[1]), rtol=1e-4, atol=1e-4)


def test_mma_gemm_descriptions_on_the_cpu():
    M, N, K = 64, 32, 48
    a, b = _inputs(M, N, K, "float16", seed=3)
    sch = mma_gemm(gemm(M, N, K), warps=(2, 1), warp_tiles=(1, 2), tensorize=False)
    c = run_emulated(sch, [a, b, np.zeros((M, N), "float32")])
    np.testing.assert_allclose(c, a.astype("float32") @ b.astype("float32"), rtol=1e-4, atol=1e-4)


def _warp_copy(lanes):
    @T.prim_func
    def f(A: T.Buffer((lanes * 2,), "float32"), B: T.Buffer((lanes * 2,), "float32")):
        W = T.alloc_buffer((lanes * 2,), scope="warp")
        for bx in T.thread_binding(1, thread="blockIdx.x"):
            for tx in T.thread_binding(lanes, thread="threadIdx.x"):
                for r in range(2):
                    with T.block("load"):
                        v = T.axis.spatial(lanes * 2, tx * 2 + r)
                        W[v] = A[v]
                for r in range(2):
                    with T.block("store"):
                        v = T.axis.spatial(lanes * 2, tx * 2 + r)
                        B[v] = W[v] + T.float32(1)

    return f


def test_warp_buffer_is_one_register_array_per_lane():
    source = tvm.build(_warp_copy(32), target="cuda -arch=sm_80").imported_modules[0].get_source()
    assert "float W[2];" in source and "W[r] = A[" in source  # compacted per lane already


def test_warp_buffers_need_32_lanes_on_threadidx_x():
    from tensorize.codegen.cuda.warp_memory import WarpMemoryLowering
    from tensorize.ir import expr as E
    from tensorize.ir import stmt as S
    from tensorize.ir.buffer import decl_buffer

    W = decl_buffer((128,), "float32", "W", scope="warp")
    tx = E.Var("tx", "int32")
    store = S.BufferStore(W, E.FloatImm("float32", 0.0), [tx * 2])
    loop = S.For(tx, E.IntImm("int32", 0), E.IntImm("int32", 64), S.ForKind.THREAD_BINDING, store,
                 tvm.tir.IterVar(None, tx, 1, "threadIdx.x"))
    body = S.Allocate(W.data, "float32", [E.IntImm("int32", 128)], E.IntImm("bool", 1), loop)
    with pytest.raises(tvm.TVMError, match="32 lanes"):
        WarpMemoryLowering({W.data: "warp"}, 64).lower(body)
    lowered = WarpMemoryLowering({W.data: "warp"}, 32).lower(body)
    assert int(lowered.extents[0].value) == 4


def _big_shared(kb):
    n = kb * 1024 // 4

    @T.prim_func
    def f(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32")):
        S = T.alloc_buffer((n,), scope="shared")
        for bx in T.thread_binding(1, thread="blockIdx.x"):
            for i in range(n // 256):
                for tx in T.thread_binding(256, thread="threadIdx.x"):
                    with T.block("load"):
                        v = T.axis.spatial(n, i * 256 + tx)
                        S[v] = A[v]
            for i in range(n // 256):
                for tx in T.thread_binding(256, thread="threadIdx.x"):
                    with T.block("store"):
                        v = T.axis.spatial(n, i * 256 + tx)
                        B[v] = S[n - 1 - v]

    return f


@needs_nvcc
def test_shared_memory_above_48kb_is_dynamic(tmp_path):
    rt = tvm.build(_big_shared(96), target="cuda -arch=sm_90")
    source = rt.imported_modules[0].get_source()
    assert "extern __shared__ __align__(128) unsigned char dyn_shared[];" in source
    assert "float* S = (float*)(dyn_shared + 0);" in source
    assert [k.shared_bytes for k in rt.launches("main")] == [96 * 1024]
    nvcc_ptx(source, "sm_90", tmp_path)
    small = tvm.build(_big_shared(16), target="cuda -arch=sm_80")
    assert "__shared__ alignas(128) float S[4096];" in small.imported_modules[0].get_source()
    assert [k.shared_bytes for k in small.launches("main")] == [0]


@pytest.mark.parametrize("in_dtype,out_dtype", CASES)
def test_shared_tiles_hold_one_reduction_step_of_the_block_tile(in_dtype, out_dtype):
    """The fetches sit at the reduction loop under the warp loops (threadIdx.y/z): the shared tiles are
    relaxed over the warps (one tile per thread block) but not over the reduction, as in TVM. Before, they
    held the whole K extent (512 KiB at 4096^3: the launch failed)."""
    warps, tiles, k_tiles = (2, 2), (2, 2), 2
    sch = mma_gemm(gemm(4096, 4096, 4096, in_dtype, out_dtype), in_dtype, out_dtype, warps=warps, warp_tiles=tiles,
                   k_tiles=k_tiles)
    rt = tvm.build(sch.mod, target="cuda -arch=sm_90")
    source = rt.imported_modules[0].get_source()
    kt = (32 if in_dtype == "int8" else 16) * k_tiles
    c_type = "half" if in_dtype == "float16" else "signed char"
    rows = 16 * warps[0] * tiles[0]
    assert f"__shared__ alignas(128) {c_type} A_shared[{rows * kt}];" in source
    assert f"__shared__ alignas(128) {c_type} B_shared[{kt * 16 * warps[1] * tiles[1]}];" in source
    assert [k.shared_bytes for k in rt.launches("main")] == [0]  # static: well under 48 KB
