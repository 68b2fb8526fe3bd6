"""transform_layout, transform_block_layout, IndexMap."""
import json

import numpy as np
import pytest

import tensorize as tvm
from tensorize.schedule import ScheduleError
from _sched_workloads import check_matmul, matmul

IndexMap = tvm.tir.IndexMap


def _pack(b):
    return b.reshape(4, 16, 16, 4).transpose(0, 2, 1, 3).copy()


def test_index_map_basics():
    m = IndexMap.from_func(lambda i, j: (i // 16, j // 4, i % 16, j % 4))
    assert str(m) == "lambda i, j: (i // 16, j // 4, i % 16, j % 4)"
    assert [int(x) for x in m.map_shape([64, 64])] == [4, 16, 16, 4]
    inv = m.inverse([64, 64])
    assert str(inv) == "lambda i0, i1, i2, i3: (i0 * 16 + i2, i1 * 4 + i3)"
    i, j = m.initial_indices
    back = inv.map_indices(m.map_indices([i, j]))
    assert back[0] is i and back[1] is j
    assert IndexMap.from_json(json.loads(json.dumps(m.to_json()))).is_equivalent_to(m)
    assert not m.is_equivalent_to(IndexMap.from_func(lambda i, j: (i // 16, j // 4, i % 16, j % 2)))
    with pytest.raises(ValueError, match="not bijective"):
        IndexMap.from_func(lambda i: (i % 4,)).inverse([16])


def test_transform_layout_packs_parameter_and_replays():
    sch = tvm.tir.Schedule(matmul)
    sch.transform_layout(sch.get_block("C"), ("read", 1), lambda n, k: (n // 16, k // 4, n % 16, k % 4))
    text = sch.mod.script()
    assert 'B: T.Buffer((4, 16, 16, 4), "float32")' in text
    assert "A[vi, vk] * B[vj // 16, vk // 4, vj % 16, vk % 4]" in text
    check_matmul(sch.mod, b_layout=_pack)
    assert "index_map=lambda n, k: (n // 16, k // 4, n % 16, k % 4)" in str(sch.trace)
    replay = tvm.tir.Schedule(matmul)
    tvm.tir.Trace.from_json(json.loads(sch.trace.as_json_str())).apply_to_schedule(replay)
    tvm.ir.assert_structural_equal(replay.mod, sch.mod)


def test_transform_layout_by_buffer_name_on_intermediate():
    from _sched_workloads import check_two_stage, two_stage

    sch = tvm.tir.Schedule(two_stage)
    sch.transform_layout(sch.get_block("B"), "B", lambda i, j: (j, i))
    text = sch.mod.script()
    assert "B[vj, vi] = A[vi, vj] * T.float32(2.0)" in text
    check_two_stage(sch.mod)


def test_transform_block_layout_fuses_iterators():
    sch = tvm.tir.Schedule(matmul)
    sch.transform_block_layout(sch.get_block("C"), lambda i, j, k: (i * 64 + j, k))
    text = sch.mod.script()
    assert "for ax0, ax1 in T.grid(4096, 64):" in text
    assert 'v0, v1 = T.axis.remap("SR", [ax0, ax1])' in text
    check_matmul(sch.mod)


def test_transform_layout_errors_leave_schedule_unchanged():
    sch = tvm.tir.Schedule(matmul)
    c = sch.get_block("C")
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(ScheduleError, match="padding"):
        sch.transform_layout(c, ("read", 0), lambda i, k: (i // 48, k, i % 48))
    with pytest.raises(ScheduleError, match="takes 3 indices"):
        sch.transform_layout(c, ("read", 0), IndexMap.from_func(lambda a, b, d: (a, b, d)))
    with pytest.raises(ScheduleError, match="mixes spatial and reduction"):
        sch.transform_block_layout(c, lambda i, j, k: (i * 64 + k, j))
    assert sch.mod is before and len(sch.trace) == n
    np.testing.assert_equal(len(sch.trace), n)
