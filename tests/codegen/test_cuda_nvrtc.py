"""Generated CUDA C compiles with NVRTC, the compiler the runtime uses (cupy's ``RawModule``), without a GPU:
NVRTC has no C++ standard library headers and must find the toolkit's ``cuda_fp16.h``/``mma.h``."""
import pytest

import intrinsics.cuda  # noqa: F401  (registers the Tensor Core intrinsics)
import tensorize as tvm
from tensorize.runtime.cuda_module import cuda_include_dir
from tests.codegen.gpu_schedules import gemm, wmma_gemm
from tests.codegen.mma_schedules import mma_gemm

nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc", reason="cupy (the cuda extra) is not installed")
pytestmark = pytest.mark.skipif(cuda_include_dir() is None, reason="no CUDA headers (cuda_fp16.h) found")


def _nvrtc_compile(source: str, arch: str = "compute_90") -> None:
    try:
        prog = nvrtc.createProgram(source, "kernel.cu", [], [])
    except Exception as err:  # libnvrtc itself missing
        pytest.skip(f"NVRTC is not loadable here: {err}")
    try:
        nvrtc.compileProgram(prog, ["-std=c++17", f"-I{cuda_include_dir()}", f"--gpu-architecture={arch}"])
    except nvrtc.NVRTCError:
        raise AssertionError(nvrtc.getProgramLog(prog)) from None


def _source(sch) -> str:
    return tvm.build(sch.mod, target="cuda -arch=sm_90").imported_modules[0].get_source()


@pytest.mark.parametrize("in_dtype,out_dtype,schedule", [
    ("float16", "float32", wmma_gemm), ("int8", "int32", wmma_gemm),
    ("float16", "float32", mma_gemm), ("int8", "int32", mma_gemm)])
def test_tensor_core_gemms_compile_with_nvrtc(in_dtype, out_dtype, schedule):
    sch = schedule(gemm(256, 256, 256, in_dtype, out_dtype), in_dtype, out_dtype, warps=(2, 2), warp_tiles=(2, 2),
                   k_tiles=1)
    source = _source(sch)
    assert "#include <cstdint>" not in source
    _nvrtc_compile(source)
