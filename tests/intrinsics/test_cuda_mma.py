"""The inline-PTX Tensor Core intrinsics (``mma_*``): each ``impl``, run lane by lane through the numpy model
of ``ldmatrix``/``mma.sync`` (PTX ISA fragment layouts), computes what its ``desc`` says."""
from __future__ import annotations

import numpy as np
import pytest

import intrinsics.cuda_mma as mma
from tensorize import tir
from tensorize.codegen.python import run_prim_func
from tensorize.transform.gpu_emulation import run_warp_emulated

LOADS = [(mma.LDMATRIX_f16_A_INTRIN, "a", "float16"), (mma.LDMATRIX_f16_B_INTRIN, "b", "float16"),
         (mma.LDMATRIX_f16_B_TRANS_INTRIN, "b_trans", "float16"), (mma.LDMATRIX_i8_A_INTRIN, "a", "int8"),
         (mma.LDMATRIX_i8_B_INTRIN, "b", "int8"), (mma.LDMATRIX_i8_B_TRANS_INTRIN, "b_trans", "int8")]


def _random(shape, dtype, rng):
    if dtype == "int8":
        return rng.integers(-128, 128, shape).astype(dtype)
    return rng.uniform(-2, 2, shape).astype(dtype)


@pytest.mark.parametrize("name,operand,dtype", LOADS)
def test_ldmatrix_impl_matches_desc(name, operand, dtype):
    intrin, rng = tir.TensorIntrin.get(name), np.random.default_rng(0)
    rows, cols = mma.tile_shape(operand, dtype)
    shared = _random((rows, cols), dtype, rng)
    via_ptx, via_desc = np.zeros((32, rows * cols // 32), dtype), np.zeros((32, rows * cols // 32), dtype)
    model = run_warp_emulated(intrin.impl, via_ptx, shared)
    run_prim_func(intrin.desc, via_desc, shared)
    np.testing.assert_array_equal(via_ptx, via_desc)
    assert model.executed == (0 if (operand, dtype) == ("b", "int8") else 1)
    # the mapping is a bijection: every tile element is held by exactly one (lane, register)
    f = mma.layout(operand, dtype)
    assert len({f(i, j) for i in range(rows) for j in range(cols)}) == rows * cols


@pytest.mark.parametrize("name,in_dtype,out_dtype,b_trans", [
    (mma.MMA_f16f16f32_INTRIN, "float16", "float32", False), (mma.MMA_f16f16f32_TRANS_B_INTRIN, "float16", "float32", True),
    (mma.MMA_i8i8i32_INTRIN, "int8", "int32", False), (mma.MMA_i8i8i32_TRANS_B_INTRIN, "int8", "int32", True)])
def test_mma_impl_matches_desc_and_numpy(name, in_dtype, out_dtype, b_trans):
    intrin, rng = tir.TensorIntrin.get(name), np.random.default_rng(1)
    k = 32 if in_dtype == "int8" else 16
    a, b = _random((16, k), in_dtype, rng), _random((k, 16), in_dtype, rng)
    c = _random((16, 16), "int8", rng).astype(out_dtype)
    fa, fb, fc = mma.layout("a", in_dtype), mma.layout("b_trans" if b_trans else "b", in_dtype), mma.layout("c", out_dtype)
    wa, wb, wc = np.zeros((32, 16 * k // 32), in_dtype), np.zeros((32, 16 * k // 32), in_dtype), np.zeros((32, 8), out_dtype)
    for i in range(16):
        for kk in range(k):
            wa[fa(i, kk)] = a[i, kk]
            wb[fb(i, kk) if b_trans else fb(kk, i)] = b[kk, i]
        for j in range(16):
            wc[fc(i, j)] = c[i, j]
    via_desc = wc.copy()
    model = run_warp_emulated(intrin.impl, wa, wb, wc)
    run_prim_func(intrin.desc, wa, wb, via_desc)
    assert model.executed == 2
    np.testing.assert_allclose(wc, via_desc, rtol=1e-5)
    expect = a.astype("float64") @ b.astype("float64") + c
    got = np.array([[wc[fc(i, j)] for j in range(16)] for i in range(16)])
    np.testing.assert_allclose(got, expect, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_fill_and_store_impls_match_desc(dtype):
    rng = np.random.default_rng(2)
    fill = tir.TensorIntrin.get(mma.MMA_fill_16x16_f32_INTRIN if dtype == "float32" else mma.MMA_fill_16x16_i32_INTRIN)
    regs = _random((32, 8), "int8", rng).astype(dtype)
    run_prim_func(fill.impl, regs)
    assert not regs.any()
    store = tir.TensorIntrin.get(mma.MMA_store_16x16_f32_global_INTRIN if dtype == "float32"
                                 else mma.MMA_store_16x16_i32_global_INTRIN)
    regs = _random((32, 8), "int8", rng).astype(dtype)
    out_impl, out_desc = np.zeros((16, 16), dtype), np.zeros((16, 16), dtype)
    run_prim_func(store.impl, regs, out_impl)
    run_prim_func(store.desc, regs, out_desc)
    np.testing.assert_array_equal(out_impl, out_desc)
    assert len(set(out_impl.ravel().tolist())) > 1


def test_the_model_refuses_an_unknown_shape():
    from tensorize.codegen.python import Pointer
    from tensorize.transform.gpu_ptx_model import WarpModel

    model, regs = WarpModel(), np.zeros(32 * 8, "float32")
    with pytest.raises(Exception, match="m16n8k8"):
        for lane in range(32):
            p = Pointer(regs, 8 * lane)
            model.mma("m16n8k8", "row", "col", "fp16", "fp16", "fp32", p, p, p)
