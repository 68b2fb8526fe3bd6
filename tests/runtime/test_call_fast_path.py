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


def test_repeated_calls_with_the_same_numpy_arrays_see_new_data():
    f = _add_one()
    a, b = np.arange(16, dtype="float32"), np.zeros(16, "float32")
    f(a, b)
    a[:] = 5
    f(a, b)
    np.testing.assert_array_equal(b, np.full(16, 6))


def test_a_numpy_array_reshaped_in_place_is_checked_again():
    f = _add_one()
    a, b = np.zeros(16, "float32"), np.zeros(16, "float32")
    f(a, b)
    b.shape = (4, 4)  # the same object, another layout
    with pytest.raises(ValueError, match="shape"):
        f(a, b)


def test_a_misaligned_numpy_input_is_copied_again_on_every_call():
    f = _add_one()
    base = np.zeros(17, "float32")
    a = base[1:]  # 4 bytes past an aligned start: the call runs on an aligned copy
    b = np.zeros(16, "float32")
    f(a, b)
    a[:] = 2
    f(a, b)
    np.testing.assert_array_equal(b, np.full(16, 3))
