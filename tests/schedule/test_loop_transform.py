"""split, fuse, reorder, merge, add_unit_loop: printed programs, numbers, and errors."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize.script import tir as T


@T.prim_func
def add_one(A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32")):
    for i in range(10):
        with T.block("B"):
            vi = T.axis.spatial(10, i)
            B[vi] = A[vi] + T.float32(1)


@T.prim_func
def scale2d(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def two_nests(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] + T.float32(1)


def only_func(mod):
    (name,) = mod.function_names()
    return mod[name]


def assert_func_equal(sch, expected):
    """The schedule's function equals ``expected`` (ignoring the function's name)."""
    func = only_func(sch.mod)
    tvm.ir.assert_structural_equal(func, expected.with_attr("global_symbol", func.attrs.get("global_symbol")))


def run(mod, *arrays):
    f = tvm.build(mod, target="llvm")
    nd = [tvm.nd.array(a) for a in arrays]
    f(*nd)
    return [x.numpy() for x in nd]


def assert_unchanged_on_error(sch, fn, match):
    before_mod, before_len = sch.mod, len(sch.trace)
    with pytest.raises(tvm.tir.ScheduleError, match=match):
        fn()
    assert sch.mod is before_mod
    assert len(sch.trace) == before_len


def body_text(sch):
    return sch.mod.script().split("# with T.block(\"root\"):\n", 1)[1].rstrip("\n") + "\n"


def test_split_non_divisible_adds_predicate_exact_text():
    sch = tvm.tir.Schedule(add_one)
    (i,) = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, factors=[None, 4])
    assert [l.var.name for l in (i0, i1)] == ["i_0", "i_1"]
    assert body_text(sch) == (
        "        for i_0, i_1 in T.grid(3, 4):\n"
        "            with T.block(\"B\"):\n"
        "                vi = T.axis.spatial(10, i_0 * 4 + i_1)\n"
        "                T.where(i_0 * 4 + i_1 < 10)\n"
        "                T.reads(A[vi])\n"
        "                T.writes(B[vi])\n"
        "                B[vi] = A[vi] + T.float32(1.0)\n")
    a = np.arange(10, dtype="float32")
    _, b = run(sch.mod, a, np.zeros(10, "float32"))
    np.testing.assert_allclose(b, a + 1)


def test_split_three_ways_structure_and_unit_iters():
    sch = tvm.tir.Schedule(scale2d)
    i, j = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=[2, 1, 8], preserve_unit_iters=False)

    @T.prim_func
    def expected(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
        for i_0, i_1, i_2, j in T.grid(2, 1, 8, 8):
            with T.block("B"):
                vi = T.axis.spatial(16, i_0 * 8 + i_2)
                vj = T.axis.spatial(8, j)
                B[vi, vj] = A[vi, vj] * T.float32(2)

    assert_func_equal(sch, expected)


def test_split_errors_leave_schedule_unchanged():
    sch = tvm.tir.Schedule(add_one)
    (i,) = sch.get_loops(sch.get_block("B"))
    assert_unchanged_on_error(sch, lambda: sch.split(i, factors=[2, 4]), "smaller than the extent")
    assert_unchanged_on_error(sch, lambda: sch.split(i, factors=[None, None]), "at most one")
    assert_unchanged_on_error(sch, lambda: sch.split(i, factors=[0, 10]), "positive")
    # the handle stays valid after failures
    assert len(sch.split(i, factors=[2, 5])) == 2


def test_fuse_then_split_numbers():
    sch = tvm.tir.Schedule(scale2d)
    i, j = sch.get_loops(sch.get_block("B"))
    f = sch.fuse(i, j)
    assert f.var.name == "i_j_fused"

    @T.prim_func
    def expected(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
        for i_j_fused in range(128):
            with T.block("B"):
                vi = T.axis.spatial(16, i_j_fused // 8)
                vj = T.axis.spatial(8, i_j_fused % 8)
                B[vi, vj] = A[vi, vj] * T.float32(2)

    assert_func_equal(sch, expected)
    sch.split(f, factors=[None, 5])
    a = np.random.rand(16, 8).astype("float32")
    _, b = run(sch.mod, a, np.zeros((16, 8), "float32"))
    np.testing.assert_allclose(b, a * 2)


def test_fuse_needs_consecutive_loops():
    sch = tvm.tir.Schedule(two_nests)
    i, _ = sch.get_loops(sch.get_block("B"))
    _, j2 = sch.get_loops(sch.get_block("C"))
    assert_unchanged_on_error(sch, lambda: sch.fuse(i, j2), "consecutive loops")


def test_reorder_and_errors():
    sch = tvm.tir.Schedule(scale2d)
    i, j = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, factors=[4, 4])
    sch.reorder(j, i1, i0)

    @T.prim_func
    def expected(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
        for j, i_1, i_0 in T.grid(8, 4, 4):
            with T.block("B"):
                vi = T.axis.spatial(16, i_0 * 4 + i_1)
                vj = T.axis.spatial(8, j)
                B[vi, vj] = A[vi, vj] * T.float32(2)

    assert_func_equal(sch, expected)
    a = np.random.rand(16, 8).astype("float32")
    _, b = run(sch.mod, a, np.zeros((16, 8), "float32"))
    np.testing.assert_allclose(b, a * 2)
    assert_unchanged_on_error(sch, lambda: sch.reorder(j, j), "same loop twice")

    sch2 = tvm.tir.Schedule(two_nests)
    ib, _ = sch2.get_loops(sch2.get_block("B"))
    _, jc = sch2.get_loops(sch2.get_block("C"))
    assert_unchanged_on_error(sch2, lambda: sch2.reorder(jc, ib), "different branches")


def test_merge_and_add_unit_loop():
    sch = tvm.tir.Schedule(two_nests)
    ib, jb = sch.get_loops(sch.get_block("B"))
    ic, jc = sch.get_loops(sch.get_block("C"))
    sch.merge(jb, jc)

    @T.prim_func
    def expected(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
        for i, j in T.grid(16, 8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] + T.float32(1)

    assert_func_equal(sch, expected)
    u = sch.add_unit_loop(sch.get_block("C"))
    assert sch.get(u).extent.value == 1
    a = np.random.rand(16, 8).astype("float32")
    _, b, c = run(sch.mod, a, np.zeros((16, 8), "float32"), np.zeros((16, 8), "float32"))
    np.testing.assert_allclose(b, a * 2)
    np.testing.assert_allclose(c, a + 1)


def test_merge_rejects_different_extents():
    sch = tvm.tir.Schedule(two_nests)
    ib, jb = sch.get_loops(sch.get_block("B"))
    ic, jc = sch.get_loops(sch.get_block("C"))
    sch.split(jc, factors=[2, 4])
    ic, jc0, jc1 = sch.get_loops(sch.get_block("C"))
    assert_unchanged_on_error(sch, lambda: sch.merge(jb, jc0), "equal constant extents")
