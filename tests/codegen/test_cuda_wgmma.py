"""Hopper's warpgroup MMA (``wgmma.mma_async``, sm_90a): the GEMM schedule of ``intrinsics.cuda_wgmma_schedule``
compiles with nvcc (the PTX carries ``wgmma.mma_async``, fences and waits) and with NVRTC for the exact
architecture; its numerics are checked on the CPU by running the tensorized program with the warpgroup model
of ``gpu_ptx_model`` (descriptors decoded as the PTX ISA defines them), lowered and software-pipelined; on an
sm_90 GPU it launches and matches numpy."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import intrinsics.cuda_wgmma as wg
import tensorize as tvm
from intrinsics.cuda_wgmma_schedule import gemm_nn, gemm_nt, gemm_operands, nt_gemm_operands, schedule_wgmma_gemm
from tensorize.runtime.cuda_module import gpu_available
from tensorize.transform.gpu_emulation import run_warp_emulated

from .test_cuda import needs_nvcc, nvcc_ptx

TARGET = "cuda -arch=sm_90a"


def _inputs(M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (M, K)).astype("float16"), rng.uniform(-1, 1, (N, K)).astype("float16")


def _reference(a, b):
    return a.astype("float64") @ b.astype("float64").T


@needs_nvcc
@pytest.mark.parametrize("n", wg.WGMMA_N)
def test_wgmma_gemm_compiles_to_wgmma(n, tmp_path):
    sch = schedule_wgmma_gemm(gemm_nt(256, 512, 256), n=n, stages=2)
    source = tvm.build(sch.mod, target=TARGET).imported_modules[0].get_source()
    assert "__launch_bounds__(256)" in source
    ptx = nvcc_ptx(source, "sm_90a", tmp_path)
    assert f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16" in ptx
    for needed in ("wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned",
                   "fence.proxy.async.shared::cta", "cp.async.cg.shared.global"):
        assert needed in ptx, needed


def test_swizzled_tiles_are_copied_whole_rows_into_aligned_shared_memory():
    sch = schedule_wgmma_gemm(gemm_nt(256, 512, 256), n=256, k_steps=4, stages=2)
    source = tvm.build(sch.mod, target=TARGET).imported_modules[0].get_source()
    assert "extern __shared__ __align__(1024) unsigned char dyn_shared[];" in source
    assert "(half*)(dyn_shared + 65536)" in source  # B after A's 64 KiB, on a 1024-byte boundary
    calls = source.count("tz_wgmma_desc(") - 1  # less the helper's definition
    assert calls >= 2 * 4 and source.count(" * 2, 1ull)") == calls  # every descriptor: 128-byte mode (1)
    copies = [line for line in source.splitlines() if "tz_cp_async16(" in line and "A_shared" in line]
    assert copies and all(" ^ " in line for line in copies)  # 16-byte copies to the permuted chunk
    assert "A_shared[" not in source  # no element-wise stores: every copy is one 16-byte cp.async
    # the accumulator leaves in 8-byte stores of register pairs (adjacent columns), none element by element
    assert source.count("= make_float2(C_warp_group[") == 128 // 2 and "\n          C[" not in source


def test_wgmma_needs_sm_90a():
    sch = schedule_wgmma_gemm(gemm_nt(128, 128, 64), n=128, stages=0)
    with pytest.raises(tvm.TVMError, match="sm_90a"):
        tvm.build(sch.mod, target="cuda -arch=sm_90")


def test_nvrtc_compiles_for_the_exact_architecture():
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    sch = schedule_wgmma_gemm(gemm_nt(128, 128, 128), n=128, stages=1)
    device = tvm.build(sch.mod, target=TARGET).imported_modules[0]
    try:
        cubin = device.compile_cubin()
    except OSError as err:  # NVRTC's library is absent on this machine
        pytest.skip(f"NVRTC is not loadable: {err}")
    assert cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("shape, warpgroups, n, k_steps, stages, swizzle", [
    ((256, 512, 256), 2, 256, 4, 2, True),
    ((128, 256, 512), 2, 128, 4, 3, True),
    ((128, 64, 256), 1, 64, 2, 1, True),     # 64-byte swizzle
    ((64, 128, 64), 1, 128, 1, 0, True),     # 32-byte swizzle
    ((200, 300, 100), 2, 128, 4, 2, True),   # padded to the block tile
    ((256, 512, 256), 2, 256, 4, 2, False),  # unswizzled core matrices
    ((128, 64, 256), 1, 64, 2, 1, False),
])
def test_wgmma_gemm_numerics_emulated(shape, warpgroups, n, k_steps, stages, swizzle):
    M, N, K = shape
    sch = schedule_wgmma_gemm(gemm_nt(M, N, K), warpgroups=warpgroups, n=n, k_steps=k_steps, stages=stages,
                              swizzle=swizzle)
    a, b = _inputs(M, N, K)
    for program in (sch.mod, tvm.lower(sch.mod)):  # as scheduled, and lowered with its software pipeline
        c = np.zeros((M, N), "float32")
        model = run_warp_emulated(program, a, b, c)
        assert model.executed > 0
        np.testing.assert_allclose(c, _reference(a, b), rtol=1e-4, atol=1e-4)


def test_every_thread_must_name_the_same_tiles():
    from tensorize.codegen.python import Pointer
    from tensorize.transform.gpu_ptx_model import WarpModel

    model, smem, regs = WarpModel(), np.zeros(4096, "float16"), np.zeros(128 * 32, "float32")
    for t in range(128):
        model.wgmma("m64n64k16", "fp16", "fp16", "fp32", Pointer(smem, 8 * (t == 5)), 64, 128,
                    Pointer(smem, 0), 64, 128, Pointer(regs, 32 * t))
    assert model.executed == 0 and len(model.pending) == 2  # two instructions, neither issued by all


def test_accumulator_layout_is_a_bijection():
    cells = {tuple(int(x) for x in wg.acc_layout(i, j)) for i in range(64) for j in range(256)}
    assert len(cells) == 64 * 256 and max(t for t, _ in cells) == 127 and max(r for _, r in cells) == 127


def test_nt_gemm_is_recognised():
    sch = tvm.tir.Schedule(gemm_nt(64, 64, 64))
    assert nt_gemm_operands(sch.get(sch.get_block("C"))) == (0, 1)
    from tests.codegen.gpu_schedules import gemm

    nn = tvm.tir.Schedule(gemm(64, 64, 64))   # B stored K x N: not K-major
    assert nt_gemm_operands(nn.get(nn.get_block("C"))) is None
    assert gemm_operands(nn.get(nn.get_block("C"))) == (0, 1, False)


@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to cupy")
def test_wgmma_gemm_runs_on_the_gpu():
    import cupy

    if int(cupy.cuda.Device().compute_capability) != 90:
        pytest.skip("wgmma needs an sm_90 GPU (H100/H200)")
    M, N, K = 512, 768, 1024
    a, b = _inputs(M, N, K)
    for workload, b_stored in ((gemm_nt, b), (gemm_nn, np.ascontiguousarray(b.T))):  # B as N x K, then K x N
        rt = tvm.build(schedule_wgmma_gemm(workload(M, N, K), n=256, stages=2).mod, target=TARGET)
        c = cupy.zeros((M, N), "float32")
        rt["main"](cupy.asarray(a), cupy.asarray(b_stored), c)
        np.testing.assert_allclose(c.get(), _reference(a, b), rtol=1e-3, atol=1e-3)


def test_pipelined_iteration_issues_the_wgmma_before_the_fetches():
    sch = schedule_wgmma_gemm(gemm_nt(128, 256, 512), n=256, stages=2)
    text = tvm.lower(sch.mod).script()
    steady = text[text.index("for k_0 in range(2, 8)"):]
    assert "pipeline_compute_lag" in text
    assert steady.index("T.ptx_wgmma(") < steady.index("A_shared")  # software_pipeline_order [1, 2, 0]


def test_operands_are_found_whatever_their_order():
    from tensorize import te

    M, N, K = 128, 128, 64
    A, B = te.placeholder((M, K), "float16", name="A"), te.placeholder((N, K), "float16", name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(B[j, k].astype("float32") * A[i, k].astype("float32"), axis=k),
                   name="C")
    sch = schedule_wgmma_gemm(te.create_prim_func([B, A, C]), n=128, stages=0)
    a, b = _inputs(M, N, K)
    c = np.zeros((M, N), "float32")
    run_warp_emulated(sch.mod, b, a, c)
    np.testing.assert_allclose(c, _reference(a, b), rtol=1e-4, atol=1e-4)


def test_other_computations_are_refused():
    from tensorize import te

    A = te.placeholder((128, 64), "float16", name="A")
    k = te.reduce_axis((0, 64), name="k")
    C = te.compute((128, 128), lambda i, j: te.sum(A[i, k].astype("float32") * A[j, k].astype("float32"), axis=k),
                   name="C")
    with pytest.raises(ValueError, match="not C"):  # one buffer read as both operands
        schedule_wgmma_gemm(te.create_prim_func([A, C]), n=128, stages=0)


def test_the_asynchronous_model_catches_a_tile_overwritten_in_flight():
    """The emulation runs wgmma when a wait reaches it: leaving two groups in flight where the pipeline has
    one spare version of the shared tiles lets a fetch overwrite a tile a pending wgmma still reads."""
    from tensorize.ir import expr as E
    from tensorize.ir import stmt as S
    from tensorize.ir.functor import ir_transform

    M, N, K = 128, 128, 512
    sch = schedule_wgmma_gemm(gemm_nt(M, N, K), n=128, stages=2)
    lowered = tvm.lower(sch.mod)
    a, b = _inputs(M, N, K)
    c = np.zeros((M, N), "float32")
    run_warp_emulated(lowered, a, b, c)
    np.testing.assert_allclose(c, _reference(a, b), rtol=1e-4, atol=1e-4)

    def more_lag(node):
        if isinstance(node, S.AttrStmt) and node.attr_key == "pipeline_compute_lag":
            return S.AttrStmt(node.node, node.attr_key, E.IntImm("int32", 2), node.body)
        return None

    func = lowered["main"]
    racy = func.with_body(ir_transform(func.body, None, more_lag, ["tir.AttrStmt"]))
    c = np.zeros((M, N), "float32")
    run_warp_emulated(racy, a, b, c)
    assert np.abs(c - _reference(a, b)).max() > 1e-2


@pytest.mark.parametrize("swizzle", [True, False])
def test_bf16_inputs_use_the_bf16_instruction(swizzle, tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    M, N, K = 128, 256, 256
    sch = schedule_wgmma_gemm(gemm_nt(M, N, K, in_dtype="bfloat16"), n=256, k_steps=4, stages=2, swizzle=swizzle)
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (M, K)).astype(ml_dtypes.bfloat16)
    b = rng.uniform(-1, 1, (N, K)).astype(ml_dtypes.bfloat16)
    c = np.zeros((M, N), "float32")
    run_warp_emulated(sch.mod, a.view(np.uint16), b.view(np.uint16), c)  # bf16 buffers hold 16-bit patterns
    np.testing.assert_allclose(c, _reference(a, b), rtol=1e-4, atol=1e-4)
    source = tvm.build(sch.mod, target=TARGET).imported_modules[0].get_source()
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in source
    if shutil.which("nvcc"):
        assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in nvcc_ptx(source, "sm_90a", tmp_path)


def test_mixed_input_dtypes_are_refused():
    from tensorize import te

    A = te.placeholder((64, 64), "float16", name="A")
    B = te.placeholder((64, 64), "bfloat16", name="B")
    k = te.reduce_axis((0, 64), name="k")
    C = te.compute((64, 64), lambda i, j: te.sum(A[i, k].astype("float32") * B[j, k].astype("float32"), axis=k),
                   name="C")
    with pytest.raises(ValueError, match="f16 or bf16"):
        schedule_wgmma_gemm(te.create_prim_func([A, B, C]), n=64, stages=0)


@pytest.mark.parametrize("shape, warpgroups, n, stages", [
    ((128, 256, 256), 2, 256, 2),
    ((128, 128, 128), 1, 128, 1),
    ((200, 300, 100), 2, 128, 2),   # padded
])
def test_b_stored_k_by_n_is_read_transposed(shape, warpgroups, n, stages, tmp_path):
    """An NN GEMM: B's shared tile is 64-column blocks of 128-byte K-rows, read with the transpose bit."""
    M, N, K = shape
    sch = schedule_wgmma_gemm(gemm_nn(M, N, K), warpgroups=warpgroups, n=n, k_steps=4, stages=stages)
    a, b = _inputs(M, N, K)
    c = np.zeros((M, N), "float32")
    run_warp_emulated(sch.mod, a, np.ascontiguousarray(b.T), c)
    np.testing.assert_allclose(c, _reference(a, b), rtol=1e-4, atol=1e-4)
    source = tvm.build(sch.mod, target=TARGET).imported_modules[0].get_source()
    assert "p, 1, 1, 0, 1;" in source and "p, 1, 1, 0, 0;" not in source
    if shutil.which("nvcc"):
        assert f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16" in nvcc_ptx(source, "sm_90a", tmp_path)


def test_b_stored_k_by_n_needs_the_swizzled_64_wide_tiles():
    with pytest.raises(ValueError, match="swizzle=True, k_steps=4"):
        schedule_wgmma_gemm(gemm_nn(128, 128, 128), n=128, k_steps=2, stages=0)
    with pytest.raises(ValueError, match="swizzle=True, k_steps=4"):
        schedule_wgmma_gemm(gemm_nn(128, 128, 128), n=128, stages=0, swizzle=False)


def test_the_model_reads_an_mn_major_tile_back():
    from tensorize.codegen.python import Pointer
    from tensorize.transform.gpu_ptx_model import _swizzled_tile_mn
    from tensorize.transform.swizzle_shared import swizzled_offset

    k_rows, n = 64, 256  # blocks of 64 columns, each 64 K-rows of 128 bytes
    logical = np.arange(k_rows * n, dtype="float16").reshape(k_rows, n)
    blocked = logical.reshape(k_rows, n // 64, 64).transpose(1, 0, 2).reshape(-1)
    physical = np.zeros_like(blocked)
    for f in range(blocked.size):
        physical[swizzled_offset(f, 2, 128)] = blocked[f]
    for step in range(4):
        tile = _swizzled_tile_mn(Pointer(physical, 16 * 64 * step), n, k_rows * 64, 8 * 64, 128)
        np.testing.assert_array_equal(tile, logical[16 * step:16 * step + 16, :].T)


@pytest.mark.parametrize("workload, shape", [(gemm_nt, (128, 256, 256)), (gemm_nn, (128, 256, 128)),
                                             (gemm_nt, (200, 300, 100))])
def test_f16_output_is_rounded_in_the_store(workload, shape):
    """f16 written, f32 accumulated (cuBLAS's f16 GEMM): the cast is fused into the accumulator store, which
    writes half2 pairs; a padded shape rounds in its un-padding copy."""
    M, N, K = shape
    sch = schedule_wgmma_gemm(workload(M, N, K, out_dtype="float16", acc_dtype="float32"), n=256 if N % 256 == 0
                              else 128, stages=1)
    a, b = _inputs(M, N, K)
    c = np.zeros((M, N), "float16")
    run_warp_emulated(sch.mod, a, b if workload is gemm_nt else np.ascontiguousarray(b.T), c)
    np.testing.assert_allclose(c.astype("float64"), _reference(a, b), rtol=5e-3, atol=5e-3)
    source = tvm.build(sch.mod, target=TARGET).imported_modules[0].get_source()
    kernels = source.count("__global__")
    if M % 128 == 0 and N % 256 == 0 and K % 64 == 0:
        assert kernels == 1 and source.count("= __floats2half2_rn(C_warp_group[") == 64
    else:
        assert kernels == 4  # two padding copies, the GEMM, the rounding un-padding copy


def test_bf16_output_stores_bfloat162_pairs(tmp_path):
    sch = schedule_wgmma_gemm(gemm_nt(128, 256, 128, in_dtype="bfloat16", out_dtype="bfloat16",
                                      acc_dtype="float32"), n=256, stages=1)
    source = tvm.build(sch.mod, target=TARGET).imported_modules[0].get_source()
    assert source.count("= __floats2bfloat162_rn(C_warp_group[") == 64
    if shutil.which("nvcc"):
        assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in nvcc_ptx(source, "sm_90a", tmp_path)


@pytest.mark.parametrize("workload, shape, out_dtype", [
    (gemm_nt, (2, 128, 256, 128), "float32"),
    (gemm_nn, (3, 128, 128, 128), "float32"),
    (gemm_nt, (2, 100, 200, 72), "float16"),   # padded, rounded in the un-padding copy
])
def test_batched_gemms_take_a_grid_plane_per_batch(workload, shape, out_dtype):
    batch, M, N, K = shape
    sch = schedule_wgmma_gemm(workload(M, N, K, batch=batch, out_dtype=out_dtype, acc_dtype="float32"),
                              warpgroups=2,
                              n=256 if N % 256 == 0 else 128, stages=1)
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (batch, M, K)).astype("float16")
    b = rng.uniform(-1, 1, (batch, N, K)).astype("float16")
    c = np.zeros((batch, M, N), out_dtype)
    run_warp_emulated(sch.mod, a, b if workload is gemm_nt else np.ascontiguousarray(b.transpose(0, 2, 1)), c)
    reference = np.einsum("bik,bjk->bij", a.astype("float64"), b.astype("float64"))
    tol = 5e-3 if out_dtype == "float16" else 1e-4
    np.testing.assert_allclose(c.astype("float64"), reference, rtol=tol, atol=tol)
    assert "blockIdx.z" in tvm.build(sch.mod, target=TARGET).imported_modules[0].get_source()
