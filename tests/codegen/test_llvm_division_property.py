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
