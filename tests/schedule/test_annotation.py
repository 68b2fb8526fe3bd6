"""annotate / unannotate on blocks and loops."""
import pytest

import tensorize as tvm
from tensorize.script import tir as T


@T.prim_func
def scale(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] * T.float32(2)


def test_annotate_block_and_loop_roundtrip():
    sch = tvm.tir.Schedule(scale)
    block = sch.get_block("B")
    (i,) = sch.get_loops(block)
    sch.annotate(block, "meta_schedule.unroll_explicit", 16)
    sch.annotate(i, "pragma_auto_unroll_max_step", 64)
    sch.annotate(i, "note", "hello")
    assert sch.get(block).annotations["meta_schedule.unroll_explicit"] == 16
    assert sch.get(i).annotations["note"] == "hello"
    text = sch.mod.script()
    assert 'T.block_attr({"meta_schedule.unroll_explicit": 16})' in text
    assert "pragma_auto_unroll_max_step" in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), sch.mod)
    sch.unannotate(block, "meta_schedule.unroll_explicit")
    sch.unannotate(i, "note")
    assert not sch.get(block).annotations
    assert set(sch.get(i).annotations) == {"pragma_auto_unroll_max_step"}


def test_annotate_with_sampled_value_and_missing_key_error():
    sch = tvm.tir.Schedule(scale)
    block = sch.get_block("B")
    v = sch.sample_categorical([0, 16, 64], [0.0, 1.0, 0.0])
    sch.annotate(block, "unroll", v)
    assert sch.get(block).annotations["unroll"] == 16
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(tvm.tir.ScheduleError, match="no annotation 'missing'"):
        sch.unannotate(block, "missing")
    assert sch.mod is before and len(sch.trace) == n
