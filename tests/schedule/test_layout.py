"""transform_layout, transform_block_layout, IndexMap."""
import json

import numpy as np
import pytest

import tensorize as tvm
from tensorize.schedule import ScheduleError
from tests.schedule._sched_workloads import check_matmul, matmul

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
    from tests.schedule._sched_workloads import check_two_stage, two_stage

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


# -- padding ------------------------------------------------------------------------------------
from tensorize.script import tir as T  # noqa: E402


@T.prim_func
def matmul_127(A: T.Buffer((127, 127), "float32"), B: T.Buffer((127, 127), "float32"),
               C: T.Buffer((127, 127), "float32")):
    for i, j, k in T.grid(127, 127, 127):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def matmul_127_padded(A: T.Buffer((127, 127), "float32"), B: T.Buffer((127, 127), "float32"),
                      C: T.Buffer((127, 127), "float32")):
    A_pad = T.alloc_buffer((128, 127))
    C_pad = T.alloc_buffer((128, 127))
    for i0, i1 in T.grid(128, 127):
        with T.block("A_pad"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            A_pad[v0, v1] = T.if_then_else(v0 < 127, A[v0, v1], T.float32(0))
    for i, j, k in T.grid(128, 127, 127):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C_pad[vi, vj] = T.float32(0)
            C_pad[vi, vj] = C_pad[vi, vj] + A_pad[vi, vk] * B[vk, vj]
    for i0, i1 in T.grid(127, 127):
        with T.block("C_pad"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            C[v0, v1] = C_pad[v0, v1]


def _build_and_check_matmul_127(mod):
    rng = np.random.default_rng(0)
    a, b = rng.random((127, 127)).astype("float32"), rng.random((127, 127)).astype("float32")
    c = tvm.nd.array(np.zeros((127, 127), "float32"))
    tvm.build(mod, target="llvm")(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)


def test_pad_einsum_matmul_text_numbers_and_replay():
    sch = tvm.tir.Schedule(matmul_127)
    sch.pad_einsum(sch.get_block("C"), [32, 32, 32])
    text = sch.mod.script()
    for line in ["A_pad = T.alloc_buffer((128, 128))", "B_pad = T.alloc_buffer((128, 128))",
                 "C_pad = T.alloc_buffer((128, 128))",
                 "A_pad[v0, v1] = T.if_then_else(v0 < 127 and v1 < 127, A[v0, v1], T.float32(0.0))",
                 "for i, j, k in T.grid(128, 128, 128):",
                 "C_pad[vi, vj] = C_pad[vi, vj] + A_pad[vi, vk] * B_pad[vk, vj]",
                 "for i0, i1 in T.grid(127, 127):", "C[v0, v1] = C_pad[v0, v1]"]:
        assert line in text, line
    _build_and_check_matmul_127(sch.mod)
    replay = tvm.tir.Schedule(matmul_127)
    tvm.tir.Trace.from_json(json.loads(sch.trace.as_json_str())).apply_to_schedule(replay)
    tvm.ir.assert_structural_equal(replay.mod, sch.mod)


def test_pad_einsum_only_pads_what_changes():
    from tests.schedule._sched_workloads import assert_func_equal

    sch = tvm.tir.Schedule(matmul_127)
    sch.pad_einsum(sch.get_block("C"), [64, 1, 1])
    assert_func_equal(sch.mod, matmul_127_padded)
    _build_and_check_matmul_127(sch.mod)


def test_pad_einsum_then_tile_by_16():
    """The point of padding: a 16x16x16 tile (a tensor intrinsic's shape) now divides every loop."""
    sch = tvm.tir.Schedule(matmul_127)
    c = sch.get_block("C")
    sch.pad_einsum(c, [16, 16, 16])
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, [None, 16])
    jo, ji = sch.split(j, [None, 16])
    ko, ki = sch.split(k, [None, 16])
    sch.reorder(io, jo, ko, ii, ji, ki)
    sch.blockize(ii)
    _build_and_check_matmul_127(sch.mod)


def test_pad_einsum_errors_leave_schedule_unchanged():
    @T.prim_func
    def shifted(A: T.Buffer((33,), "float32"), B: T.Buffer((32,), "float32")):
        for i in range(32):
            with T.block("B"):
                vi = T.axis.spatial(32, i)
                B[vi] = A[vi + 1]

    @T.prim_func
    def max_reduce(A: T.Buffer((30, 30), "float32"), B: T.Buffer((30,), "float32")):
        for i, k in T.grid(30, 30):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(-1e30)
                B[vi] = T.max(B[vi], A[vi, vk])

    sch = tvm.tir.Schedule(shifted)
    b = sch.get_block("B")
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(ScheduleError, match="indexes A on axis 0 with vi \\+ 1|indexes 'A' on axis 0"):
        sch.pad_einsum(b, [16])
    with pytest.raises(ScheduleError, match="has 1 iterators but 2 padding factors"):
        sch.pad_einsum(b, [16, 16])
    assert sch.mod is before and len(sch.trace) == n
    sch = tvm.tir.Schedule(max_reduce)
    b = sch.get_block("B")
    before = sch.mod
    with pytest.raises(ScheduleError, match="padding reduction iterator vk .* would add the padding"):
        sch.pad_einsum(b, [1, 32])
    assert sch.mod is before and len(sch.trace) == 1
    sch.pad_einsum(b, [32, 1])  # padding the spatial iterator is fine for max
    a = np.random.default_rng(0).random((30, 30)).astype("float32")
    out = tvm.nd.array(np.zeros(30, "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a.max(axis=1))


@T.prim_func
def scale_30(A: T.Buffer((30,), "float32"), B: T.Buffer((30,), "float32")):
    for i in range(30):
        with T.block("B"):
            vi = T.axis.spatial(30, i)
            B[vi] = A[vi] * T.float32(2)


@T.prim_func
def scale_30_padded(A: T.Buffer((30,), "float32"), B: T.Buffer((2, 16), "float32")):
    for i0, i1 in T.grid(2, 16):
        with T.block("B"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            B[v0, v1] = T.if_then_else(v0 == 1 and 14 <= v1, T.float32(-1), A[v0 * 16 + v1] * T.float32(2))


def test_transform_layout_pad_value_writes_padding():
    from tests.schedule._sched_workloads import assert_func_equal

    sch = tvm.tir.Schedule(scale_30)
    sch.transform_layout(sch.get_block("B"), ("write", 0), lambda i: (i // 16, i % 16), pad_value=-1.0)
    assert_func_equal(sch.mod, scale_30_padded)  # as TVM: the row-major writer now covers the padding
    a = np.arange(30, dtype="float32")
    out = tvm.nd.array(np.zeros((2, 16), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), out)
    expected = np.full(32, -1.0, "float32")
    expected[:30] = a * 2
    np.testing.assert_array_equal(out.numpy().reshape(-1), expected)
    replay = tvm.tir.Schedule(scale_30)
    tvm.tir.Trace.from_json(json.loads(sch.trace.as_json_str())).apply_to_schedule(replay)
    tvm.ir.assert_structural_equal(replay.mod, sch.mod)


def test_transform_layout_pad_value_function_of_indices_on_intermediate():
    from tests.schedule._sched_workloads import check_two_stage, two_stage

    sch = tvm.tir.Schedule(two_stage)
    sch.transform_layout(sch.get_block("B"), "B", lambda i, j: (i, j // 12, j % 12),
                         pad_value=lambda i, jo, ji: T.Cast("float32", i + ji))
    text = sch.mod.script()
    assert "B = T.alloc_buffer((32, 3, 12))" in text
    assert "T.if_then_else(v_i1 == 2 and T.int32(8) <= v_i2, T.Cast(\"float32\", v_i0 + v_i2)" in text
    check_two_stage(sch.mod)
    a = np.random.default_rng(0).random((32, 32)).astype("float32")
    c = tvm.nd.array(np.zeros((32, 32), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), a * 2 + 1, rtol=1e-6)


def test_transform_layout_padding_errors():
    sch = tvm.tir.Schedule(scale_30)
    b = sch.get_block("B")
    with pytest.raises(ScheduleError, match="adds 2 padding elements; pass pad_value="):
        sch.transform_layout(b, ("write", 0), lambda i: (i // 16, i % 16))
    from tests.schedule._sched_workloads import two_stage

    sch = tvm.tir.Schedule(two_stage)
    b = sch.get_block("B")
    before = sch.mod
    with pytest.raises(ScheduleError, match="mixes several indices"):
        sch.transform_layout(b, "B", lambda i, j: ((i * 32 + j) // 48, (i * 32 + j) % 48),
                             pad_value=0.0)
    assert sch.mod is before and len(sch.trace) == 1


def test_transform_layout_with_a_map_of_the_wrong_arity_is_a_schedule_error_and_changes_nothing():
    """A mapping function of 2 indices for a 4-d buffer (found by the wide property test: a second VNNI
    relayout of an already relaid cache) is refused as a ScheduleError naming the buffer."""
    import tensorize as tvm
    from tensorize import te

    A = te.placeholder((4, 8, 2, 2), name="A")
    B = te.compute((4, 8, 2, 2), lambda i, j, k, l: A[i, j, k, l] * 2.0, name="B")
    sch = tvm.tir.Schedule(te.create_prim_func([A, B]))
    before = sch.mod.script()
    with pytest.raises(tvm.tir.ScheduleError, match="takes 2 indices but the buffer has 4 dimensions"):
        sch.transform_layout(sch.get_block("B"), ("write", 0), lambda j, k: (k, j))
    assert sch.mod.script() == before


@T.prim_func
def unit_rows(A: T.Buffer((1, 128), "float32"), B: T.Buffer((1, 128), "float32")):
    for i, j in T.grid(1, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def unit_rows_swapped(A: T.Buffer((1, 128), "float32"), B: T.Buffer((1, 128), "float32")):
    for ax0, ax1 in T.grid(128, 1):
        with T.block("B"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            B[v1, v0] = A[v1, v0] * T.float32(2)


def test_transform_block_layout_keeps_a_unit_iterator_a_variable():
    """As TVM: the extent-1 iterator stays ``v1`` in the accesses (the inverse keeps unit indices and
    only non-trivial simplifications of the indices are applied), it is not folded to 0."""
    from tests.schedule._sched_workloads import assert_func_equal

    sch = tvm.tir.Schedule(unit_rows)
    sch.transform_block_layout(sch.get_block("B"), lambda i, j: (j, i))
    assert_func_equal(sch.mod, unit_rows_swapped)
    inv = IndexMap.from_func(lambda i, j: (j, i)).inverse([1, 128], keep_unit_indices=True)
    assert str(inv) == "lambda i0, i1: (i1, i0)"
    a = np.random.default_rng(0).random((1, 128)).astype("float32")
    out = tvm.nd.array(np.zeros((1, 128), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a * 2)


@T.prim_func
def copy_and_clear(A: T.Buffer((14,), "int32"), C: T.Buffer((14,), "int32")):
    B = T.alloc_buffer((14,), "int32")
    for i in range(14):
        with T.block("B"):
            vi = T.axis.spatial(14, i)
            B[vi] = A[vi]
            C[vi] = 0
    for i in range(14):
        with T.block("C"):
            vi = T.axis.spatial(14, i)
            C[vi] = C[vi] + B[vi]


@T.prim_func
def copy_and_clear_padded(A: T.Buffer((14,), "int32"), C: T.Buffer((14,), "int32")):
    B = T.alloc_buffer((4, 4), "int32")
    for i in range(14):
        with T.block("B"):
            vi = T.axis.spatial(14, i)
            B[vi // 4, vi % 4] = A[vi]
            C[vi] = 0
    for i0, i1 in T.grid(4, 4):
        with T.block("buffer_B_padding"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            T.where(i0 == 3 and 2 <= i1)
            B[v0, v1] = 7
    for i in range(14):
        with T.block("C"):
            vi = T.axis.spatial(14, i)
            C[vi] = C[vi] + B[vi // 4, vi % 4]


def test_transform_layout_padding_after_a_writer_with_other_stores():
    """A writer that also stores another buffer cannot write the padding itself: a block after it does."""
    from tests.schedule._sched_workloads import assert_func_equal

    sch = tvm.tir.Schedule(copy_and_clear)
    sch.transform_layout(sch.get_block("B"), "B", lambda i: (i // 4, i % 4), pad_value=7)
    assert_func_equal(sch.mod, copy_and_clear_padded)
    a = np.arange(14, dtype="int32")
    c = tvm.nd.array(np.full(14, 5, "int32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), c)
    np.testing.assert_array_equal(c.numpy(), a)


@T.prim_func
def copy_14(A: T.Buffer((14,), "int32"), B: T.Buffer((14,), "int32")):
    for i in range(14):
        with T.block("B"):
            vi = T.axis.spatial(14, i)
            B[vi] = A[vi]


@T.prim_func
def copy_14_input_padded(A: T.Buffer((4, 4), "int32"), B: T.Buffer((14,), "int32")):
    for i0, i1 in T.grid(4, 4):
        with T.block("buffer_A_assumptions"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            T.evaluate(T.assume(not (v0 == 3 and 2 <= v1) or A[v0, v1] == 42))
    for i in range(14):
        with T.block("B"):
            vi = T.axis.spatial(14, i)
            B[vi] = A[vi // 4, vi % 4]


def test_transform_layout_padding_of_an_input_is_assumed():
    """Nothing writes an input: the caller provides its padding, which a first block assumes."""
    from tests.schedule._sched_workloads import assert_func_equal

    sch = tvm.tir.Schedule(copy_14)
    sch.transform_layout(sch.get_block("B"), "A", lambda i: (i // 4, i % 4), pad_value=42)
    assert_func_equal(sch.mod, copy_14_input_padded)


def test_transform_layout_assume_injective_pads_without_pad_value():
    sch = tvm.tir.Schedule(copy_14)
    sch.transform_layout(sch.get_block("B"), "B", lambda i: (i // 4, i % 4), assume_injective_transform=True)
    text = sch.mod.script()
    assert 'B: T.Buffer((4, 4), "int32")' in text
    assert "B[vi // 4, vi % 4] = A[vi]" in text and "padding" not in text


def test_transform_layout_pad_value_errors_leave_schedule_unchanged():
    from tensorize.tir import decl_buffer

    other = decl_buffer((1,), "int32", name="other")
    assert other.ty.dtype == "int32" and [int(s) for s in other.ty.shape] == [1]  # TVM's buffer.ty
    cases = [
        (lambda i, j: other[0], "loads from \\['other'\\]; it may only load from the transformed buffer 'A'"),
        (lambda i, j: (i, j), "has 2 outputs; give one value"),
        (lambda i, j: T.float32(1), "has dtype float32 but buffer 'A' holds int32"),
    ]
    for pad_value, message in cases:
        sch = tvm.tir.Schedule(copy_14)
        before = sch.mod
        with pytest.raises(ScheduleError, match=message):
            sch.transform_layout(sch.get_block("B"), "A", lambda i: (i // 4, i % 4), pad_value=pad_value)
        assert sch.mod is before and len(sch.trace) == 1


@T.prim_func
def double_16(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] * 2


def test_transform_layout_shifted_index_pads_on_both_sides():
    """``(i + 1) // 8, (i + 1) % 8`` on 16 elements gives 3 x 8: one padding element before the data
    and seven after; the writer fills both with the pad value."""
    sch = tvm.tir.Schedule(double_16)
    sch.transform_layout(sch.get_block("B"), "B", lambda i: (0, (i + 1) // 8, (i + 1) % 8), pad_value=-1)
    assert 'B: T.Buffer((1, 3, 8), "int32")' in sch.mod.script()
    a = np.arange(16, dtype="int32")
    out = tvm.nd.array(np.zeros((1, 3, 8), "int32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), out)
    expected = np.full(24, -1, "int32")
    expected[1:17] = a * 2
    np.testing.assert_array_equal(out.numpy().reshape(-1), expected)
