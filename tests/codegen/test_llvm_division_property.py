"""Property test: compiled floordiv/floormod/truncdiv/truncmod agree with Python on any int32 operands."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hypothesis_setup import examples

from tensorize.ir import expr as E
from tensorize.ir import stmt as S

from tests.codegen.codegen_kernels import buffers, build, func, loop

_N = 32
_A, _B, _Q, _R, _TQ, _TR = buffers(*[(n, (_N,), "int32") for n in ("A", "B", "Q", "R", "TQ", "TR")])
_MOD = None


def _module():
    global _MOD
    if _MOD is None:
        body = loop(_N, lambda i: S.SeqStmt([
            S.BufferStore(_Q, E.floordiv(_A[i], _B[i]), [i]), S.BufferStore(_R, E.floormod(_A[i], _B[i]), [i]),
            S.BufferStore(_TQ, E.truncdiv(_A[i], _B[i]), [i]), S.BufferStore(_TR, E.truncmod(_A[i], _B[i]), [i])]))
        _MOD = build(func([_A, _B, _Q, _R, _TQ, _TR], body))
    return _MOD


ints = st.integers(-(2**31) + 1, 2**31 - 1)
nonzero = ints.filter(lambda v: v != 0)


@settings(max_examples=examples(50), deadline=None)
@given(st.lists(ints, min_size=_N, max_size=_N), st.lists(nonzero, min_size=_N, max_size=_N))
def test_division_semantics(a, b):
    a, b = np.array(a, "int32"), np.array(b, "int32")
    out = [np.zeros(_N, "int32") for _ in range(4)]
    _module()(a, b, *out)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    np.testing.assert_array_equal(out[0], a64 // b64)
    np.testing.assert_array_equal(out[1], a64 % b64)
    trunc = np.array([(abs(int(x)) // abs(int(y))) * (1 if (x >= 0) == (y >= 0) else -1) for x, y in zip(a64, b64)])
    np.testing.assert_array_equal(out[2], trunc)
    np.testing.assert_array_equal(out[3], a64 - trunc * b64)


# Constant positive divisors take shorter paths (a shift and a mask for powers of two, the remainder's sign
# only for the others): index arithmetic divides by tile sizes. Scalar and 8-lane vector forms, any dividend.
_DIVISORS = (1, 2, 8, 64, 2**30, 3, 7, 100)
_CONST_MOD = None


def _constant_module():
    global _CONST_MOD
    if _CONST_MOD is None:
        n, k = _N, len(_DIVISORS)
        a, q, r, vq, vr = buffers(("A", (n,), "int32"), *[(name, (k * n,), "int32") for name in ("Q", "R", "VQ", "VR")])

        def scalar(i):
            stores = []
            for j, d in enumerate(_DIVISORS):
                divisor = E.IntImm("int32", d)
                stores += [S.BufferStore(q, E.floordiv(a[i], divisor), [j * n + i]),
                           S.BufferStore(r, E.floormod(a[i], divisor), [j * n + i])]
            return S.SeqStmt(stores)

        def vector(i):
            lanes = E.Ramp(i * 8, 1, 8)
            stores = []
            for j, d in enumerate(_DIVISORS):
                divisor = E.Broadcast(E.IntImm("int32", d), 8)
                value = E.BufferLoad(a, [lanes])
                stores += [S.BufferStore(vq, E.floordiv(value, divisor), [E.Ramp(j * n + i * 8, 1, 8)]),
                           S.BufferStore(vr, E.floormod(value, divisor), [E.Ramp(j * n + i * 8, 1, 8)])]
            return S.SeqStmt(stores)

        body = S.SeqStmt([loop(n, scalar), loop(n // 8, vector, name="v")])
        _CONST_MOD = build(func([a, q, r, vq, vr], body))
    return _CONST_MOD


@settings(max_examples=examples(50), deadline=None)
@given(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=_N, max_size=_N))
def test_division_by_positive_constants(a):
    a = np.array(a, "int32")
    k = len(_DIVISORS)
    out = [np.zeros(k * _N, "int32") for _ in range(4)]
    _constant_module()(a, *out)
    a64 = a.astype(np.int64)
    want_q = np.concatenate([a64 // d for d in _DIVISORS])
    want_r = np.concatenate([a64 % d for d in _DIVISORS])
    for got_q, got_r in ((out[0], out[1]), (out[2], out[3])):
        np.testing.assert_array_equal(got_q, want_q)
        np.testing.assert_array_equal(got_r, want_r)
