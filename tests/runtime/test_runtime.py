"""Runtime: tensors, devices, targets, argument checking of compiled functions, time_evaluator."""

import numpy as np
import pytest

import tensorize as tvm
from tensorize.ir import stmt as S
from tensorize.ir.buffer import decl_buffer
from tensorize.ir.expr import SizeVar, Var, cast
from tensorize.target import Target

from tests.codegen.codegen_kernels import build, func, loop  # noqa: E402


def test_array_print_and_repr_like_tvm():
    a = tvm.nd.array(np.arange(8).astype("float32"))
    assert str(a) == "[0. 1. 2. 3. 4. 5. 6. 7.]"
    assert repr(a) == "<tvm.runtime.Tensor shape=(8,), cpu:0>\narray([0., 1., 2., 3., 4., 5., 6., 7.], dtype=float32)"
    t = tvm.runtime.tensor(np.ones(3, dtype="int8"), tvm.cpu(0))
    assert t.dtype == "int8" and t.shape == (3,) and t.device == tvm.cpu(0)


def test_new_storage_is_aligned_and_copies():
    src = np.arange(10, dtype="float64")
    a = tvm.nd.array(src)
    assert a.data_ptr % 64 == 0
    src[0] = 99
    assert a.numpy()[0] == 0  # array() copies like TVM
    e = tvm.nd.empty((3, 5), "int16")
    assert e.shape == (3, 5) and e.dtype == "int16" and e.data_ptr % 64 == 0
    b = tvm.nd.empty((4,), "bfloat16")
    assert b.dtype == "bfloat16" and b.numpy().dtype == np.uint16
    e.copyfrom(np.ones((3, 5)))
    assert e.numpy().sum() == 15
    with pytest.raises(ValueError, match="shape"):
        e.copyfrom(np.ones((5, 3)))
    wrapped = tvm.nd.from_numpy(src)
    src[1] = 7
    assert wrapped.numpy()[1] == 7  # Tensor(...) wraps without copying


def test_devices():
    assert tvm.cpu(0).device_type == 1 and tvm.cpu(0).exist
    assert tvm.device("llvm", 0) == tvm.cpu(0) == tvm.device("cpu")
    assert tvm.device("cuda", 0).device_type == 2 and str(tvm.cuda(0)) == "cuda:0"
    assert tvm.device("llvm -mcpu=native") == tvm.cpu()
    tvm.cpu().sync()
    with pytest.raises(ValueError, match="unknown device"):
        tvm.device("tpu")


def test_target_parsing_and_features():
    t = Target("llvm -mcpu=znver4 -mattr=+avx512f,+avx512vnni -num-cores=4")
    assert t.kind.name == "llvm" and t.attrs["mcpu"] == "znver4" and t.attrs["mattr"] == ["+avx512f", "+avx512vnni"]
    assert t.attrs["num-cores"] == 4 and t.has_feature("avx512vnni") and not t.has_feature("sve")
    assert str(t) == "llvm -mcpu=znver4 -mattr=+avx512f,+avx512vnni -num-cores=4"
    assert Target(str(t)) == t and Target(t.export()) == t
    native = Target("llvm -mcpu=native")
    assert native.mcpu != "native" and native.features and native.is_host
    arm = Target("llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod,+i8mm,+sve")
    assert arm.arch == "aarch64" and not arm.is_host and arm.has_feature("i8mm")
    cuda = Target("cuda -arch=sm_80")
    assert cuda.kind.name == "cuda" and cuda.arch == "sm_80" and cuda.host.kind.name == "llvm"
    assert Target({"kind": "llvm", "mcpu": "native"}).mcpu == native.mcpu
    with Target("llvm") as outer:
        assert Target.current() is outer
        with Target("cuda") as inner:
            assert Target.current() is inner
        assert Target.current() is outer
    assert Target.current() is None
    with pytest.raises(ValueError, match="unknown target kind"):
        Target("llvmx")
    with pytest.raises(ValueError, match="integer"):
        Target("llvm -num-cores=many")


def _add_one(shape=(128,), dtype="float32"):
    A = decl_buffer(shape, dtype, name="A")
    B = decl_buffer(shape, dtype, name="B")
    n = shape[0]
    return build(func([A, B], loop(n, lambda i: S.BufferStore(B, A[i] + cast(dtype, 1), [i]))))


def test_module_call_index_and_entry():
    mod = _add_one()
    a = tvm.nd.array(np.arange(128, dtype="float32"))
    b = tvm.nd.array(np.zeros(128, dtype="float32"))
    mod(a, b)
    np.testing.assert_array_equal(b.numpy(), a.numpy() + 1)
    f = mod["main"]
    c = tvm.nd.array(np.zeros(128, dtype="float32"))
    f(b, c)
    np.testing.assert_array_equal(c.numpy(), a.numpy() + 2)
    assert mod.entry_name == "main" and mod.get_function("__tvm_main__") is f
    assert "main" in mod and mod.imported_modules == []
    with pytest.raises(AttributeError, match="no function 'nope'"):
        mod["nope"]


def test_numpy_arrays_pass_directly_even_misaligned():
    mod = _add_one()
    raw = np.zeros(129 * 4 + 64, dtype=np.uint8)
    offset = (-raw.ctypes.data) % 64 + 4  # deliberately 4 bytes off a 64-byte boundary
    a = raw[offset:offset + 512].view(np.float32)
    a[:] = np.arange(128)
    b = np.zeros(128, np.float32)
    mod(a, b)
    np.testing.assert_array_equal(b, np.arange(128) + 1)


def test_argument_errors_name_the_parameter():
    mod = _add_one()
    a = tvm.nd.array(np.zeros(128, dtype="float32"))
    with pytest.raises(TypeError, match=r"takes 2 arguments, got 1"):
        mod(a)
    with pytest.raises(ValueError, match=r"argument 2 \(B\): expected shape \(128,\) float32, got \(64,\) float32"):
        mod(a, np.zeros(64, "float32"))
    with pytest.raises(TypeError, match=r"argument 2 \(B\): expected dtype float32, got float64"):
        mod(a, np.zeros(128))
    with pytest.raises(ValueError, match=r"argument 1 \(A\).*not contiguous"):
        mod(np.zeros(256, "float32")[::2], a)
    with pytest.raises(ValueError, match=r"argument 2 \(B\): expected shape \(128,\) float32, got \(128, 1\)"):
        mod(a, np.zeros((128, 1), "float32"))
    with pytest.raises(TypeError, match=r"argument 1 \(A\): expected a tvm.nd.array or numpy array"):
        mod([0.0] * 128, a)


def test_matrix_shape_error_message():
    A = decl_buffer((128, 128), "float32", name="A")
    B = decl_buffer((128, 128), "float32", name="B")
    body = loop(128 * 128, lambda i: S.BufferStore(B.get_flattened_buffer(), A.get_flattened_buffer()[i], [i]))
    mod = build(func([A, B], body))
    with pytest.raises(ValueError, match=r"argument 2 \(B\): expected shape \(128, 128\) float32, got \(128, 64\) float32"):
        mod(np.zeros((128, 128), "float32"), np.zeros((128, 64), "float32"))


def test_symbolic_shapes_bind_consistently():
    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "float32", name="A")
    B = decl_buffer((n,), "float32", name="B")
    scale = Var("scale", "float32")
    i = Var("i")
    mod = build(func([A, B, scale], S.For(i, 0, n, S.ForKind.SERIAL, S.BufferStore(B, A[i] * scale, [i]))))
    for size in (1, 7, 1000):
        a = np.arange(size, dtype="float32")
        b = np.zeros(size, "float32")
        mod(a, b, 3)
        np.testing.assert_array_equal(b, a * 3)
    with pytest.raises(ValueError, match=r"argument 2 \(B\).*n is already bound to 5"):
        mod(np.zeros(5, "float32"), np.zeros(6, "float32"), 1.0)
    with pytest.raises(TypeError, match=r"argument 3 \(scale\): expected a number"):
        mod(np.zeros(5, "float32"), np.zeros(5, "float32"), "x")


def test_integer_scalar_range_checked():
    A = decl_buffer((4,), "int8", name="A")
    v = Var("v", "int8")
    mod = build(func([A, v], loop(4, lambda i: S.BufferStore(A, v, [i]))))
    a = np.zeros(4, "int8")
    mod(a, -5)
    assert (a == -5).all()
    with pytest.raises(ValueError, match=r"argument 2 \(v\): 300 does not fit in int8"):
        mod(a, 300)
    with pytest.raises(TypeError, match="expected an integer"):
        mod(a, 1.5)


def test_time_evaluator_reports_seconds():
    mod = _add_one((4096,))
    a = tvm.nd.array(np.zeros(4096, "float32"))
    b = tvm.nd.empty((4096,), "float32")
    evaluator = mod.time_evaluator(mod.entry_name, tvm.cpu(), number=5, repeat=3)
    result = evaluator(a, b)
    assert len(result.results) == 3 and 0 < result.min <= result.median <= result.max < 0.1
    assert result.mean > 0 and result.std >= 0
    text = str(result)
    assert text.startswith("Execution time summary:") and "mean (ms)" in text
    grown = mod.time_evaluator("main", tvm.cpu(), number=1, min_repeat_ms=5)(a, b)
    assert grown.mean < 0.01
    np.testing.assert_array_equal(b.numpy(), 1)


def test_misaligned_strided_view_runs_on_a_contiguous_copy_with_its_strides():
    """A misaligned, non-contiguous view goes through an aligned copy: strides must come from the copy."""
    import numpy as np

    import tensorize as tvm
    from tensorize.script import tir as T

    @T.prim_func
    def add_one(a: T.handle, b: T.handle):
        s0 = T.int32()
        A = T.match_buffer(a, (4, 4), "float32", strides=(s0, 1))
        B = T.match_buffer(b, (4, 4), "float32")
        for i, j in T.grid(4, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)

    mod = tvm.build(add_one, target="llvm")
    base = np.arange(4 * 9 + 1, dtype="float32")
    view = base[1:].reshape(4, 9)[:, :4]  # misaligned by 4 bytes and strided
    out = np.zeros((4, 4), "float32")
    mod(view, out)
    np.testing.assert_array_equal(out, view + 1)
