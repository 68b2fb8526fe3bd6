"""Minimised failures found by the differential property tests (LLVM build vs the IR interpreter)."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize.ir import expr as E
from tensorize.ir import stmt as S
from tensorize.ir.expr import Var

from tests.codegen.codegen_kernels import buffers, func


def _run(f, *arrays, target="llvm"):
    nd = [tvm.nd.array(a) for a in arrays]
    tvm.build(f, target=target)(*nd)
    return nd[-1].numpy()


@pytest.mark.parametrize("src,dst", [("float32", "float16"), ("int16", "float16"), ("float16", "float32"),
                                     ("float64", "float16"), ("float16", "uint8")])
def test_float16_conversions_on_generic_cpu(src, dst):
    # The generic "llvm" target has no F16C: LLVM calls __extendhfsf2/__truncsfhf2, which the JIT must
    # resolve (an unresolved libcall used to jump to address 0 and crash the process).
    A, B = buffers(("A", (16,), src), ("B", (16,), dst))
    i = Var("i")
    f = func([A, B], S.For(i, 0, 16, S.ForKind.SERIAL, S.BufferStore(B, E.cast(dst, A[i]), [i])))
    out = _run(f, np.arange(16).astype(src), np.zeros(16, dst))
    np.testing.assert_array_equal(out, np.arange(16).astype(dst))


def test_float16_arithmetic_on_generic_cpu():
    A, B = buffers(("A", (16,), "float16"), ("B", (16,), "float16"))
    i = Var("i")
    f = func([A, B], S.For(i, 0, 16, S.ForKind.SERIAL, S.BufferStore(B, A[i] * A[i] + A[i], [i])))
    a = np.linspace(-3, 3, 16).astype("float16")
    np.testing.assert_array_equal(_run(f, a, np.zeros(16, "float16")), a * a + a)


def test_uint8_wrapping_is_not_simplified_away():
    # max(a + 44, 2) on uint8 wraps for a > 211 (213 + 44 == 1); bounds over mathematical integers had proven the max
    # redundant and the build differed from the interpreter (found by test_llvm_vs_interpreter).
    A, B = buffers(("A", (4,), "uint8"), ("B", (4,), "uint8"))
    i = Var("i")
    value = tvm.tir.max(A[i] + E.make_const("uint8", 44), E.make_const("uint8", 2))
    f = func([A, B], S.For(i, 0, 4, S.ForKind.SERIAL, S.BufferStore(B, E.floormod(E.cast("uint8", i + 9), value), [i])))
    a = np.array([213, 255, 0, 100], "uint8")  # 213 + 44 wraps to 1
    expect = np.array([(i + 9) % max((int(x) + 44) % 256, 2) for i, x in enumerate(a)], "uint8")
    np.testing.assert_array_equal(_run(f, a, np.zeros(4, "uint8")), expect)
