"""reindex_cache_read / reindex_cache_write: TVM's answers (expected texts from TVM's own tests)."""
import pytest

import tensorize as tvm
from tensorize.ir.structural import structural_equal
from tensorize.s_tir.schedule.testing import assert_structural_equal_ignore_global_symbol, verify_trace_roundtrip
from tensorize.script import tir as T


@T.prim_func
def elementwise(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128))
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def elementwise_reindex_cache_read(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128))
    B_shared = T.alloc_buffer((128, 64, 2), scope="shared")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(128, 128):
        with T.block("B_shared"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(B[vi, vj])
            T.writes(B_shared[vj, vi // 2, vi % 2])
            B_shared[vj, vi // 2, vi % 2] = B[vi, vj]
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(B_shared[vj, vi // 2, vi % 2])
            T.writes(C[vi, vj])
            C[vi, vj] = B_shared[vj, vi // 2, vi % 2] + T.float32(1)


@T.prim_func
def reduce(A: T.Buffer((16, 16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i, j, k in T.grid(16, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vj, vk]


@T.prim_func
def reduce_reindex_cache_write(A: T.Buffer((16, 16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    C_shared = T.alloc_buffer((16, 16), scope="shared")
    for i, j, k in T.grid(16, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vj, vk])
            T.writes(C_shared[vj, vi])
            with T.init():
                C_shared[vj, vi] = T.float32(0)
            C_shared[vj, vi] = C_shared[vj, vi] + A[vi, vj, vk]
    for i, j in T.grid(16, 16):
        with T.block("C_shared"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(C_shared[vj, vi])
            T.writes(C[vi, vj])
            C[vi, vj] = C_shared[vj, vi]


def test_reindex_cache_read_lays_the_copy_out_by_the_consumer_iterators():
    sch = tvm.s_tir.Schedule(elementwise)
    sch.reindex_cache_read("C", 0, "shared", lambda i, j: (j, i // 2, i % 2))
    assert_structural_equal_ignore_global_symbol(sch.mod["main"], elementwise_reindex_cache_read)
    verify_trace_roundtrip(sch, mod=elementwise)


def test_reindex_cache_write_copies_back_after_the_reduction():
    sch = tvm.s_tir.Schedule(reduce)
    sch.reindex_cache_write("C", 0, "shared", lambda i, j, k: (j, i))
    assert_structural_equal_ignore_global_symbol(sch.mod["main"], reduce_reindex_cache_write)
    verify_trace_roundtrip(sch, mod=reduce)


@pytest.mark.parametrize("prim, index_map, match", [
    ("reindex_cache_read", lambda i, j: j * 2, "not a bijection"),
    ("reindex_cache_write", lambda i, j: i, "not a bijection"),
])
def test_a_map_that_loses_points_is_refused_and_the_schedule_is_unchanged(prim, index_map, match):
    sch = tvm.s_tir.Schedule(elementwise)
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(tvm.s_tir.ScheduleError, match=match):
        getattr(sch, prim)("C" if prim.endswith("read") else "B", 0, "shared", index_map)
    assert sch.mod is before and len(sch.trace) == n
    assert structural_equal(sch.mod["main"], elementwise)
