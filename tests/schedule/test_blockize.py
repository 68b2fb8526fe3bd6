"""blockize."""
import pytest

import tensorize as tvm
from tensorize.schedule import ScheduleError
from _sched_workloads import check_matmul, matmul


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


def test_blockize_error_leaves_schedule_unchanged():
    sch = tvm.tir.Schedule(matmul)
    c = sch.get_block("C")
    a_local = sch.cache_read(c, 0, "local")
    i = sch.get_loops(c)[0]
    sch.compute_at(a_local, i)
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(ScheduleError, match="must hold exactly one block"):
        sch.blockize(i)
    assert sch.mod is before and len(sch.trace) == n
    check_matmul(sch.mod)
