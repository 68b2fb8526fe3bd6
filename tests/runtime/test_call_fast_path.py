"""Calling a compiled function again with the same tensors reuses the checked arguments; new tensors, new
data in the same tensors and bad arguments behave as on a first call."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize import te


def _add_one(n=16):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    return tvm.build(te.create_prim_func([A, B]), target="llvm")


def test_repeated_calls_see_new_data_in_the_same_tensors():
    f = _add_one()
    a, b = tvm.nd.array(np.arange(16, dtype="float32")), tvm.nd.array(np.zeros(16, "float32"))
    f(a, b)
    np.testing.assert_array_equal(b.numpy(), np.arange(16) + 1)
    a.copyfrom(np.full(16, 5, "float32"))
    f(a, b)
    np.testing.assert_array_equal(b.numpy(), np.full(16, 6))
    c = tvm.nd.array(np.zeros(16, "float32"))
    f(a, c)  # other tensors: bound afresh
    np.testing.assert_array_equal(c.numpy(), np.full(16, 6))


def test_a_bad_call_after_a_good_one_is_still_refused():
    f = _add_one()
    a, b = tvm.nd.array(np.zeros(16, "float32")), tvm.nd.array(np.zeros(16, "float32"))
    f(a, b)
    with pytest.raises(ValueError, match="shape"):
        f(a, tvm.nd.array(np.zeros(8, "float32")))
    with pytest.raises(TypeError, match="dtype"):
        f(a, tvm.nd.array(np.zeros(16, "int32")))
    f(a, b)
