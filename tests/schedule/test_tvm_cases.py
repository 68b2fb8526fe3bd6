"""Primitives on the cases TVM's own tests pin: compute_inline refuses opaque accesses (schedule
unchanged), reverse_compute_inline takes repeated reads at one index and reshaping reads, loops with
annotations or thread bindings are neither split nor fused, and parallel/vectorize need affine,
complete-or-reduction blocks."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize.script import tir as T


def run(mod, *arrays):
    nd = [tvm.nd.array(a) for a in arrays]
    tvm.build(mod, target="llvm")(*nd)
    return [x.numpy() for x in nd]


@T.prim_func
def pointer_consumer(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(B[0:16, 0:16])
            T.writes(C[0:16, 0:16])
            T.evaluate(B.access_ptr("r", extent=16))
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def matched_consumer(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            Bb = T.match_buffer(B[vi, vj], (1,))
            C[vi, vj] = Bb[0] + T.float32(1)


@pytest.mark.parametrize("func, user", [(pointer_consumer, "C"), (matched_consumer, "C")])
def test_compute_inline_refuses_opaque_access_and_keeps_the_schedule(func, user):
    sch = tvm.tir.Schedule(func)
    before = sch.mod.script()
    with pytest.raises(tvm.tir.ScheduleError, match=f"block '{user}' accesses B opaquely"):
        sch.compute_inline(sch.get_block("B"))
    assert sch.mod.script() == before and len(sch.trace) == 1


@T.prim_func
def twice_read(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = (B[vi, vj] + T.float32(1)) * B[vi, vj]


def test_reverse_compute_inline_with_two_reads_at_one_index():
    sch = tvm.tir.Schedule(twice_read)
    sch.reverse_compute_inline(sch.get_block("C"))
    assert "C[vi, vj] = (A[vi, vj] * T.float32(2.0) + T.float32(1.0)) * (A[vi, vj] * T.float32(2.0))" \
        in sch.mod.script()
    a = np.random.default_rng(0).random((16, 16), dtype="float32")
    _, c = run(sch.mod, a, np.zeros((16, 16), "float32"))
    np.testing.assert_allclose(c, (a * 2 + 1) * (a * 2), rtol=1e-6)


@T.prim_func
def reshape(A: T.Buffer((16, 16), "float32"), C: T.Buffer((4, 8, 8), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j, k in T.grid(4, 8, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            C[vi, vj, vk] = B[((vi * 8 + vj) * 8 + vk) // 16, ((vi * 8 + vj) * 8 + vk) % 16]


def test_reverse_compute_inline_of_a_reshape_splits_the_flat_index():
    sch = tvm.tir.Schedule(reshape)
    sch.reverse_compute_inline(sch.get_block("C"))
    text = sch.mod.script()
    assert "C[(vj + vi * 16) // 64, (vj + vi * 16) // 8 % 8, (vj + vi * 16) % 8] = A[vi, vj] * T.float32(2.0)" \
        in text
    a = np.random.default_rng(1).random((16, 16), dtype="float32")
    _, c = run(sch.mod, a, np.zeros((4, 8, 8), "float32"))
    np.testing.assert_allclose(c, (a * 2).reshape(4, 8, 8), rtol=1e-6)


@T.prim_func
def shift_in_place(A: T.Buffer((16,), "float32")):
    for i in range(15):
        with T.block("opaque"):
            A[i + 1] = A[i + 1] + A[i]


def test_vectorize_refuses_a_block_that_reads_what_it_writes():
    # TVM infers T.reads(A[i:i + 2]) for a block without T.init, so the block is not complete and its
    # loop cannot be vectorized or parallelized.
    block = shift_in_place.body.block.body.body.block
    assert [str(r) for r in block.reads] == ["A[i:i + 2]"]
    sch = tvm.tir.Schedule(shift_in_place)
    with pytest.raises(tvm.tir.ScheduleError, match="neither a complete nor a reduction block"):
        sch.vectorize(sch.get_loops(sch.get_block("opaque"))[0])


@T.prim_func
def annotated(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i in range(16):
        for j in T.serial(16, annotations={"note": 1}):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj]


def test_split_and_fuse_refuse_annotated_loops():
    sch = tvm.tir.Schedule(annotated)
    i, j = sch.get_loops(sch.get_block("B"))
    with pytest.raises(tvm.tir.ScheduleError, match="loop j has annotations"):
        sch.split(j, [None, 4])
    with pytest.raises(tvm.tir.ScheduleError, match="loop j has annotations"):
        sch.fuse(i, j)
    assert sch.mod.script() == tvm.tir.Schedule(annotated).mod.script()


@T.prim_func
def rowsum_writes_by_reduce_iter(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
    for i, k in T.grid(16, 16):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vk] = T.float32(0)
            B[vk] = B[vk] + A[vi, vk]


@T.prim_func
def rowsum_not_affine(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
    for i, k in T.grid(16, 4):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            vk = T.axis.reduce(16, k * k)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@pytest.mark.parametrize("func, message", [(rowsum_writes_by_reduce_iter, "depends on a reduction iterator"),
                                           (rowsum_not_affine, "not affine in the loops")])
def test_parallel_needs_affine_compact_blocks(func, message):
    sch = tvm.tir.Schedule(func)
    with pytest.raises(tvm.tir.ScheduleError, match=message):
        sch.parallel(sch.get_loops(sch.get_block("B"))[0])


@T.prim_func
def strided_binding(A: T.Buffer((16, 64), "float32"), B: T.Buffer((16, 64), "float32")):
    for i, l in T.grid(16, 4):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            vl = T.axis.spatial(64, l * 16)
            B[vi, vl] = A[vi, vl] * T.float32(2)


@T.prim_func
def square_plus(A: T.Buffer((14, 4), "float32"), B: T.Buffer((14, 4), "float32")):
    for v0, v1, v2 in T.grid(3, 4, 4):
        with T.block("block"):
            i = T.axis.spatial(14, v0 * v0 + v1)
            j = T.axis.spatial(4, v2)
            B[i, j] = A[i, j] + T.float32(1)


def test_reorder_needs_affine_bindings_at_least_under_the_moved_loops():
    sch = tvm.tir.Schedule(strided_binding)
    i, l = sch.get_loops(sch.get_block("B"))
    with pytest.raises(tvm.tir.ScheduleError, match="not affine in the loops being reordered"):
        sch.reorder(l, i)
    sch = tvm.tir.Schedule(square_plus)
    v0, v1, v2 = sch.get_loops(sch.get_block("block"))
    with pytest.raises(tvm.tir.ScheduleError, match="not affine"):
        sch.reorder(v0, v2, v1)  # v0 * v0 moves with the loops
    sch.reorder(v2, v1)  # v0 stays outside: the binding is affine in the loops that move
    assert [sch.get(x).loop_var.name for x in sch.get_loops(sch.get_block("block"))] == ["v0", "v2", "v1"]


@T.prim_func
def init_elsewhere(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i, j, k in T.grid(16, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vj, vi] = C[vj, vi] + A[vi, vk]


@T.prim_func
def parallel_reduce(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        for k in T.parallel(16):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def half_consumed(A: T.Buffer((16, 16), "float32"), D: T.Buffer((32,), "float32")):
    C = T.alloc_buffer((32,))
    for i, k in T.grid(16, 16):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vk]
    for i in range(32):
        with T.block("D"):
            vi = T.axis.spatial(32, i)
            D[vi] = C[vi]


@pytest.mark.parametrize("func, message", [
    (init_elsewhere, "they must write the same element"),
    (parallel_reduce, "rfactor needs the reduction loops serial"),
    (half_consumed, "not a stage pipeline"),
])
def test_rfactor_checks_tvm_conditions_and_keeps_the_schedule(func, message):
    sch = tvm.tir.Schedule(func)
    before = sch.mod.script()
    block = [b for b in ("C", "B") if b in before and f'T.block("{b}")' in before][0]
    with pytest.raises(tvm.tir.ScheduleError, match=message):
        sch.rfactor(sch.get_loops(sch.get_block(block))[-1], 0)
    assert sch.mod.script() == before


def test_rfactor_block_does_not_list_its_accumulator_as_read():
    @T.prim_func
    def rowsum(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
        for i, k in T.grid(16, 16):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]

    sch = tvm.tir.Schedule(rowsum)
    rf = sch.rfactor(sch.get_loops(sch.get_block("B"))[1], 0)
    assert [r.buffer.name for r in sch.get(rf).reads] == ["A"]


def test_removed_handle_cannot_be_used_and_bad_scope_is_refused():
    sch = tvm.tir.Schedule(two_stages_for_handles)
    block = sch.get_block("B")
    sch.remove_rv(block)
    with pytest.raises(IndexError, match="removed from this schedule"):
        sch.get(block)
    assert sch.get(sch.get_block("B")).name_hint == "B"  # a fresh handle works
    with pytest.raises(tvm.tir.ScheduleError, match="set_scope"):
        sch.set_scope(sch.get_block("B"), 0, "test_scope")


@T.prim_func
def two_stages_for_handles(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + T.float32(1)
