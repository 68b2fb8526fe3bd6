"""blockize."""
import pytest

import tensorize as tvm
from tensorize.schedule import ScheduleError
from tests.schedule._sched_workloads import check_matmul, matmul


def _tiled():
    sch = tvm.tir.Schedule(matmul)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, [None, 16])
    jo, ji = sch.split(j, [None, 16])
    ko, ki = sch.split(k, [None, 16])
    sch.reorder(io, jo, ko, ii, ji, ki)
    return sch, ii


def test_blockize_16x16x16_tile():
    sch, ii = _tiled()
    outer = sch.blockize(ii)
    assert outer.name == "C_o"
    text = sch.mod.script()
    for line in ['with T.block("C_o"):',
                 'vi_o, vj_o, vk_o = T.axis.remap("SSR", [i_0, j_0, k_0])',
                 "T.writes(C[vi_o * 16:vi_o * 16 + 16, vj_o * 16:vj_o * 16 + 16])",
                 'with T.block("C_init"):',
                 'vi_i_init, vj_i_init = T.axis.remap("SS", [i_1, j_1])',
                 "C[vi_o * 16 + vi_i_init, vj_o * 16 + vj_i_init] = T.float32(0.0)",
                 'vi_i, vj_i, vk_i = T.axis.remap("SSR", [i_1, j_1, k_1])']:
        assert line in text, line
    check_matmul(sch.mod)
    # The inner loops keep their handles.
    assert len(sch.get_loops(sch.get_block("C"))) == 3


def test_blockize_loop_with_cache_block_and_reduction():
    sch = tvm.tir.Schedule(matmul)
    c = sch.get_block("C")
    a_local = sch.cache_read(c, 0, "local")
    i = sch.get_loops(c)[0]
    sch.compute_at(a_local, i)
    outer = sch.blockize(i)
    assert outer.name == "outer_A_local_C_"
    text = sch.mod.script()
    assert "T.writes(A_local[0:64, 0:64], C[0:64, 0:64])" in text
    assert "vi_i, vj_i, vk_i = T.axis.remap(\"SSR\", [i, j, k])" in text
    check_matmul(sch.mod)


def _two_stage_fused_rows(split=None):
    from tests.schedule._sched_workloads import two_stage

    sch = tvm.tir.Schedule(two_stage)
    b, c = sch.get_block("B"), sch.get_block("C")
    i, _ = sch.get_loops(c)
    if split:
        i, _ = sch.split(i, [None, split])
    sch.compute_at(b, i)
    return sch, b, c, i


def test_blockize_list_of_blocks_under_common_loop():
    from tests.schedule._sched_workloads import check_two_stage
    import numpy as np

    sch, b, c, i = _two_stage_fused_rows()
    outer = sch.blockize([b, c], preserve_unit_iters=False)
    assert outer.name == "outer_B_C_"
    text = sch.mod.script()
    for line in ['with T.block("outer_B_C_"):', "vi_o = T.axis.spatial(32, i)",
                 "T.reads(A[vi_o, 0:32], B[vi_o, 0:32])", "T.writes(B[vi_o, 0:32], C[vi_o, 0:32])",
                 "vj_i = T.axis.spatial(32, ax0)", "B[vi_o, vj_i] = A[vi_o, vj_i] * T.float32(2.0)",
                 "C[vi_o, vj_i] = B[vi_o, vj_i] + T.float32(1.0)"]:
        assert line in text, line
    check_two_stage(sch.mod)
    a = np.random.default_rng(0).random((32, 32)).astype("float32")
    out = tvm.nd.array(np.zeros((32, 32), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a * 2 + 1, rtol=1e-6)
    assert [l.var.name for l in sch.get_loops(sch.get_block("C"))] == ["j"]  # loops up to the new block


def test_blockize_loop_holding_two_blocks():
    from tests.schedule._sched_workloads import check_two_stage

    sch, b, c, io = _two_stage_fused_rows(split=8)
    ii = sch.get_loops(c)[1]
    del ii
    outer = sch.blockize(io)
    text = sch.mod.script()
    assert 'with T.block("outer_B_C_"):' in text
    assert "T.writes(B[0:32, 0:32], C[0:32, 0:32])" in text
    assert outer.name == "outer_B_C_"
    check_two_stage(sch.mod)


def test_blockize_blocks_errors_leave_schedule_unchanged():
    from tests.schedule._sched_workloads import two_stage

    sch = tvm.tir.Schedule(two_stage)
    b, c = sch.get_block("B"), sch.get_block("C")
    before, n = sch.mod, len(sch.trace)
    # B and C are in different loop nests: their outer parts are the whole domain, fine, but a
    # block listed twice is an error.
    with pytest.raises(ScheduleError, match="listed twice"):
        sch.blockize([b, b])
    assert sch.mod is before and len(sch.trace) == n
