"""Traces of schedules using the loop, reduction and annotation primitives: Python text, JSON
round trip, replay with changed decisions, and removal of post-processing."""
import json

import tensorize as tvm
from tensorize.schedule import Trace
from tests.workloads import matmul_f32


matmul = matmul_f32(32, 32, 32)


def schedule(sch):
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    fi = sch.sample_perfect_tile(i, n=2, max_innermost_factor=8)
    i0, i1 = sch.split(i, factors=fi)
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i0, j0, k, i1, j1)
    f = sch.fuse(i0, j0)
    sch.parallel(f)
    sch.vectorize(j1)
    sch.annotate(block, "note", "x")
    sch.decompose_reduction(block, k)
    sch.enter_postproc()
    sch.unroll(i1)
    return sch


def test_as_python_text():
    sch = schedule(tvm.tir.Schedule(matmul, seed=1))
    lines = sch.trace.as_python()
    assert lines[0] == 'b0 = sch.get_block(name="C", func_name=None)'
    assert lines[1] == "l1, l2, l3 = sch.get_loops(block=b0)"
    assert lines[2].startswith("v4, v5 = sch.sample_perfect_tile(loop=l1, n=2, max_innermost_factor=8, decision=[")
    assert lines[3] == ("l6, l7 = sch.split(loop=l1, factors=[v4, v5], preserve_unit_iters=True, "
                        "disable_predication=False)")
    assert "sch.reorder(l6, l8, l3, l7, l9)" in lines
    assert "l10 = sch.fuse(l6, l8, preserve_unit_iters=True)" in lines
    assert 'b11 = sch.decompose_reduction(block=b0, loop=l3)' in lines
    assert sch.trace.as_python(remove_postproc=True)[-1] == 'b11 = sch.decompose_reduction(block=b0, loop=l3)'


def test_json_round_trip_replays_to_equal_module():
    sch = schedule(tvm.tir.Schedule(matmul, seed=3))
    text = json.dumps(sch.trace.as_json())
    trace = Trace.from_json(text)
    fresh = tvm.tir.Schedule(matmul)
    trace.apply_to_schedule(fresh)
    tvm.ir.assert_structural_equal(fresh.mod, sch.mod)
    assert fresh.trace.as_json() == sch.trace.as_json()


def test_replay_with_changed_decision_and_remove_postproc():
    sch = schedule(tvm.tir.Schedule(matmul, seed=5))
    trace = Trace.from_json(sch.trace.as_json())
    fresh = tvm.tir.Schedule(matmul)
    trace.apply_to_schedule(fresh, remove_postproc=True,
                            decision_provider=lambda inst, old: [4, 8] if inst.kind == "sample_perfect_tile" else None)
    loops = fresh.get_loops(fresh.get_block("C_update"))
    assert [int(fresh.get(l).extent) for l in loops] == [16, 32, 8, 8]
    assert "T.unroll" not in fresh.mod.script()
    assert "T.unroll" in sch.mod.script()
