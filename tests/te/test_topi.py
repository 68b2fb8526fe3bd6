"""topi.argmax / topi.argmin: the two-stage index reduction TVM builds, checked against numpy."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize import te, topi


def run(func, *arrays):
    nd = [tvm.nd.array(a) for a in arrays]
    tvm.build(func, target="llvm")(*nd)
    return [x.numpy() for x in nd]


@pytest.mark.parametrize("op, ref", [(topi.argmax, np.argmax), (topi.argmin, np.argmin)])
def test_arg_reduce_matches_numpy_first_index_on_ties(op, ref):
    A = te.placeholder((4, 16), dtype="int32")
    B = op(A, axis=1)
    func = te.create_prim_func([A, B])
    a = np.random.default_rng(0).integers(-3, 3, size=(4, 16)).astype("int32")  # many ties
    _, b = run(func, a, np.zeros(4, "int32"))
    np.testing.assert_array_equal(b, ref(a, axis=1))


def test_arg_reduce_stages_and_names_follow_tvm():
    A = te.placeholder((2, 8), dtype="float32")
    B = topi.argmax(A, axis=-1, keepdims=True)
    assert B.op.name == "placeholder_red" and B.dtype == "int32"
    assert [int(s) for s in B.shape] == [2, 1]
    temp = B.op.input_tensors[0]
    assert temp.op.name == "placeholder_red_temp" and temp.op.num_outputs == 2
    text = te.create_prim_func([A, B]).script()
    assert 'with T.block("placeholder_red_temp")' in text and "placeholder_red_temp_v1" in text


def test_arg_reduce_rejects_a_bad_axis():
    A = te.placeholder((2, 8))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        topi.argmax(A, axis=2)
