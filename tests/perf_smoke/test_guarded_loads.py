"""Guarded vector loads: an ``if_then_else`` whose condition is the same for every lane branches
(only the taken side loads), a per-lane condition over a load becomes a masked load. Either way no
lane reads memory its guard excludes."""
import numpy as np

import tensorize as tvm
from tensorize.script import tir as T


@T.prim_func
def shift_right_padded(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4, 16), "float32")):
    T.func_attr({"tir.noalias": True})
    for i in range(4):
        for j in T.vectorized(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                # Row guard: uniform across the 16 lanes.
                B[vi, vj] = T.if_then_else(vi >= 1, A[vi - 1, vj], T.float32(0))


@T.prim_func
def shift_lanes_padded(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    T.func_attr({"tir.noalias": True})
    for i in range(4):
        for j in T.vectorized(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                # Lane guard: differs between lanes of the vector.
                B[vi * 16 + vj] = T.if_then_else(vi * 16 + vj >= 3, A[vi * 16 + vj - 3], T.float32(0))


def test_uniform_guard_branches_instead_of_selecting():
    # the guard as vectorization sees it: without the partition that takes it out of rows 1..3
    no_partition = tvm.transform.PassContext(disabled_pass=["tir.PartitionPaddedLoops"])
    with no_partition:
        rt_mod = tvm.build(shift_right_padded, target="llvm -mcpu=native")
    a = np.arange(64, dtype="float32").reshape(4, 16) + 1
    b = tvm.nd.array(np.zeros((4, 16), dtype="float32"))
    rt_mod(tvm.nd.array(a), b)
    expected = np.vstack([np.zeros((1, 16), dtype="float32"), a[:-1]])
    np.testing.assert_array_equal(b.numpy(), expected)
    with no_partition:
        lowered = tvm.lower(shift_right_padded)["main"].script()
    assert "T.Broadcast(i >= 1" not in lowered and "if_then_else(i >= 1" in lowered, lowered


def test_per_lane_guard_becomes_masked_load():
    rt_mod = tvm.build(shift_lanes_padded, target="llvm -mcpu=native")
    assert "llvm.masked.load" in rt_mod.get_source("ll")
    a = np.arange(64, dtype="float32") + 1
    b = tvm.nd.array(np.zeros(64, dtype="float32"))
    rt_mod(tvm.nd.array(a), b)
    np.testing.assert_array_equal(b.numpy(), np.concatenate([np.zeros(3, dtype="float32"), a[:-3]]))
