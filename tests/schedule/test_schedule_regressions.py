"""Minimised failures found by the random-schedule property tests, kept as plain regression tests."""
import numpy as np

import tensorize as tvm
from tensorize.ir.verify import verify_well_formed
from tensorize.script import from_source
from tensorize.script import tir as T


@T.prim_func
def row_max(A: T.Buffer((12, 20), "float32"), B: T.Buffer((12,), "float32")):
    for i, k in T.grid(12, 20):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(-1e30)
            B[vi] = T.max(B[vi], A[vi, vk])


def test_split_that_does_not_divide_inside_a_blockized_block():
    # blockize, then split a loop inside the new outer block by a factor that does not divide it:
    # the inner block gets T.where(i_0 * 5 + i_1 < 12). The access inference relaxed the binding
    # i_0 * 5 + i_1 over [0, 15) and the verifier rejected the outer block's (correct) T.reads.
    sch = tvm.tir.Schedule(row_max)
    block = sch.get_block("C")
    sch.blockize(sch.get_loops(block)[0])
    sch.split(sch.get_loops(block)[0], [None, 5])
    assert verify_well_formed(sch.mod)
    tvm.ir.assert_structural_equal(from_source(sch.mod.script()), sch.mod)
    a = np.random.default_rng(0).random((12, 20), dtype=np.float32)
    out = tvm.nd.array(np.zeros(12, "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), out)
    np.testing.assert_array_equal(out.numpy(), a.max(axis=1))
