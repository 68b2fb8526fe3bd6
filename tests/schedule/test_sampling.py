"""``sample_perfect_tile`` draws as MetaSchedule does: the innermost factor uniformly among the allowed
divisors, then the outer factors; every draw is a perfect tiling within the limit."""
from collections import Counter

import pytest

import tensorize as tvm
from tensorize import te
from tensorize.schedule import ScheduleError


def _loop_of(extent: int):
    A = te.placeholder((extent,), name="A")
    B = te.compute((extent,), lambda i: A[i] * 2.0, name="B")
    sch = tvm.tir.Schedule(te.create_prim_func([A, B]), seed=7)
    return sch, sch.get_loops(sch.get_block("B"))[0]


def test_innermost_factor_is_uniform_over_the_allowed_divisors():
    sch, loop = _loop_of(32)
    draws = [[int(f) for f in sch.sample_perfect_tile(loop, n=4, max_innermost_factor=16)] for _ in range(3000)]
    for tile in draws:
        assert tile[0] * tile[1] * tile[2] * tile[3] == 32 and tile[3] <= 16
    counts = Counter(tile[3] for tile in draws)
    assert set(counts) == {1, 2, 4, 8, 16}
    # uniform: 600 each; uniform over whole tilings would give 1 about 38% and 16 about 4%
    assert all(450 < c < 750 for c in counts.values()), counts


def test_a_limit_no_tiling_meets_is_a_schedule_error():
    sch, loop = _loop_of(17)
    with pytest.raises(ScheduleError, match="at most 4"):
        sch.sample_perfect_tile(loop, n=1, max_innermost_factor=4)
    assert [int(f) for f in sch.sample_perfect_tile(loop, n=2, max_innermost_factor=4)] == [17, 1]


def test_innermost_multiple_of_draws_aligned_innermost_factors_and_is_recorded_only_when_set():
    sch, loop = _loop_of(32)
    draws = [[int(f) for f in sch.sample_perfect_tile(loop, n=4, max_innermost_factor=64, innermost_multiple_of=16)]
             for _ in range(300)]
    assert {tile[3] for tile in draws} == {16, 32}
    assert all(tile[0] * tile[1] * tile[2] * tile[3] == 32 for tile in draws)
    aligned, plain = sch.trace.insts[-1], None
    assert aligned.args["innermost_multiple_of"] == 16
    sch.sample_perfect_tile(loop, n=2, max_innermost_factor=64)
    plain = sch.trace.insts[-1]
    assert "innermost_multiple_of" not in plain.args  # TVM's signature, TVM's trace
    assert "innermost_multiple_of=16" in sch.trace.as_python()[-2]


def test_innermost_multiple_of_falls_back_to_every_divisor_where_none_is_aligned():
    sch, loop = _loop_of(12)
    draws = {int(sch.sample_perfect_tile(loop, n=2, max_innermost_factor=64, innermost_multiple_of=16)[1])
             for _ in range(200)}
    assert draws == {1, 2, 3, 4, 6, 12}
