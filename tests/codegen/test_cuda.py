"""CUDA: source generation compiled with nvcc (sm_80, sm_90), WMMA Tensor Core GEMMs, and their numerics
through the CPU emulation of the same schedules."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import tensorize as tvm
from tensorize import te, tir
from tensorize.runtime.cuda_module import gpu_available
from tensorize.transform.gpu_emulation import emulate_gpu

from .gpu_schedules import bind_elementwise, conv2d_nhwc, gemm, simt_conv2d, wmma_gemm

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")
needs_gpu = pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to cupy")


def nvcc_ptx(source: str, arch: str, tmp_path) -> str:
    cu, ptx = tmp_path / f"k_{arch}.cu", tmp_path / f"k_{arch}.ptx"
    cu.write_text(source)
    done = subprocess.run(["nvcc", f"-arch={arch}", "--ptx", "-Werror", "all-warnings", "-o", str(ptx), str(cu)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
    return ptx.read_text()


def run_emulated(sch, arrays):
    rt = tvm.build(emulate_gpu(sch.mod), target="llvm")
    nd = [tvm.nd.array(a) for a in arrays]
    rt["main"](*nd)
    return nd[-1].numpy()


def simt_add(n=1000):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    bind_elementwise(sch, sch.get_block("B"))
    return sch


def test_cuda_target_and_source_shape():
    target = tvm.target.Target("cuda -arch=sm_86")
    assert target.kind.name == "cuda" and target.arch == "sm_86"
    rt = tvm.build(simt_add().mod, target="cuda -arch=sm_80")
    source = rt.imported_modules[0].get_source()
    assert 'extern "C" __global__ void __launch_bounds__(128) main_kernel(' in source
    assert "if (" in source  # 1000 is not a multiple of 128: the tail is guarded
    assert [(k.grid, k.block) for k in rt.launches("main")] == [((8, 1, 1), (128, 1, 1))]


def test_unbound_program_is_refused_with_the_fix():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(tvm.TVMError, match="blockIdx"):
        tvm.build(te.create_prim_func([A, B]), target="cuda -arch=sm_80")


@pytest.mark.skipif(gpu_available(), reason="checks the message given without a GPU")
def test_launch_without_gpu_says_what_is_missing():
    rt = tvm.build(simt_add().mod, target="cuda -arch=sm_80")
    with pytest.raises(tvm.TVMError, match="cupy"):
        rt["main"](np.zeros(1000, "float32"), np.zeros(1000, "float32"))


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_simt_kernel_compiles(arch, tmp_path):
    rt = tvm.build(simt_add().mod, target=f"cuda -arch={arch}")
    assert "ld.global" in nvcc_ptx(rt.imported_modules[0].get_source(), arch, tmp_path)


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtypes", [("float16", "float32"), ("int8", "int32")])
def test_wmma_gemm_compiles_to_tensor_core_ptx(arch, dtypes, tmp_path):
    sch = wmma_gemm(gemm(64, 64, 64, *dtypes), *dtypes)
    source = tvm.build(sch.mod, target=f"cuda -arch={arch}").imported_modules[0].get_source()
    assert "nvcuda::wmma::mma_sync" in source and "__syncthreads();" in source
    assert "wmma.mma.sync" in nvcc_ptx(source, arch, tmp_path)


@pytest.mark.parametrize("shape", [(64, 64, 64), (40, 56, 24)])
def test_emulated_wmma_gemm_f16_f32(shape):
    M, N, K = shape
    sch = wmma_gemm(gemm(M, N, K), tensorize=False)
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (M, K)).astype("float16")
    b = rng.uniform(-1, 1, (K, N)).astype("float16")
    c = run_emulated(sch, [a, b, np.zeros((M, N), "float32")])
    np.testing.assert_allclose(c, a.astype("float32") @ b.astype("float32"), rtol=1e-4, atol=1e-4)


def test_emulated_wmma_gemm_with_warp_tiles():
    M, N, K = 64, 64, 64
    sch = wmma_gemm(gemm(M, N, K), warps=(2, 1), warp_tiles=(1, 2), k_tiles=2, tensorize=False)
    rng = np.random.default_rng(2)
    a = rng.uniform(-1, 1, (M, K)).astype("float16")
    b = rng.uniform(-1, 1, (K, N)).astype("float16")
    c = run_emulated(sch, [a, b, np.zeros((M, N), "float32")])
    np.testing.assert_allclose(c, a.astype("float32") @ b.astype("float32"), rtol=1e-4, atol=1e-4)


def test_emulated_wmma_gemm_int8():
    M, N, K = 48, 32, 80
    sch = wmma_gemm(gemm(M, N, K, "int8", "int32"), "int8", "int32", tensorize=False)
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, (M, K)).astype("int8")
    b = rng.integers(-128, 128, (K, N)).astype("int8")
    c = run_emulated(sch, [a, b, np.zeros((M, N), "int32")])
    np.testing.assert_array_equal(c, a.astype("int32") @ b.astype("int32"))


def conv_reference(x, w):
    kh, kw = w.shape[:2]
    oh, ow = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]), "float32")
    for r in range(kh):
        for s in range(kw):
            out += np.einsum("nhwc,cf->nhwf", x[:, r:r + oh, s:s + ow, :], w[r, s])
    return out


@pytest.mark.parametrize("shape", [(1, 10, 11, 6, 12, 3, 3), (2, 8, 8, 4, 16, 3, 3)])
def test_emulated_conv2d_nhwc(shape):
    n, h, w, ci, co, kh, kw = shape
    sch = simt_conv2d(conv2d_nhwc(*shape))
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (n, h, w, ci)).astype("float32")
    wt = rng.uniform(-1, 1, (kh, kw, ci, co)).astype("float32")
    y = run_emulated(sch, [x, wt, np.zeros((n, h - kh + 1, w - kw + 1, co), "float32")])
    np.testing.assert_allclose(y, conv_reference(x, wt), rtol=1e-4, atol=1e-4)


@needs_nvcc
def test_conv2d_nhwc_kernel_compiles(tmp_path):
    sch = simt_conv2d(conv2d_nhwc(1, 10, 11, 6, 12, 3, 3))
    source = tvm.build(sch.mod, target="cuda -arch=sm_80").imported_modules[0].get_source()
    assert "__shared__" in source and "__syncthreads();" in source
    assert "ld.shared" in nvcc_ptx(source, "sm_80", tmp_path)


@needs_gpu
def test_wmma_gemm_on_gpu():
    import cupy

    sch = wmma_gemm(gemm(128, 128, 128))
    rt = tvm.build(sch.mod, target="cuda -arch=sm_80")
    a = cupy.random.uniform(-1, 1, (128, 128)).astype("float16")
    b = cupy.random.uniform(-1, 1, (128, 128)).astype("float16")
    c = cupy.zeros((128, 128), "float32")
    rt["main"](a, b, c)
    np.testing.assert_allclose(cupy.asnumpy(c), cupy.asnumpy(a.astype("float32") @ b.astype("float32")), rtol=1e-3,
                               atol=1e-3)


@pytest.mark.skipif(gpu_available(), reason="checks the message given without a GPU")
def test_cuda_tensor_without_gpu_says_what_is_missing():
    with pytest.raises(tvm.TVMError, match="cupy"):
        tvm.nd.array(np.zeros(4, "float32"), tvm.cuda(0))
