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


# -- iterator domains (TVM's CalculateBlockVarDomain) --------------------------------------------------
@T.prim_func
def repeat_by_16(A: T.Buffer((8,), "float32"), C: T.Buffer((128,), "float32")):
    B = T.alloc_buffer((8, 16))
    for i, j in T.grid(8, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi] + T.float32(1)
    for i in range(128):
        with T.block("C"):
            vi = T.axis.spatial(128, i)
            C[vi] = B[vi // 16, vi % 16] * T.float32(2)


@T.prim_func
def repeat_by_16_reverse(A: T.Buffer((8,), "float32"), C: T.Buffer((128,), "float32")):
    B = T.alloc_buffer((8, 16))
    for i in range(8):
        for j in range(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi] + T.float32(1)
        for ax0 in range(16):
            with T.block("C"):
                vi = T.axis.spatial(128, i * 16 + ax0)
                C[vi] = B[vi // 16, vi % 16] * T.float32(2)


def _check_repeat(mod):
    from tests.schedule._sched_workloads import rand, run
    import numpy as np

    a = rand(8)
    c = np.zeros(128, "float32")
    run(mod, a, c)
    np.testing.assert_allclose(c, np.repeat(a + 1, 16) * 2, rtol=1e-6)


def test_reverse_compute_at_inverts_floordiv_floormod_indices():
    # C reads B[vi // 16, vi % 16]: the indices are a bijective map of vi, so one row of B
    # (i, 0:16) maps back to vi in [i * 16, i * 16 + 15].
    sch = tvm.tir.Schedule(repeat_by_16)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.reverse_compute_at(sch.get_block("C"), i)
    assert_func_equal(sch.mod, repeat_by_16_reverse)
    _check_repeat(sch.mod)


@T.prim_func
def grouped_bias(X: T.Buffer((720,), "float32"), Y: T.Buffer((720,), "float32")):
    B = T.alloc_buffer((45,))
    for i in range(45):
        with T.block("init"):
            vi = T.axis.spatial(45, i)
            B[vi] = T.Cast("float32", vi)
    for c_o, c_i in T.grid(2, 360):
        with T.block("compute"):
            cc = T.axis.spatial(720, c_o * 360 + c_i)
            Y[cc] = X[cc] + B[cc // 16]


@T.prim_func
def grouped_bias_compute_at(X: T.Buffer((720,), "float32"), Y: T.Buffer((720,), "float32")):
    B = T.alloc_buffer((45,))
    for c_o in range(2):
        for ax0 in range(23):
            with T.block("init"):
                vi = T.axis.spatial(45, c_o * 22 + ax0)
                B[vi] = T.Cast("float32", vi)
        for c_i in range(360):
            with T.block("compute"):
                cc = T.axis.spatial(720, c_o * 360 + c_i)
                Y[cc] = X[cc] + B[cc // 16]


def test_compute_at_non_perfect_group_has_constant_extent():
    # 360 channels per c_o read groups c_o * 360 // 16 .. (c_o * 360 + 359) // 16: with c_o in {0, 1}
    # that is c_o * 22 .. c_o * 22 + 22, 23 groups (the groups overlap at the tile edge).
    from tests.schedule._sched_workloads import rand, run
    import numpy as np

    sch = tvm.tir.Schedule(grouped_bias)
    sch.compute_at(sch.get_block("init"), sch.get_loops(sch.get_block("compute"))[0])
    assert_func_equal(sch.mod, grouped_bias_compute_at)
    x, y = rand(720), np.zeros(720, "float32")
    run(sch.mod, x, y)
    np.testing.assert_allclose(y, x + np.arange(720) // 16, rtol=1e-6)


@T.prim_func
def blockized_producer(A: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    B = T.alloc_buffer((64, 64))
    for i_o, j_o in T.grid(4, 4):
        with T.block("B_outer"):
            vio, vjo = T.axis.remap("SS", [i_o, j_o])
            T.reads(A[vio * 16:vio * 16 + 16, vjo * 16:vjo * 16 + 16])
            T.writes(B[vio * 16:vio * 16 + 16, vjo * 16:vjo * 16 + 16])
            for i_i, j_i in T.grid(16, 16):
                with T.block("B"):
                    vi = T.axis.spatial(64, vio * 16 + i_i)
                    vj = T.axis.spatial(64, vjo * 16 + j_i)
                    B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_o, j_o, i_i, j_i in T.grid(2, 2, 32, 32):
        with T.block("C"):
            vi = T.axis.spatial(64, i_o * 32 + i_i)
            vj = T.axis.spatial(64, j_o * 32 + j_i)
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_compute_at_blockized_producer_covers_tiles():
    # B_outer writes B[vio * 16 : vio * 16 + 16]: a 32-row tile of C needs vio in
    # [i_o * 2, i_o * 2 + 1], two blocks per axis (not all four).
    from tests.schedule._sched_workloads import rand, run
    import numpy as np

    sch = tvm.tir.Schedule(blockized_producer)
    _, j_o, _, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B_outer"), j_o)
    text = sch.mod.script()
    assert "for ax0, ax1 in T.grid(2, 2):" in text
    assert "vio = T.axis.spatial(4, i_o * 2 + ax0)" in text
    a, c = rand(64, 64), np.zeros((64, 64), "float32")
    run(sch.mod, a, c)
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)


@T.prim_func
def symbolic_copy(x: T.handle, y: T.handle, n: T.int32):
    X = T.match_buffer(x, (n * 32,))
    Y = T.match_buffer(y, (n * 32,))
    B = T.alloc_buffer((n * 32,))
    for k in range(n * 32):
        with T.block("B"):
            vk = T.axis.spatial(n * 32, k)
            B[vk] = X[vk]
    for k_0, k_1 in T.grid(n, 32):
        with T.block("Y"):
            vk = T.axis.spatial(n * 32, k_0 * 32 + k_1)
            Y[vk] = B[vk]


def test_compute_at_symbolic_tile_needs_no_predicate():
    # k_0 < n gives k_0 * 32 + ax0 < n * 32: the tile stays inside the buffer, so no T.where.
    sch = tvm.tir.Schedule(symbolic_copy)
    sch.compute_at(sch.get_block("B"), sch.get_loops(sch.get_block("Y"))[0])
    text = sch.mod.script()
    assert "for ax0 in range(32):" in text
    assert "T.where" not in text


@T.prim_func
def unsolvable_read(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi]
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[vi // 2 + vi % 2]


def test_reverse_compute_at_unsolvable_index_is_an_error():
    sch = tvm.tir.Schedule(unsolvable_read)
    loop = sch.get_loops(sch.get_block("B"))[0]
    c = sch.get_block("C")
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(ScheduleError, match="cannot solve the iterator domains of block 'C'"):
        sch.reverse_compute_at(c, loop)
    assert sch.mod is before and len(sch.trace) == n


@T.prim_func
def unit_outer_loop(A: T.Buffer((8,), "float32"), C: T.Buffer((3,), "float32")):
    B = T.alloc_buffer((1, 8))
    for a, b in T.grid(1, 8):
        with T.block("B"):
            va, vb = T.axis.remap("SS", [a, b])
            B[va, vb] = A[vb] * T.float32(2)
    for i in range(3):
        with T.block("C"):
            vi = T.axis.spatial(3, i)
            C[vi] = B[vi // 8, vi] + T.float32(1)


def test_reverse_compute_at_unit_loop_stands_for_its_min():
    # Under the unit loop a (a == 0), B[vi // 8, vi] for one row a gives vi in [a * 8, a * 8 + 7],
    # which meets vi's own domain [0, 2] exactly: three instances, no predicate.
    from tests.schedule._sched_workloads import rand, run
    import numpy as np

    sch = tvm.tir.Schedule(unit_outer_loop)
    a_loop, _ = sch.get_loops(sch.get_block("B"))
    sch.reverse_compute_at(sch.get_block("C"), a_loop)
    text = sch.mod.script()
    assert "for ax0 in range(3):" in text and "T.where" not in text
    a, c = rand(8), np.zeros(3, "float32")
    run(sch.mod, a, c)
    np.testing.assert_allclose(c, a[:3] * 2 + 1, rtol=1e-6)


def _row_max_rfactor(cols=37, lanes=8):
    """A row max whose 37 columns are split by 8 (guarded) and rfactored into 8 lanes."""
    from tensorize import te

    x = te.placeholder((3, cols), name="x")
    k = te.reduce_axis((0, cols), name="k")
    mx = te.compute((3,), lambda i: te.max(x[i, k], axis=k), name="mx")
    sch = tvm.tir.Schedule(te.create_prim_func([x, mx]))
    block = sch.get_block("mx")
    _, kk = sch.get_loops(block)
    _, inner = sch.split(kk, [None, lanes])
    rf = sch.rfactor(inner, factor_axis=1)
    return sch, block, rf


def test_compute_at_carries_the_moved_blocks_predicate():
    """The rfactor block of a guarded split keeps ``T.where(k_0 * 8 + k_1 < 37)`` when compute_at gives
    it new loops: without it each row's max also read the next row's first three elements."""
    import numpy as np

    sch, block, rf = _row_max_rfactor()
    row = sch.get_loops(block)[0]
    sch.compute_at(rf, row)
    assert "T.where(" in sch.mod.script()
    lane, chunk = sch.get_loops(rf)[1:]
    sch.reorder(chunk, lane)  # the where over the fused lane and chunk iterators is an affine binding
    x = np.arange(3 * 37, dtype="float32").reshape(3, 37)[::-1].copy()  # the next row starts higher
    out = tvm.nd.array(np.zeros(3, "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(x), out)
    np.testing.assert_array_equal(out.numpy(), x.max(axis=1))


def test_compute_at_refuses_a_predicate_it_cannot_rewrite_and_leaves_the_schedule_unchanged():
    """A guard over one iterator's split binding (``vi = i_0 * 8 + i_1``, ``i_0 * 8 + i_1 < 20``) is
    implied by the domain and dropped; a guard coupling it with another loop cannot follow."""
    from tensorize import te

    a = te.placeholder((20, 4), name="a")
    b = te.compute((20, 4), lambda i, j: a[i, j] * 2.0, name="b")
    c = te.compute((20, 4), lambda i, j: b[i, j] + 1.0, name="c")
    sch = tvm.tir.Schedule(te.create_prim_func([a, c]))
    i, _ = sch.get_loops(sch.get_block("b"))
    sch.split(i, [None, 8])
    sch.compute_at(sch.get_block("b"), sch.get_loops(sch.get_block("c"))[0])  # implied guard: fine
    sch2 = tvm.tir.Schedule(te.create_prim_func([a, c]))
    i, j = sch2.get_loops(sch2.get_block("b"))
    fused = sch2.fuse(i, j)
    sch2.split(fused, [None, 7])  # a guard over the fused (i, j): i * 4 + j < 80 after the split
    before = sch2.mod.script()
    with pytest.raises(ScheduleError, match="predicate"):
        sch2.compute_at(sch2.get_block("b"), sch2.get_loops(sch2.get_block("c"))[0])
    assert sch2.mod.script() == before


def test_compute_at_of_an_init_under_its_update_reduction_loop_is_rejected():
    """A decomposed reduction's init computed at the update's loop over k would zero the partial sums at every
    k (a case hypothesis found): rejected, the schedule unchanged; at the spatial loop j it is fine."""
    import numpy as np

    from tests.schedule.test_properties import matmul_relu

    sch = tvm.tir.Schedule(matmul_relu)
    update = sch.get_block("C")
    i, j, k = sch.get_loops(update)
    sch.reverse_compute_at(sch.get_block("D"), k)  # (recomputed at every k: wasteful, still correct)
    init = sch.decompose_reduction(update, i)
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(ScheduleError, match="only writer of buffer 'C'"):
        sch.compute_at(init, k)
    unchanged(sch, before, n)
    sch.compute_at(init, j)
    a = np.random.default_rng(0).standard_normal((12, 16)).astype("float32")
    b = np.random.default_rng(1).standard_normal((16, 10)).astype("float32")
    d = tvm.nd.array(np.zeros((12, 10), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), tvm.nd.array(b), d)
    np.testing.assert_allclose(d.numpy(), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-5)
