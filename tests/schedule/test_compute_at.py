"""compute_at, reverse_compute_at, sample_compute_location."""
import pytest

import tensorize as tvm
from tensorize.script import tir as T
from tensorize.schedule import ScheduleError
from tests.schedule._sched_workloads import assert_func_equal, check_matmul, check_two_stage, matmul, two_stage, unchanged


@T.prim_func
def two_stage_compute_at(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    B = T.alloc_buffer((32, 32))
    for i_0 in range(4):
        for ax0, ax1 in T.grid(8, 32):
            with T.block("B"):
                vi = T.axis.spatial(32, i_0 * 8 + ax0)
                vj = T.axis.spatial(32, ax1)
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i_1, j in T.grid(8, 32):
            with T.block("C"):
                vi = T.axis.spatial(32, i_0 * 8 + i_1)
                vj = T.axis.spatial(32, j)
                C[vi, vj] = B[vi, vj] + T.float32(1)


def test_compute_at_structure_and_numbers():
    sch = tvm.tir.Schedule(two_stage)
    i, _ = sch.get_loops(sch.get_block("C"))
    i0, _ = sch.split(i, [None, 8])
    sch.compute_at(sch.get_block("B"), i0)
    assert_func_equal(sch.mod, two_stage_compute_at)
    check_two_stage(sch.mod)


def test_compute_at_text_under_innermost_loop():
    sch = tvm.tir.Schedule(two_stage)
    _, j = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), j)
    text = sch.mod.script()
    assert """        for i, j in T.grid(32, 32):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj])
                T.writes(B[vi, vj])
                B[vi, vj] = A[vi, vj] * T.float32(2.0)
            with T.block("C"):""" in text
    check_two_stage(sch.mod)


def test_compute_at_preserve_unit_loops():
    sch = tvm.tir.Schedule(two_stage)
    _, j = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), j, preserve_unit_loops=True)
    assert "for ax0, ax1 in T.grid(1, 1):" in sch.mod.script()
    check_two_stage(sch.mod)


def test_reverse_compute_at():
    sch = tvm.tir.Schedule(two_stage)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.reverse_compute_at(sch.get_block("C"), i)
    text = sch.mod.script()
    assert """            for ax0 in range(32):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, ax0])""" in text
    check_two_stage(sch.mod)


def test_compute_at_matmul_cache_tiles():
    sch = tvm.tir.Schedule(matmul)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, [None, 16])
    jo, ji = sch.split(j, [None, 16])
    sch.reorder(io, jo, k, ii, ji)
    a_shared = sch.cache_read(c, 0, "shared")
    sch.compute_at(a_shared, k)
    assert "for ax0 in range(16):" in sch.mod.script()
    check_matmul(sch.mod)


def test_compute_at_errors_leave_schedule_unchanged():
    sch = tvm.tir.Schedule(two_stage)
    i, j = sch.get_loops(sch.get_block("B"))
    before, n = sch.mod, len(sch.trace)
    # j is B's own loop (TVM: "is an ancestor of block").
    with pytest.raises(ScheduleError, match="loop j is an ancestor of block 'B'"):
        sch.compute_at(sch.get_block("B"), j)
    unchanged(sch, before, n + 1)  # get_block above was recorded, the failed primitive was not
    # C is an output block: compute_at would compute only part of it.
    ci, _ = sch.get_loops(sch.get_block("C"))
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(ScheduleError, match="output block"):
        sch.compute_at(sch.get_block("C"), i)
    unchanged(sch, before, n + 1)


def test_reverse_compute_at_of_a_reduction_block_needs_its_iterators_determined():
    # As TVM, a reduction block may move (test_reverse_compute_at_factorized); here C's vj is not fixed
    # by the cached row of A, so the move is refused and the schedule is unchanged.
    sch = tvm.tir.Schedule(matmul)
    c = sch.get_block("C")
    cl = sch.cache_read(c, 0, "local")
    loop = sch.get_loops(cl)[0]
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(ScheduleError, match="iterator vj of block 'C' is not determined"):
        sch.reverse_compute_at(c, loop)
    assert sch.mod is before and len(sch.trace) == n


def test_sample_compute_location_replays():
    sch = tvm.tir.Schedule(two_stage, seed=3)
    b = sch.get_block("B")
    loc = sch.sample_compute_location(b)
    sch.compute_at(b, loc)
    check_two_stage(sch.mod)
    decision = sch.trace.insts[-2].decision
    assert decision in (-2, -1, 0, 1)
    replay = tvm.tir.Schedule(two_stage)
    tvm.tir.Trace.from_json(sch.trace.as_json()).apply_to_schedule(replay)
    tvm.ir.assert_structural_equal(replay.mod, sch.mod)
    for d in (-1, 0, 1):
        s = tvm.tir.Schedule(two_stage)
        blk = s.get_block("B")
        s.compute_at(blk, s.sample_compute_location(blk, decision=d))
        check_two_stage(s.mod)
    with pytest.raises(ScheduleError, match="not a valid compute location"):
        s = tvm.tir.Schedule(two_stage)
        s.sample_compute_location(s.get_block("B"), decision=5)
