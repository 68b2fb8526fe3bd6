"""StorageAlign: the buffer_dim_align annotation of sch.storage_align becomes padded strides."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize.ir import expr as E
from tensorize.ir.functor import post_order_visit
from tensorize.transform.storage_align import aligned_strides
from tests.schedule._sched_workloads import two_stage


def test_aligned_strides():
    assert [int(s) for s in aligned_strides([E.IntImm("int32", 4), E.IntImm("int32", 64)], {0: (32, 1)})] == [65, 1]
    assert [int(s) for s in aligned_strides([E.IntImm("int32", 2), E.IntImm("int32", 3), E.IntImm("int32", 5)],
                                            {1: (4, 2), 0: (8, 0)})] == [24, 6, 1]
    # Already aligned: unchanged.
    assert [int(s) for s in aligned_strides([E.IntImm("int32", 4), E.IntImm("int32", 33)], {0: (32, 1)})] == [33, 1]


def _allocs(mod):
    found = []
    (func,) = mod.functions.values()
    post_order_visit(func.body, lambda n: found.append(n) if type(n).__name__ == "Allocate" else None)
    return found


@pytest.mark.parametrize("factor,offset,stride", [(8, 1, 33), (16, 4, 36), (64, 2, 66)])
def test_storage_align_lowers_to_padded_stride(factor, offset, stride):
    sch = tvm.tir.Schedule(two_stage)
    sch.storage_align(sch.get_block("B"), 0, axis=0, factor=factor, offset=offset)
    lowered = tvm.lower(sch.mod)
    text = lowered.script()
    assert f"B_1[i * {stride} + j] = A_1[i * 32 + j] * T.float32(2.0)" in text
    (alloc,) = _allocs(lowered)
    assert [int(e) for e in alloc.extents] == [32 * stride]
    built = tvm.build(sch.mod, target="llvm")
    a = np.random.default_rng(0).random((32, 32)).astype("float32")
    c = tvm.nd.array(np.zeros((32, 32), "float32"))
    built(tvm.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), a * 2 + 1, rtol=1e-6)


def test_without_annotation_nothing_changes():
    (alloc,) = _allocs(tvm.lower(tvm.IRModule({"two_stage": two_stage})))
    assert [int(e) for e in alloc.extents] == [32 * 32]


def test_compacted_buffer_is_aligned_after_compaction():
    sch = tvm.tir.Schedule(two_stage)
    c = sch.get_block("C")
    i, j = sch.get_loops(c)
    io, ii = sch.split(i, [None, 4])
    sch.compute_at(sch.get_block("B"), io)
    sch.storage_align(sch.get_block("B"), 0, axis=0, factor=16, offset=8)
    lowered = tvm.lower(sch.mod)
    (alloc,) = _allocs(lowered)
    assert [int(e) for e in alloc.extents] == [4 * 40]  # 4 rows of stride 40 (40 % 16 == 8)
    built = tvm.build(sch.mod, target="llvm")
    a = np.random.default_rng(1).random((32, 32)).astype("float32")
    out = tvm.nd.array(np.zeros((32, 32), "float32"))
    built(tvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a * 2 + 1, rtol=1e-6)
