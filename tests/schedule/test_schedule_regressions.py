"""Minimised failures found by the random-schedule property tests, kept as plain regression tests."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize.analysis.verify import verify_well_formed
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


@T.prim_func
def row_sum(A: T.Buffer((4, 3), "float32"), B: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 3):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


def test_rfactor_refuses_a_loop_the_predicate_skips():
    # split k (3) by 4 gives T.where(k_0 * 4 + k_1 < 3): with rfactor on k_1, the entry k_1 == 3 of
    # the rfactor buffer was never initialised and the write-back summed garbage (NaN results).
    sch = tvm.tir.Schedule(row_sum)
    block = sch.get_block("C")
    _, k = sch.get_loops(block)
    _, k_1 = sch.split(k, [None, 4])
    before = sch.mod
    with pytest.raises(tvm.tir.ScheduleError, match="never be initialised"):
        sch.rfactor(k_1, 0)
    assert sch.mod is before


def test_rfactor_of_the_outer_loop_of_an_uneven_split_is_exact():
    sch = tvm.tir.Schedule(row_sum)
    block = sch.get_block("C")
    _, k = sch.get_loops(block)
    k_0, _ = sch.split(k, [None, 2])  # k_0 in [0, 2), every value runs at least once
    sch.rfactor(k_0, 0)
    a = np.arange(12, dtype="float32").reshape(4, 3)
    out = tvm.nd.array(np.zeros(4, "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), out)
    np.testing.assert_array_equal(out.numpy(), a.sum(axis=1))


def test_reorder_keeps_the_order_of_fused_spatial_reduction_loops():
    """Found by the property test: fuse(j, k) then split gives two loops that each carry j and k; swapping
    them would run an output's init after some of its updates. The reorder is refused, nothing changes."""
    from tests.schedule.test_properties import matmul

    sch = tvm.tir.Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    fused = sch.fuse(j, k)
    f0, f1 = sch.split(fused, factors=[None, 5])
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(tvm.tir.ScheduleError, match="init would no longer run before all updates"):
        sch.reorder(f1, f0)
    assert sch.mod is before and len(sch.trace) == n
    sch.reorder(f0, i)  # a spatial loop still moves freely around them


def test_blockize_carries_a_non_dividing_split_predicate_into_the_init():
    """Found by the property test: a split by 6 of an extent-5 loop, blockized above it: the init nest
    keeps the predicate (no write past the output's end) and the program computes the same."""
    import numpy as np

    from tests.schedule.test_properties_wide import _depthwise_case

    func, inputs, out, expected = _depthwise_case()
    sch = tvm.tir.Schedule(func)
    loops = sch.get_loops(sch.get_block("C"))
    sch.split(loops[1], factors=[None, 6])
    sch.blockize(sch.get_loops(sch.get_block("C"))[0])
    init = sch.get(sch.get_block("C_init"))
    assert init.name_hint == "C_init"
    assert "T.where(h_0 * 6 + h_1 < 5)" in sch.mod.script()
    tvm.build(sch.mod, target="llvm")(*[tvm.nd.array(x) for x in inputs], res := tvm.nd.array(out))
    np.testing.assert_allclose(res.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_compute_at_refuses_a_block_of_another_blocks_init():
    """Found by the property test: after blockize, the init nest's block ``C_init`` is a producer of the
    inner update; moving it under the update's loops would reset the accumulator on every step."""
    from tests.schedule.test_properties_wide import WORKLOADS

    func = WORKLOADS["row_max_f16"][0]
    sch = tvm.tir.Schedule(func)
    sch.cache_write(sch.get_block("C"), 0, "global")
    sch.blockize(sch.get_loops(sch.get_block("C"))[0])
    init, loop = sch.get_block("C_init"), sch.get_loops(sch.get_block("C"))[1]
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(tvm.tir.ScheduleError, match="part of the init of block 'C_o'"):
        sch.compute_at(init, loop)
    assert sch.mod is before and len(sch.trace) == n
