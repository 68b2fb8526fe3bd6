"""LLVM codegen of scalar code: every dtype, casts, integer division semantics, control flow."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize.ir import expr as E
from tensorize.ir import op
from tensorize.ir import stmt as S
from tensorize.ir.expr import Var, cast, truncdiv, truncmod

from tests.codegen.codegen_kernels import buffers, build, elementwise, func, loop

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]


def _sample(dtype, n=64, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), n, endpoint=True).astype(dtype)
    return (rng.standard_normal(n) * 10).astype(dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES + FLOAT_DTYPES)
def test_load_compute_store(dtype):
    mod = elementwise(64, dtype, dtype, lambda x: x * x + x - 3 if not dtype.startswith("uint") else x * x + x + 3)
    a = _sample(dtype)
    b = np.zeros_like(a)
    mod(a, b)
    with np.errstate(over="ignore"):
        three = np.array(3, dtype=dtype)
        expected = a * a + a - three if not dtype.startswith("uint") else a * a + a + three
    if dtype == "float16":
        np.testing.assert_allclose(b.astype("float32"), expected.astype("float32"), rtol=2e-3, atol=0.2)
    elif dtype.startswith("float"):  # a*a+a may fuse into one FMA (one rounding instead of two)
        np.testing.assert_allclose(b, expected, rtol=1e-6 if dtype == "float32" else 1e-14)
    else:
        np.testing.assert_array_equal(b, expected)


def test_bool_load_store():
    A, B = buffers(("A", (32,), "bool"), ("B", (32,), "bool"))
    body = loop(32, lambda i: S.BufferStore(B, E.Not(A[i]), [i]))
    mod = build(func([A, B], body))
    a = _sample("bool", 32)
    b = np.zeros_like(a)
    mod(a, b)
    np.testing.assert_array_equal(b, ~a)


@pytest.mark.parametrize("src", INT_DTYPES + FLOAT_DTYPES + ["bool"])
@pytest.mark.parametrize("dst", ["int8", "int32", "uint16", "int64", "float16", "float32", "float64", "bool"])
def test_casts(src, dst):
    mod = elementwise(64, src, dst, lambda x: cast(dst, x))
    a = _sample(src)
    if src.startswith("float") and dst.startswith(("int", "uint")):
        info = np.iinfo(dst)  # float -> int out of range is undefined in C and LLVM alike
        a = np.clip(a, max(info.min, -60000), min(info.max, 60000)).astype(src)
    b = np.zeros(64, dtype=dst)
    mod(a, b)
    with np.errstate(invalid="ignore", over="ignore"):
        expected = a.astype(dst) if not (src.startswith("int") and dst.startswith("uint")) else a.astype("int64").astype(dst)
    np.testing.assert_array_equal(b, expected)


def _bf16_bits(x):
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def _bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def test_bfloat16_round_trip_and_arithmetic():
    x = np.array([1.0, -2.5, 3.14159, 1e-3, 65504.0, -0.0, 1.00390625, 1.01171875], dtype=np.float32)
    to_bf = elementwise(8, "float32", "bfloat16", lambda v: cast("bfloat16", v))
    bits = tvm.nd.empty((8,), "bfloat16")
    to_bf(x, bits)
    np.testing.assert_array_equal(bits.numpy(), _bf16_bits(x))
    twice = elementwise(8, "bfloat16", "bfloat16", lambda v: v + v * E.FloatImm("bfloat16", 0.5))
    out = tvm.nd.empty((8,), "bfloat16")
    twice(bits, out)
    b = _bf16_to_f32(bits.numpy())
    np.testing.assert_array_equal(out.numpy(), _bf16_bits(b + b * np.float32(0.5)))
    back = elementwise(8, "bfloat16", "float32", lambda v: cast("float32", v))
    y = np.zeros(8, np.float32)
    back(out, y)
    np.testing.assert_array_equal(y, _bf16_to_f32(out.numpy()))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_floor_and_trunc_division_on_negatives(dtype):
    A, B, Q, R, TQ, TR = buffers(("A", (64,), dtype), ("B", (64,), dtype), *[(n, (64,), dtype) for n in ("Q", "R", "TQ", "TR")])
    body = loop(64, lambda i: S.SeqStmt([
        S.BufferStore(Q, E.floordiv(A[i], B[i]), [i]), S.BufferStore(R, E.floormod(A[i], B[i]), [i]),
        S.BufferStore(TQ, truncdiv(A[i], B[i]), [i]), S.BufferStore(TR, truncmod(A[i], B[i]), [i])]))
    mod = build(func([A, B, Q, R, TQ, TR], body))
    rng = np.random.default_rng(1)
    a = rng.integers(-100, 100, 64).astype(dtype)
    b = rng.choice([-7, -3, -1, 1, 2, 5, 9], 64).astype(dtype)
    out = [np.zeros(64, dtype) for _ in range(4)]
    mod(a, b, *out)
    np.testing.assert_array_equal(out[0], a // b)
    np.testing.assert_array_equal(out[1], a % b)
    np.testing.assert_array_equal(out[2], np.trunc(a / b).astype(dtype))
    np.testing.assert_array_equal(out[3], np.fmod(a, b))


def test_floordiv_by_constant():
    mod = elementwise(16, "int32", "int32", lambda x: E.floordiv(x, 4) * 100 + E.floormod(x, 4))
    a = np.arange(-8, 8, dtype="int32")
    b = np.zeros_like(a)
    mod(a, b)
    np.testing.assert_array_equal(b, (a // 4) * 100 + a % 4)


def test_min_max_select_compare_logic():
    A, B, C = buffers(("A", (32,), "float32"), ("B", (32,), "float32"), ("C", (32,), "float32"))
    body = loop(32, lambda i: S.BufferStore(C, E.Select(E.And(A[i] > 0.0, E.Or(B[i] <= 1.0, A[i] == B[i])),
                                                        op.max(A[i], B[i]), op.min(A[i], B[i])), [i]))
    mod = build(func([A, B, C], body))
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(32).astype("float32"), rng.standard_normal(32).astype("float32") * 2
    c = np.zeros(32, "float32")
    mod(a, b, c)
    np.testing.assert_array_equal(c, np.where((a > 0) & ((b <= 1) | (a == b)), np.maximum(a, b), np.minimum(a, b)))


def test_bitwise_and_shifts():
    A, B = buffers(("A", (16,), "int32"), ("B", (16,), "uint32"))
    C, D = buffers(("C", (16,), "int32"), ("D", (16,), "uint32"))
    body = loop(16, lambda i: S.SeqStmt([
        S.BufferStore(C, ((A[i] << 2) ^ (A[i] >> 1)) | (A[i] & 7), [i]),
        S.BufferStore(D, (B[i] >> E.IntImm("uint32", 3)) + op.popcount(B[i]), [i])]))
    mod = build(func([A, B, C, D], body))
    a = np.arange(-8, 8, dtype="int32") * 37
    b = (np.arange(16, dtype="uint32") * 0x10001 + 0x80000000).astype("uint32")
    c, d = np.zeros(16, "int32"), np.zeros(16, "uint32")
    mod(a, b, c, d)
    np.testing.assert_array_equal(c, ((a << 2) ^ (a >> 1)) | (a & 7))
    popcount = np.array([bin(int(x)).count("1") for x in b], dtype="uint32")
    np.testing.assert_array_equal(d, (b >> 3) + popcount)


def test_let_if_while_and_scalar_params():
    A, B = buffers(("A", (16,), "float32"), ("B", (16,), "float32"))
    scale, count = Var("scale", "float32"), Var("count", "int32")
    x = Var("x", "float32")
    k = Var("k")
    # k = 0; while k < count: B[k] = let x = A[k] * scale in (x if x > 0 else -x); k += 1 (via a 1-element buffer)
    K = buffers(("K", (1,), "int32"))[0]
    body = S.SeqStmt([
        S.BufferStore(K, 0, [0]),
        S.While(K[0] < count, S.SeqStmt([
            S.LetStmt(k, K[0], S.IfThenElse(
                A[k] > 0.0,
                S.BufferStore(B, E.Let(x, A[k] * scale, x + 1.0), [k]),
                S.BufferStore(B, -A[k], [k]))),
            S.BufferStore(K, K[0] + 1, [0])])),
    ])
    body = S.Allocate(K.data, "int32", [1], True, body)
    mod = build(func([A, B, scale, count], body))
    a = np.linspace(-4, 4, 16).astype("float32")
    b = np.full(16, 7.0, "float32")
    mod(a, b, 2.0, 10)
    expected = np.where(a > 0, a * 2 + 1, -a)
    np.testing.assert_array_equal(b[:10], expected[:10])
    np.testing.assert_array_equal(b[10:], 7.0)


def test_if_then_else_guards_the_untaken_load():
    # B[i] = A[i - 4] if i >= 4 else 0: the guarded load would read before A.
    A, B = buffers(("A", (16,), "float32"), ("B", (16,), "float32"))
    body = loop(16, lambda i: S.BufferStore(B, op.if_then_else(i >= 4, A[i - 4], 0.0), [i]))
    mod = build(func([A, B], body))
    a = np.arange(16, dtype="float32") + 1
    b = np.zeros(16, "float32")
    mod(a, b)
    np.testing.assert_array_equal(b, np.concatenate([np.zeros(4), a[:12]]).astype("float32"))


@pytest.mark.parametrize("size", [16, 1 << 16])
def test_allocate_stack_and_heap(size):
    A, B = buffers(("A", (size,), "float32"), ("B", (size,), "float32"))
    T = buffers(("T", (size,), "float32"))[0]
    body = S.Allocate(T.data, "float32", [size], True, S.SeqStmt([
        loop(size, lambda i: S.BufferStore(T, A[i] * 2.0, [i])),
        loop(size, lambda i: S.BufferStore(B, T[size - 1 - i] + 1.0, [i]), name="j")]))
    mod = build(func([A, B], body))
    ll = mod.get_source("ll")
    assert ("aligned_alloc" in ll) == (size * 4 > 32 * 1024)
    a = np.random.default_rng(3).standard_normal(size).astype("float32")
    b = np.zeros(size, "float32")
    mod(a, b)
    np.testing.assert_array_equal(b, a[::-1] * 2 + 1)


def test_assert_raises_tvm_error_with_message():
    A = buffers(("A", (4,), "int32"))[0]
    n = Var("n")
    body = S.AssertStmt(n < 4, E.StringImm("n must be below 4"), S.BufferStore(A, 1, [n]))
    mod = build(func([A, n], body))
    a = np.zeros(4, "int32")
    mod(a, 2)
    assert a[2] == 1
    with pytest.raises(tvm.TVMError, match="n must be below 4"):
        mod(a, 9)
    mod(a, 3)  # the error state does not stick
    assert a[3] == 1


def test_elem_offset_and_multidim_indices():
    A = tvm.tir.decl_buffer((4, 8), "float32", name="A")
    B = tvm.tir.decl_buffer((4, 8), "float32", name="B")
    body = loop(4, lambda i: loop(8, lambda j: S.BufferStore(B, A[i, j] + cast("float32", i * 10), [i, j]), name="j"))
    mod = build(func([A, B], body))
    a = np.arange(32, dtype="float32").reshape(4, 8)
    b = np.zeros((4, 8), "float32")
    mod(a, b)
    np.testing.assert_array_equal(b, a + np.arange(4, dtype="float32")[:, None] * 10)
