"""``SkipPaddedTaps`` and ``PartitionPaddedLoops``: convolutions reading their padding inline skip the
taps on the padding and run their interior tiles without guards, with the same results."""
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tensorize as tvm
from tensorize.ir import stmt as S
from tensorize.script import tir as T
from tensorize.transform.partition_padded_loops import partition_padded_loops
from tensorize.transform.skip_padded_taps import skip_padded_taps
from tests.hypothesis_setup import examples


@T.prim_func
def conv1d_inline_pad(x: T.Buffer((64,), "float32"), w: T.Buffer((7, 16), "float32"),
                      y: T.Buffer((32, 16), "float32")):
    T.func_attr({"tir.noalias": True})
    for i0 in range(8):
        for i1, c in T.grid(4, 16):
            y[i0 * 4 + i1, c] = T.float32(0)
        for k in range(7):
            for i1 in range(4):
                for c in T.vectorized(16):
                    y[i0 * 4 + i1, c] = y[i0 * 4 + i1, c] + T.if_then_else(
                        (i0 * 4 + i1) * 2 + k >= 3 and (i0 * 4 + i1) * 2 + k < 67,
                        x[(i0 * 4 + i1) * 2 + k - 3], T.float32(0)) * w[k, c]


@T.prim_func
def conv1d_rows_outermost(x: T.Buffer((64,), "float32"), w: T.Buffer((7, 16), "float32"),
                          y: T.Buffer((32, 16), "float32")):
    T.func_attr({"tir.noalias": True})
    for i in range(32):
        for c in range(16):
            y[i, c] = T.float32(0)
        for k in range(7):
            for c in T.vectorized(16):
                y[i, c] = y[i, c] + T.if_then_else(i * 2 + k >= 3 and i * 2 + k < 67, x[i * 2 + k - 3],
                                                   T.float32(0)) * w[k, c]


@T.prim_func
def overwrite_not_accumulate(x: T.Buffer((16,), "float32"), y: T.Buffer((16,), "float32")):
    for i in range(16):
        for k in range(3):
            y[i] = T.if_then_else(i + k >= 1 and i + k < 17, x[i + k - 1], T.float32(0))


@T.prim_func
def guard_reads_memory(x: T.Buffer((16,), "float32"), lo: T.Buffer((1,), "int32"), y: T.Buffer((16,), "float32")):
    for i in range(16):
        for k in range(3):
            y[i] = y[i] + T.if_then_else(i + k >= lo[0] and i + k < 17, x[i + k - 1], T.float32(0))


def _reference(x, w):
    padded = np.pad(x, 3)
    return np.stack([sum(padded[2 * i + k] * w[k] for k in range(7)) for i in range(32)])


def _loops(func):
    loops = []
    tvm.tir.stmt_functor.post_order_visit(func.body, lambda n: loops.append(n) if isinstance(n, S.For) else None)
    return loops


@pytest.mark.parametrize("func", [conv1d_inline_pad, conv1d_rows_outermost])
@pytest.mark.parametrize("disabled", [[], ["tir.SkipPaddedTaps", "tir.PartitionPaddedLoops"]])
def test_results_match_numpy(func, disabled):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(64).astype("float32"), rng.standard_normal((7, 16)).astype("float32")
    with tvm.transform.PassContext(disabled_pass=disabled):
        rt_mod = tvm.build(func, target="llvm")
    y = tvm.nd.array(np.zeros((32, 16), "float32"))
    rt_mod(tvm.nd.array(x), tvm.nd.array(w), y)
    np.testing.assert_allclose(y.numpy(), _reference(x, w), rtol=1e-5, atol=1e-5)


def test_tap_loop_runs_only_inside_the_padding_guard():
    func = skip_padded_taps(conv1d_rows_outermost)
    k_loop = next(loop for loop in _loops(func) if loop.loop_var.name == "k")
    assert str(k_loop.min) == "T.max(0, 3 - i * 2)"
    assert "T.min(7, 67 - i * 2)" in str(k_loop.extent)
    assert "if_then_else" not in func.script()  # both conjuncts hold inside the narrowed range


@T.prim_func
def conv1d_unit_tile(x: T.Buffer((64,), "float32"), w: T.Buffer((7, 16), "float32"),
                     y: T.Buffer((32, 16), "float32")):
    T.func_attr({"tir.noalias": True})
    for i in range(32):
        for c in range(16):
            y[i, c] = T.float32(0)
        for k in T.unroll(7):
            for i1 in range(1):  # a tile level of extent 1, as the search's tilings leave
                for c in T.vectorized(16):
                    y[i + i1, c] = y[i + i1, c] + T.if_then_else(
                        (i + i1) * 2 + k >= 3 and (i + i1) * 2 + k < 67, x[(i + i1) * 2 + k - 3],
                        T.float32(0)) * w[k, c]


def test_a_unit_loop_gets_one_branch_not_data_dependent_bounds():
    func = skip_padded_taps(conv1d_unit_tile)
    i1 = next(loop for loop in _loops(func) if loop.loop_var.name == "i1")
    assert (str(i1.min), str(i1.extent)) == ("0", "1")  # the loop keeps its static range
    assert isinstance(i1.body, S.IfThenElse) and "if_then_else" not in func.script()
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(64).astype("float32"), rng.standard_normal((7, 16)).astype("float32")
    y = tvm.nd.array(np.zeros((32, 16), "float32"))
    tvm.build(conv1d_unit_tile, target="llvm")(tvm.nd.array(x), tvm.nd.array(w), y)
    np.testing.assert_allclose(y.numpy(), _reference(x, w), rtol=1e-5, atol=1e-5)


def test_tile_loop_splits_into_borders_and_a_guard_free_interior():
    func = partition_padded_loops(conv1d_inline_pad)
    parts = [loop for loop in _loops(func) if loop.loop_var.name == "i0"]
    assert [(int(p.min), int(p.extent)) for p in parts] == [(0, 1), (1, 6), (7, 1)]
    assert "if_then_else" not in parts[1].script()
    assert "if_then_else" in parts[0].script() and "if_then_else" in parts[2].script()


def test_the_partitioned_copies_define_their_own_variables():
    """Border and interior copies of a loop each define their loop (and inner) variables, so the lowered
    function is well formed and ``tvm.build`` takes it as it is, as TVM's does."""
    func = partition_padded_loops(conv1d_inline_pad)
    loops = _loops(func)
    assert len({id(loop.loop_var) for loop in loops}) == len(loops)
    lowered = tvm.lower(conv1d_inline_pad)
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(64).astype("float32"), rng.standard_normal((7, 16)).astype("float32")
    y = np.zeros((32, 16), "float32")
    tvm.build(lowered, target="llvm")(x, w, y)
    np.testing.assert_allclose(y, _reference(x, w), rtol=1e-5, atol=1e-5)


def test_partition_respects_the_statement_limit():
    with tvm.transform.PassContext(config={"tir.PartitionPaddedLoops": {"max_statements": 2}}):
        func = partition_padded_loops(conv1d_inline_pad)
    assert len([loop for loop in _loops(func) if loop.loop_var.name == "i0"]) == 1


def test_a_store_that_is_no_accumulation_keeps_every_tap():
    func = skip_padded_taps(overwrite_not_accumulate)
    k_loop = next(loop for loop in _loops(func) if loop.loop_var.name == "k")
    assert int(k_loop.min) == 0 and int(k_loop.extent) == 3


def test_a_guard_that_reads_memory_bounds_nothing():
    func = skip_padded_taps(guard_reads_memory)
    k_loop = next(loop for loop in _loops(func) if loop.loop_var.name == "k")
    assert int(k_loop.min) == 0 and "lo[0]" in func.script()  # only the upper conjunct narrows the loop


def test_disabled_passes_leave_the_guards():
    with tvm.transform.PassContext(disabled_pass=["tir.SkipPaddedTaps", "tir.PartitionPaddedLoops"]):
        lowered = tvm.lower(conv1d_rows_outermost)["main"]
    k_loop = next(loop for loop in _loops(lowered) if loop.loop_var.name == "k")
    assert int(k_loop.min) == 0 and int(k_loop.extent) == 7


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(length=st.integers(5, 40), kernel=st.integers(1, 7), stride=st.integers(1, 3), pad=st.integers(0, 4),
       dilation=st.integers(1, 2), channels=st.sampled_from([3, 16, 20]))
def test_any_padded_convolution_keeps_its_result(length, kernel, stride, pad, dilation, channels):
    """The graph layer's schedules of a 1-D convolution (streaming ones read the padding inline), lowered
    with the padding passes, against numpy."""
    from experiments.workloads.suite import conv_nd, conv_reference
    from tensorize.graph.build import default_schedule_variants

    assume(length + 2 * pad >= dilation * (kernel - 1) + 1)
    data, weight, out = conv_nd([length], 3, channels, kernel, stride, pad, dilation)
    func = tvm.te.create_prim_func([data, weight, out])
    rng = np.random.default_rng(length * 31 + kernel)
    x = rng.standard_normal((1, length, 3)).astype("float32")
    w = rng.standard_normal((kernel, 3, channels)).astype("float32")
    expected = conv_reference(x, w, stride, pad, dilation)
    for sch in default_schedule_variants(func, "llvm -mcpu=skylake-avx512"):
        rt_mod = tvm.build(sch.mod, target="llvm")
        y = tvm.nd.array(np.zeros(expected.shape, "float32"))
        rt_mod(tvm.nd.array(x), tvm.nd.array(w), y)
        np.testing.assert_allclose(y.numpy(), expected, rtol=1e-4, atol=1e-4)


@T.prim_func
def tiles_with_a_guarded_tail(x: T.Buffer((50, 8), "float32"), y: T.Buffer((50,), "float32")):
    T.func_attr({"tir.noalias": True})
    for r0 in range(9):
        for r1 in range(6):
            if r0 * 6 + r1 < 50:
                y[r0 * 6 + r1] = T.float32(0)
        for k in range(8):
            for r1 in range(6):
                if r0 * 6 + r1 < 50:
                    y[r0 * 6 + r1] = y[r0 * 6 + r1] + x[r0 * 6 + r1, k]


def test_a_guarded_last_tile_is_split_off_and_the_whole_tiles_test_nothing():
    """50 rows in tiles of 6: the 8 whole tiles run without the ``if``; the ninth keeps it."""
    out = partition_padded_loops(tiles_with_a_guarded_tail)
    whole, last = out.body.seq
    assert (int(whole.min), int(whole.extent), int(last.min), int(last.extent)) == (0, 8, 8, 1)
    assert not any(isinstance(n, S.IfThenElse) for n in _nodes(whole))
    assert sum(isinstance(n, S.IfThenElse) for n in _nodes(last)) == 2
    x = np.random.default_rng(0).standard_normal((50, 8)).astype("float32")
    for func in (tiles_with_a_guarded_tail, out):
        y = tvm.nd.array(np.full(50, np.nan, "float32"))
        tvm.build(func, target="llvm")(tvm.nd.array(x), y)
        np.testing.assert_allclose(y.numpy(), x.sum(axis=1), rtol=1e-5)


def _nodes(stmt):
    from tensorize.ir.functor import post_order_visit

    found = []
    post_order_visit(stmt, found.append)
    return found
