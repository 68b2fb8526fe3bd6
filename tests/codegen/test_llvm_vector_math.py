"""LLVM codegen of vector code (Ramp/Broadcast/Shuffle, gathers, masks, vectorize metadata) and math."""
import numpy as np
import pytest

from tensorize.ir import expr as E
from tensorize.ir import op
from tensorize.ir import stmt as S
from tensorize.ir.expr import Broadcast, Ramp, Shuffle

from tests.codegen.codegen_kernels import buffers, build, elementwise, func, loop


def _vector_add(n, lanes, dtype="float32"):
    A, B, C = buffers(("A", (n,), dtype), ("B", (n,), dtype), ("C", (n,), dtype))
    body = loop(n // lanes, lambda i: S.BufferStore(
        C, A[Ramp(i * lanes, 1, lanes)] + B[Ramp(i * lanes, 1, lanes)] * Broadcast(E.FloatImm(dtype, 2.0), lanes),
        [Ramp(i * lanes, 1, lanes)]))
    return build(func([A, B, C], body))


@pytest.mark.parametrize("lanes", [4, 8, 16])
def test_vector_loop_matches_serial(lanes):
    n = 256
    vec = _vector_add(n, lanes)
    A, B, C = buffers(("A", (n,), "float32"), ("B", (n,), "float32"), ("C", (n,), "float32"))
    serial = build(func([A, B, C], loop(n, lambda i: S.BufferStore(C, A[i] + B[i] * 2.0, [i]))))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(n).astype("float32"), rng.standard_normal(n).astype("float32")
    c1, c2 = np.zeros(n, "float32"), np.zeros(n, "float32")
    vec(a, b, c1)
    serial(a, b, c2)
    np.testing.assert_array_equal(c1, c2)
    np.testing.assert_array_equal(c1, a + b * 2)
    ll = vec.get_source("ll")
    assert f"<{lanes} x float>" in ll
    # i * lanes is a multiple of the vector: the access is aligned to the whole vector (up to 64 bytes).
    assert f"align {min(lanes * 4, 64)}" in ll


def test_strided_gather_and_scatter():
    n = 64
    A, B = buffers(("A", (2 * n,), "int32"), ("B", (2 * n,), "int32"))
    body = loop(n // 8, lambda i: S.BufferStore(B, A[Ramp(i * 16, 2, 8)] + 1, [Ramp(i * 16 + 1, 2, 8)]))
    mod = build(func([A, B], body))
    a = np.arange(2 * n, dtype="int32")
    b = np.zeros(2 * n, "int32")
    mod(a, b)
    np.testing.assert_array_equal(b[1::2], a[0::2] + 1)
    np.testing.assert_array_equal(b[0::2], 0)
    assert "gather" in mod.get_source("ll") or "vpgatherd" in mod.get_source("asm")


def test_predicated_load_and_store():
    n, lanes = 20, 8  # the last vector is partial: lanes past n are masked off
    A, B = buffers(("A", (n,), "float32"), ("B", (n,), "float32"))

    def body_of(i):
        idx = Ramp(i * lanes, 1, lanes)
        mask = idx < Broadcast(E.IntImm("int32", n), lanes)
        return S.BufferStore(B, E.BufferLoad(A, [idx], predicate=mask) * Broadcast(3.0, lanes), [idx], predicate=mask)

    mod = build(func([A, B], loop(3, body_of)))
    a = np.arange(n, dtype="float32")
    b = np.zeros(n, "float32")
    mod(a, b)
    np.testing.assert_array_equal(b, a * 3)
    assert "llvm.masked" in mod.get_source("ll")


def test_shuffle_reverses_lanes_and_broadcast():
    A, B = buffers(("A", (8,), "int16"), ("B", (8,), "int16"))
    v = A[Ramp(0, 1, 8)]
    body = S.BufferStore(B, Shuffle([v], list(range(7, -1, -1))) + Broadcast(E.IntImm("int16", 100), 8), [Ramp(0, 1, 8)])
    mod = build(func([A, B], body))
    a = np.arange(8, dtype="int16")
    b = np.zeros(8, "int16")
    mod(a, b)
    np.testing.assert_array_equal(b, a[::-1] + 100)


@pytest.mark.parametrize("kind", [S.ForKind.VECTORIZED, S.ForKind.UNROLLED])
def test_vectorized_and_unrolled_loop_kinds(kind):
    A, B = buffers(("A", (64,), "float32"), ("B", (64,), "float32"))
    body = loop(8, lambda i: loop(8, lambda j: S.BufferStore(B, A[i * 8 + j] * 2.0, [i * 8 + j]), kind=kind, name="j"))
    f = func([A, B], body)
    mod = build(f)
    a = np.arange(64, dtype="float32")
    b = np.zeros(64, "float32")
    mod(a, b)
    np.testing.assert_array_equal(b, a * 2)
    from tensorize.codegen.llvm.module import ModuleContext, emit_prim_func
    from tensorize.target import Target

    ctx = ModuleContext("m", Target("llvm"))
    emit_prim_func(ctx, "main", f)
    text = ctx.text()
    key = "llvm.loop.vectorize.enable" if kind == S.ForKind.VECTORIZED else "llvm.loop.unroll.full"
    assert key in text and "distinct !{" in text.replace("distinct !{ ", "distinct !{")


def test_mixed_lane_vectors_int8_to_int32():
    A, B = buffers(("A", (64,), "int8"), ("B", (64,), "int32"))
    body = loop(4, lambda i: S.BufferStore(B, E.cast("int32x16", A[Ramp(i * 16, 1, 16)]) * Broadcast(3, 16),
                                           [Ramp(i * 16, 1, 16)]))
    mod = build(func([A, B], body))
    a = np.arange(-32, 32, dtype="int8")
    b = np.zeros(64, "int32")
    mod(a, b)
    np.testing.assert_array_equal(b, a.astype("int32") * 3)


UNARY = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "fabs": np.abs, "floor": np.floor, "ceil": np.ceil, "round": np.round, "trunc": np.trunc,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "log1p": np.log1p, "asinh": np.arcsinh, "atanh": np.arctanh,
    "erf": None,
}
POSITIVE = {"log", "log2", "log10", "sqrt", "rsqrt", "log1p"}
UNIT = {"asin", "acos", "atanh"}


def _erf(x):
    import math

    return np.array([math.erf(float(v)) for v in x], dtype=x.dtype)


def _inputs(name, dtype, n=64):
    rng = np.random.default_rng(7)
    if name in POSITIVE:
        return rng.uniform(0.01, 20, n).astype(dtype)
    if name in UNIT:
        return rng.uniform(-0.99, 0.99, n).astype(dtype)
    x = rng.uniform(-4, 4, n).astype(dtype)
    x[:4] = [0.5, 1.5, -2.5, 2.5]  # round half to even, like numpy
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_math_matches_numpy(name, dtype):
    mod = elementwise(64, dtype, dtype, getattr(op, name))
    x = _inputs(name, dtype)
    y = np.zeros_like(x)
    mod(x, y)
    expected = _erf(x) if name == "erf" else UNARY[name](x)
    tol = 2e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(y, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "erf", "sqrt"])
def test_vector_math_matches_numpy(name):
    lanes = 8
    A, B = buffers(("A", (64,), "float32"), ("B", (64,), "float32"))
    body = loop(8, lambda i: S.BufferStore(B, getattr(op, name)(A[Ramp(i * lanes, 1, lanes)]), [Ramp(i * lanes, 1, lanes)]))
    mod = build(func([A, B], body))
    x = _inputs(name if name != "sqrt" else "log", "float32")
    y = np.zeros_like(x)
    mod(x, y)
    expected = _erf(x) if name == "erf" else UNARY[name](x)
    np.testing.assert_allclose(y, expected, rtol=2e-6, atol=2e-6)


def test_binary_math_and_float16_math():
    A, B, C = buffers(("A", (32,), "float32"), ("B", (32,), "float32"), ("C", (32,), "float32"))
    body = loop(32, lambda i: S.BufferStore(C, op.pow(A[i], B[i]) + op.atan2(B[i], A[i]) + op.fmod(A[i], B[i]), [i]))
    mod = build(func([A, B, C], body))
    rng = np.random.default_rng(4)
    a, b = rng.uniform(0.5, 3, 32).astype("float32"), rng.uniform(-2, 2, 32).astype("float32")
    c = np.zeros(32, "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, np.power(a, b) + np.arctan2(b, a) + np.fmod(a, b), rtol=1e-5)
    half = elementwise(32, "float16", "float16", op.exp)
    x = rng.uniform(-2, 2, 32).astype("float16")
    y = np.zeros_like(x)
    half(x, y)
    np.testing.assert_allclose(y.astype("float32"), np.exp(x.astype("float32")), rtol=1e-3)


def test_isnan_isinf_isfinite():
    A, B = buffers(("A", (6,), "float32"), ("B", (6,), "int32"))
    body = loop(6, lambda i: S.BufferStore(
        B, E.cast("int32", op.isnan(A[i])) + E.cast("int32", op.isinf(A[i])) * 2 + E.cast("int32", op.isfinite(A[i])) * 4, [i]))
    mod = build(func([A, B], body))
    a = np.array([0.0, np.nan, np.inf, -np.inf, 1.0, -3.0], "float32")
    b = np.zeros(6, "int32")
    mod(a, b)
    np.testing.assert_array_equal(b, np.isnan(a) + np.isinf(a) * 2 + np.isfinite(a) * 4)


def test_vector_of_non_power_of_two_lanes_gets_a_valid_alignment():
    """Found by the schedule property test: vectorizing a loop of 10 gave `align 40`, which LLVM rejects."""
    import numpy as np

    import tensorize as tvm
    from tensorize.script import tir as T

    @T.prim_func
    def fill(A: T.Buffer((4, 10), "float32")):
        for i in range(4):
            for j in T.vectorized(10):
                with T.block("A"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    A[vi, vj] = T.float32(1.5)

    mod = tvm.build(fill, target="llvm")
    a = np.zeros((4, 10), "float32")
    mod(a)
    np.testing.assert_array_equal(a, np.full((4, 10), 1.5, "float32"))
    assert "align 40" not in mod.get_source("ll")
