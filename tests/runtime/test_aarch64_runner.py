"""The AArch64 runner: link with a generated C driver, run under qemu-user, copy results back."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize.errors import TVMError
from tensorize.runtime.aarch64 import (INSTALL_HINT, Aarch64IllegalInstruction, Aarch64Runner, Aarch64RunError,
                                       Aarch64ToolError, run_aarch64, tools_available)
from tensorize.runtime.aarch64_driver import driver_source
from tensorize.script import tir as T

AARCH64 = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon"
_SKIP = pytest.mark.skipif(not tools_available(), reason=f"needs qemu and an aarch64 cross compiler: {INSTALL_HINT}")


def needs_qemu(test):
    return pytest.mark.qemu(_SKIP(test))


@T.prim_func
def add_scaled(a: T.handle, b: T.handle, c: T.handle, alpha: T.float32):
    T.func_attr({"tir.noalias": True})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i in range(n):
        with T.block("c"):
            vi = T.axis.remap("S", [i])
            C[vi] = A[vi] + alpha * B[vi]


@T.prim_func
def row_sum(a: T.handle, b: T.handle):
    T.func_attr({"tir.noalias": True})
    A = T.match_buffer(a, (64, 32), "int32")
    B = T.match_buffer(b, (64,), "int32")
    for i in T.parallel(64):
        for k in range(32):
            with T.block("b"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = 0
                B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def sdot_kernel(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (16,), "int8")
    B = T.match_buffer(b, (16,), "int8")
    C = T.match_buffer(c, (4,), "int32")
    with T.block("root"):
        C[T.ramp(0, 1, 4)] = T.call_llvm_pure_intrin("int32x4", "llvm.aarch64.neon.sdot.v4i32.v16i8",
                                                     C.vload([0], "int32x4"), A.vload([0], "int8x16"),
                                                     B.vload([0], "int8x16"))


@T.prim_func
def copy_rows(a: T.handle, b: T.handle):
    row_stride = T.int32()
    A = T.match_buffer(a, (4, 4), "int32", strides=[row_stride, 1])
    B = T.match_buffer(b, (4, 4), "int32")
    for i, j in T.grid(4, 4):
        with T.block("b"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj]


@pytest.fixture(scope="module")
def add_module():
    return tvm.build(add_scaled, target=AARCH64)


@needs_qemu
def test_scalar_and_symbolic_shape(add_module):
    a, b = np.arange(37, dtype="float32"), np.full(37, 2.0, "float32")
    c = np.zeros(37, "float32")
    run_aarch64(add_module, "main", a, b, c, 0.5)
    np.testing.assert_array_equal(c, a + 0.5 * b)


@needs_qemu
def test_tensor_arguments_and_reuse(add_module):
    runner = Aarch64Runner()
    try:
        for n in (3, 64):
            a = tvm.nd.array(np.random.rand(n).astype("float32"))
            b = tvm.nd.array(np.random.rand(n).astype("float32"))
            c = tvm.nd.array(np.zeros(n, "float32"))
            runner.run(add_module, "main", a, b, c, -1.5)
            # fused multiply-add rounds once: compare with a tolerance
            np.testing.assert_allclose(c.numpy(), a.numpy() - 1.5 * b.numpy(), rtol=1e-5, atol=1e-6)
        assert len(runner._executables) == 1  # one executable serves every call
    finally:
        runner.close()


@needs_qemu
def test_parallel_loop_links_openmp():
    mod = tvm.build(row_sum, target=AARCH64)
    a = np.random.randint(-1000, 1000, (64, 32)).astype("int32")
    b = np.zeros(64, "int32")
    with Aarch64Runner(num_threads=2) as runner:
        runner.run(mod, "main", a, b)
    np.testing.assert_array_equal(b, a.sum(axis=1))


@needs_qemu
def test_time_returns_positive_seconds(add_module):
    a = np.ones(16, "float32")
    with Aarch64Runner() as runner:
        times = runner.time(add_module, "main", a, a, np.zeros(16, "float32"), 1.0, number=5, repeat=2)
    assert len(times) == 2 and all(t > 0 for t in times)


@needs_qemu
def test_missing_dotprod_raises_illegal_instruction():
    mod = tvm.build(sdot_kernel, target="llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod")
    a = np.ones(16, "int8")
    c = np.zeros(4, "int32")
    run_aarch64(mod, "main", a, a, c, cpu="max")
    np.testing.assert_array_equal(c, [4, 4, 4, 4])
    with pytest.raises(Aarch64IllegalInstruction, match="SIGILL.*cortex-a72.*dotprod"):
        run_aarch64(mod, "main", a, a, c, cpu="cortex-a72")


@needs_qemu
def test_argument_errors_are_raised_before_running(add_module):
    a = np.zeros(8, "float32")
    with pytest.raises(TypeError, match="takes 4 arguments"):
        run_aarch64(add_module, "main", a, a, a)
    with pytest.raises(TypeError, match="expected dtype float32"):
        run_aarch64(add_module, "main", a, a, np.zeros(8, "int32"), 1.0)
    with pytest.raises(ValueError, match="expected shape"):
        run_aarch64(add_module, "main", a, a, np.zeros(9, "float32"), 1.0)
    with pytest.raises(ValueError, match="not contiguous"):
        wide = np.zeros((8, 2), "float32")
        Aarch64Runner().run(add_module, "main", a, a, wide[:, 0], 1.0)
    with pytest.raises(AttributeError, match="no function 'nope'"):
        run_aarch64(add_module, "nope", a, a, a, 1.0)


def test_host_module_is_rejected():
    mod = tvm.build(add_scaled, target="llvm")
    a = np.zeros(4, "float32")
    with pytest.raises(TVMError, match="not AArch64.*mtriple=aarch64"):
        run_aarch64(mod, "main", a, a, a, 1.0)


def test_missing_tools_name_the_packages(add_module):
    runner = Aarch64Runner(cc="no-such-aarch64-gcc", emulator="no-such-qemu")
    with pytest.raises(Aarch64ToolError) as info:
        runner.run(add_module, "main", *[np.zeros(4, "float32")] * 3, 1.0)
    message = str(info.value)
    assert "no-such-aarch64-gcc" in message and "no-such-qemu" in message
    assert "qemu-user-static gcc-aarch64-linux-gnu libc6-dev-arm64-cross" in message


def test_runner_rejects_bad_settings():
    with pytest.raises(ValueError, match="cpu"):
        Aarch64Runner(cpu="")
    with pytest.raises(ValueError, match="timeout"):
        Aarch64Runner(timeout=0)
    with pytest.raises(ValueError, match="num_threads"):
        Aarch64Runner(num_threads=0)


@needs_qemu
def test_timeout_is_an_error(tmp_path, add_module):
    # A stand-in "emulator" that hangs: the runner must kill it and say what to change.
    hang = tmp_path / "hang.sh"
    hang.write_text("#!/bin/sh\nsleep 30\n")
    hang.chmod(0o755)
    runner = Aarch64Runner(emulator=str(hang), timeout=0.5)
    with pytest.raises(Aarch64RunError, match="did not finish within 0.5 s"):
        runner.run(add_module, "main", *[np.zeros(4, "float32")] * 3, 1.0)


def test_driver_source_follows_the_signature(add_module):
    signature = add_module._signatures["main"]
    source = driver_source(signature, "k_main")
    assert "extern int32_t k_main(void*, void*, void*, float, int32_t);" in source
    assert "check(k_main(b0, b1, b2, s0, s1))" in source


@needs_qemu
def test_strided_views_must_be_copied_first():
    mod = tvm.build(copy_rows, target=AARCH64)
    wide = np.arange(32, dtype="int32").reshape(4, 8)
    out = np.zeros((4, 4), "int32")
    with pytest.raises(ValueError, match="strided view.*ascontiguousarray"):
        run_aarch64(mod, "main", wide[:, :4], out)
    run_aarch64(mod, "main", np.ascontiguousarray(wide[:, :4]), out)
    np.testing.assert_array_equal(out, wide[:, :4])
