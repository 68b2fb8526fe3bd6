"""cache_read, cache_write, reindex, set_scope, storage_align."""
import pytest

import tensorize as tvm
from tensorize.script import tir as T
from tensorize.schedule import ScheduleError
from _sched_workloads import assert_func_equal, check_matmul, check_two_stage, matmul, two_stage


@T.prim_func
def two_stage_cache_read(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    B = T.alloc_buffer((32, 32))
    A_shared = T.alloc_buffer((32, 32), scope="shared")
    for ax0, ax1 in T.grid(32, 32):
        with T.block("A_shared"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            A_shared[v0, v1] = A[v0, v1]
    for i, j in T.grid(32, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A_shared[vi, vj] * T.float32(2)
    for i, j in T.grid(32, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_cache_read_structure_and_numbers():
    sch = tvm.tir.Schedule(two_stage)
    rv = sch.cache_read(sch.get_block("B"), 0, "shared")
    assert rv.name == "A_shared"
    assert_func_equal(sch.mod, two_stage_cache_read)
    check_two_stage(sch.mod)


def test_cache_write_text_and_reverse_compute_at():
    sch = tvm.tir.Schedule(matmul)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, [None, 16])
    jo, ji = sch.split(j, [None, 16])
    sch.reorder(io, jo, k, ii, ji)
    cl = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(cl, jo)
    text = sch.mod.script()
    assert 'C_local = T.alloc_buffer((64, 64), scope="local")' in text
    assert """            for ax0, ax1 in T.grid(16, 16):
                with T.block("C_local"):
                    v0 = T.axis.spatial(64, i_0 * 16 + ax0)
                    v1 = T.axis.spatial(64, j_0 * 16 + ax1)
                    T.reads(C_local[v0, v1])
                    T.writes(C[v0, v1])
                    C[v0, v1] = C_local[v0, v1]""" in text
    check_matmul(sch.mod)


def test_cache_read_wmma_scope_name():
    sch = tvm.tir.Schedule(matmul)
    rv = sch.cache_read(sch.get_block("C"), 0, "wmma.matrix_a")
    assert rv.name == "A_wmma.matrix_a"
    assert 'scope="wmma.matrix_a"' in sch.mod.script()
    check_matmul(sch.mod)


def test_reindex_read():
    sch = tvm.tir.Schedule(matmul)
    rv = sch.reindex(sch.get_block("C"), ("read", 1))
    assert rv.name == "B_reindex"
    text = sch.mod.script()
    assert "B_reindex[vj, vk] = B[vj, vk]" in text
    assert "A[vi, vk] * B_reindex[vj, vk]" in text
    check_matmul(sch.mod)


def test_reindex_write_and_set_scope():
    sch = tvm.tir.Schedule(two_stage)
    sch.reindex(sch.get_block("C"), ("write", 0))
    sch.set_scope(sch.get_block("B"), 0, "shared")
    text = sch.mod.script()
    assert 'B = T.alloc_buffer((32, 32), scope="shared")' in text
    assert "C[vi, vj] = C_reindex[vi, vj]" in text
    check_two_stage(sch.mod)


def test_storage_align_annotation():
    sch = tvm.tir.Schedule(two_stage)
    sch.storage_align(sch.get_block("B"), 0, axis=0, factor=16, offset=1)
    assert 'T.block_attr({"buffer_dim_align": [[0, 0, 16, 1]]})' in sch.mod.script()
    check_two_stage(sch.mod)


def test_cache_errors_leave_schedule_unchanged():
    sch = tvm.tir.Schedule(two_stage)
    b = sch.get_block("B")
    c = sch.get_block("C")
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(ScheduleError, match="read_buffer_index 3 is out of range"):
        sch.cache_read(b, 3, "shared")
    with pytest.raises(ScheduleError, match="function parameter"):
        sch.set_scope(c, 0, "shared")
    with pytest.raises(ScheduleError, match="offset must be in"):
        sch.storage_align(b, 0, 0, 16, 20)
    assert sch.mod is before and len(sch.trace) == n


@pytest.mark.parametrize("scope", ["shared", "global"])
def test_cache_read_then_compute_at_into_tile_loops(scope):
    """The matmul tiling flow: cache A and B, then move the copies under the tile loops."""
    import numpy as np

    sch = tvm.tir.Schedule(matmul)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, [None, 16])
    jo, ji = sch.split(j, [None, 16])
    ko, ki = sch.split(k, [None, 16])
    sch.reorder(io, jo, ko, ii, ji, ki)
    a_c = sch.cache_read(c, 0, scope)
    sch.compute_at(a_c, ko)
    b_c = sch.cache_read(c, 1, scope)
    sch.compute_at(b_c, jo)
    text = sch.mod.script()
    assert f"v0 = T.axis.spatial(64, i_0 * 16 + ax0)" in text
    assert f"v1 = T.axis.spatial(64, k_0 * 16 + ax1)" in text
    assert f"C[vi, vj] = C[vi, vj] + A_{scope}[vi, vk] * B_{scope}[vj, vk]" in text
    a = np.random.default_rng(0).random((64, 64)).astype("float32")
    b = np.random.default_rng(1).random((64, 64)).astype("float32")
    out = tvm.nd.array(np.zeros((64, 64), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), tvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), a @ b.T, rtol=1e-4)
