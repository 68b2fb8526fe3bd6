"""Inline-PTX warp instructions (``T.ptx_mma``, ``T.ptx_ldmatrix``) in generated CUDA compile to ``mma.sync``."""
from __future__ import annotations

import pytest

import tensorize as tvm
from tensorize.script import tir as T

from .test_cuda import needs_nvcc, nvcc_ptx


def mma_kernel(shape, in_dtype, ptx_in, out_dtype, ptx_out, a_regs, k):
    @T.prim_func
    def kernel(A: T.Buffer((16, k), in_dtype), B: T.Buffer((8, k), in_dtype), C: T.Buffer((16, 8), out_dtype)):
        T.func_attr({"tir.noalias": True})
        A_shared = T.alloc_buffer((16 * k,), in_dtype, scope="shared")
        A_local = T.alloc_buffer((a_regs,), in_dtype, scope="local")
        B_local = T.alloc_buffer((a_regs // 2,), in_dtype, scope="local")
        C_local = T.alloc_buffer((4,), out_dtype, scope="local")
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("warp"):
                vtx = T.axis.spatial(32, tx)
                for i in range(k // 2):
                    A_shared[vtx * (k // 2) + i] = A[vtx // 2, vtx % 2 * (k // 2) + i]
                T.evaluate(T.ptx_ldmatrix(in_dtype, False, 4, ".b16", A_local.data, 0, A_shared.data, vtx * 8))
                for i in range(a_regs // 2):
                    B_local[i] = B[vtx // 4, vtx % 4 * (a_regs // 2) + i]
                for i in range(4):
                    C_local[i] = T.Cast(out_dtype, 0)
                T.evaluate(T.ptx_mma(out_dtype, shape, "row", "col", ptx_in, ptx_in, ptx_out, A_local.data, 0,
                                     B_local.data, 0, C_local.data, 0, False))
                for i in range(4):
                    C[vtx // 4 + i // 2 * 8, vtx % 4 * 2 + i % 2] = C_local[i]

    return kernel


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("case", [("m16n8k16", "float16", "fp16", "float32", "fp32", 8, 16),
                                  ("m16n8k32", "int8", "int8", "int32", "int32", 16, 32)])
def test_ptx_mma_and_ldmatrix_compile(arch, case, tmp_path):
    source = tvm.build(mma_kernel(*case), target=f"cuda -arch={arch}").imported_modules[0].get_source()
    assert "mma.sync.aligned." + case[0] in source and "ldmatrix.sync.aligned" in source
    # the shared tile is one per block (relaxed over the threadIdx loop it is allocated in: all 16 rows),
    # filled before the ldmatrix
    shared = f"__shared__ alignas(128) {'half' if case[1] == 'float16' else 'signed char'} A_shared[{16 * case[6]}];"
    assert shared in source
    assert source.index("__syncthreads();") < source.index("ldmatrix")
    ptx = nvcc_ptx(source, arch, tmp_path)
    assert "mma.sync.aligned." + case[0] in ptx and "ldmatrix.sync.aligned" in ptx
