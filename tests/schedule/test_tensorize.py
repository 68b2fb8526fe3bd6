"""sch.tensorize: matching against desc, the impl with match_buffer views, precise mismatch errors, traces.

These tests use intrinsics written here in plain TensorIR (their impl is ordinary loops), so they run on
any CPU; the hardware intrinsics are tested in tests/intrinsics/.
"""
import numpy as np
import pytest

import tensorize as tvm
from tensorize.ir.tensor_intrin import TensorIntrin
from tensorize.schedule import ScheduleError
from tensorize.script import tir as T


@T.prim_func
def dot4_desc(
    A: T.Buffer((4,), "uint8", offset_factor=1),
    B: T.Buffer((8, 4), "int8", offset_factor=1),
    C: T.Buffer((8,), "int32", offset_factor=1),
) -> None:
    with T.block("root"):
        T.reads(C[0:8], A[0:4], B[0:8, 0:4])
        T.writes(C[0:8])
        for i in T.serial(0, 8):
            for k in T.serial(0, 4):
                with T.block("update"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    C[vi] = C[vi] + T.Cast("int32", A[vk]) * T.Cast("int32", B[vi, vk])


# The same computation, written k-outer with an opaque block: a stand-in "instruction".
@T.prim_func
def dot4_impl(
    A: T.Buffer((4,), "uint8", offset_factor=1),
    B: T.Buffer((8, 4), "int8", offset_factor=1),
    C: T.Buffer((8,), "int32", offset_factor=1),
) -> None:
    with T.block("root"):
        T.reads(C[0:8], A[0:4], B[0:8, 0:4])
        T.writes(C[0:8])
        for k, i in T.grid(4, 8):
            C[i] = C[i] + T.Cast("int32", A[k]) * T.Cast("int32", B[i, k])


DOT4 = "test_dot_8x4_loops"
TensorIntrin.register(DOT4, dot4_desc, dot4_impl, override=True)


def gemm(M, N, K, a_dtype="uint8", packed=True):
    b_shape = (N // 8, K // 4, 8, 4) if packed else (N, K)

    @T.prim_func
    def func(A: T.Buffer((M, K), a_dtype), B: T.Buffer(b_shape, "int8"), C: T.Buffer((M, N), "int32")):
        for i, j, k in T.grid(M, N, K):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0
                if packed:
                    C[vi, vj] = C[vi, vj] + T.Cast("int32", A[vi, vk]) * T.Cast("int32", B[vj // 8, vk // 4, vj % 8, vk % 4])
                else:
                    C[vi, vj] = C[vi, vj] + T.Cast("int32", A[vi, vk]) * T.Cast("int32", B[vj, vk])

    return func


def tiled(func, j_factor=8, k_factor=4):
    sch = tvm.tir.Schedule(func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    j_o, j_i = sch.split(j, [None, j_factor])
    k_o, k_i = sch.split(k, [None, k_factor])
    sch.reorder(j_o, k_o, j_i, k_i)
    return sch, j_i


def run(mod, M, N, K, packed=True, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (M, K), dtype=np.uint8)
    b = rng.integers(-128, 128, (N, K), dtype=np.int8)
    b_arg = np.ascontiguousarray(b.reshape(N // 8, 8, K // 4, 4).transpose(0, 2, 1, 3)) if packed else b
    c = tvm.nd.array(np.full((M, N), -3, "int32"))
    tvm.build(mod, target="llvm")(tvm.nd.array(a), tvm.nd.array(b_arg), c)
    np.testing.assert_array_equal(c.numpy(), a.astype(np.int32) @ b.astype(np.int32).T)


def test_tensorize_loop_gives_match_buffer_views_and_right_numbers():
    sch, j_i = tiled(gemm(16, 16, 16))
    sch.tensorize(j_i, DOT4)
    block = sch.get(sch.get_block("C_o"))
    views = {m.buffer.name: m for m in block.match_buffers}
    assert sorted(views) == ["A", "B", "C"]
    b_region = views["B"].source
    assert b_region.buffer.name == "B" and [int(r.extent) for r in b_region.region] == [1, 1, 8, 4]
    assert block.init is not None, "the outer block keeps its init"
    assert [iv.var.name for iv in block.iter_vars] == ["vi_o", "vj_o", "vk_o"], "it keeps its iterators"
    text = sch.mod.script()
    assert 'T.match_buffer(B[vj_o, vk_o, 0:8, 0:4], (8, 4), "int8"' in text
    assert 'with T.block("update")' not in text
    run(sch.mod, 16, 16, 16)


def test_each_tensorized_block_owns_fresh_impl_buffers():
    sch, j_i = tiled(gemm(8, 16, 8))
    sch.tensorize(j_i, DOT4)
    block = sch.get(sch.get_block("C_o"))
    impl_buffers = {id(TensorIntrin.get(DOT4).impl.buffer_map[p]) for p in TensorIntrin.get(DOT4).impl.params}
    assert not impl_buffers & {id(m.buffer) for m in block.match_buffers}


def test_tensorize_an_already_blockized_block_and_the_trace_replays():
    sch, j_i = tiled(gemm(8, 16, 8))
    outer = sch.blockize(j_i)
    sch.tensorize(outer, DOT4)
    assert [inst.kind if hasattr(inst, "kind") else inst.name for inst in sch.trace.insts][-1] == "tensorize"
    replay = tvm.tir.Schedule(gemm(8, 16, 8))
    sch.trace.apply_to_schedule(replay)
    tvm.ir.assert_structural_equal(replay.mod, sch.mod)
    run(replay.mod, 8, 16, 8)


def test_tensorize_inside_a_larger_tiling_keeps_offsets():
    # The 8x4 tile sits at a moving origin inside C and A; i is tiled and parallel outside.
    sch, j_i = tiled(gemm(32, 32, 32))
    i = sch.get_loops(sch.get_block("C"))[0]
    i_o, i_i = sch.split(i, [None, 4])
    sch.parallel(i_o)
    sch.tensorize(j_i, DOT4)
    run(sch.mod, 32, 32, 32, seed=2)


def assert_fails_unchanged(sch, target, intrin, *fragments):
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(ScheduleError) as info:
        sch.tensorize(target, intrin)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    assert sch.mod is before and len(sch.trace) == n, "a failed tensorize must leave the schedule unchanged"
    return message


def test_dtype_mismatch_is_named():
    sch, j_i = tiled(gemm(8, 16, 8, a_dtype="int8"))
    assert_fails_unchanged(sch, j_i, DOT4, "dtype mismatch: desc reads A as uint8, the block reads A as int8")


def test_extent_mismatch_is_named():
    sch, j_i = tiled(gemm(8, 16, 16), k_factor=8)
    assert_fails_unchanged(sch, j_i, DOT4, "extent mismatch", "desc loop k has extent 4", "has 8")


# The same computation as one opaque call on the tiles' memory: it needs each tile dense.
@T.prim_func
def dot4_pointer_impl(
    A: T.Buffer((4,), "uint8", offset_factor=1),
    B: T.Buffer((8, 4), "int8", offset_factor=1),
    C: T.Buffer((8,), "int32", offset_factor=1),
) -> None:
    with T.block("root"):
        T.reads(C[0:8], A[0:4], B[0:8, 0:4])
        T.writes(C[0:8])
        T.evaluate(T.call_extern("dot4", C.data, C.elem_offset, A.data, A.elem_offset, B.data, B.elem_offset,
                                 dtype="int32"))


DOT4_POINTER = "test_dot_8x4_pointer"
TensorIntrin.register(DOT4_POINTER, dot4_desc, dot4_pointer_impl, override=True)


def test_non_contiguous_tile_is_named_when_the_impl_uses_memory():
    # B not packed: the 8x4 tile's rows are K elements apart, but the impl passes it as dense memory.
    sch, j_i = tiled(gemm(8, 16, 16, packed=False))
    assert_fails_unchanged(sch, j_i, DOT4_POINTER, "inner access of B is not contiguous", "transform_layout")


def test_element_by_element_impl_takes_a_tile_inside_a_larger_buffer():
    # As TVM: an impl that reads its buffers element by element is remapped into the real buffer by
    # lowering, so the unpacked B (tile rows K apart) is fine and the numbers are right.
    sch, j_i = tiled(gemm(8, 16, 16, packed=False))
    sch.tensorize(j_i, DOT4)
    assert 'T.match_buffer(B[vj_o * 8:vj_o * 8 + 8, vk_o * 4:vk_o * 4 + 4], (8, 4), "int8"' in sch.mod.script()
    run(sch.mod, 8, 16, 16, packed=False)


def test_transposed_access_is_not_contiguous():
    @T.prim_func
    def func(A: T.Buffer((8, 8), "uint8"), B: T.Buffer((2, 8, 4), "int8"), C: T.Buffer((8, 8), "int32")):
        for i, j, k in T.grid(8, 8, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                C[vi, vj] = C[vi, vj] + T.Cast("int32", A[vk, vi]) * T.Cast("int32", B[vk // 4, vj, vk % 4])

    sch, j_i = tiled(func)
    assert_fails_unchanged(sch, j_i, DOT4, "inner access of A is not contiguous", "A[")


def test_iterator_kind_and_init_mismatches():
    # j and k swapped: the 8-wide loop is the reduction, the 4-wide one spatial.
    @T.prim_func
    def func(A: T.Buffer((8, 8), "uint8"), B: T.Buffer((8, 8), "int8"), C: T.Buffer((8, 8), "int32")):
        for i, j, k in T.grid(8, 8, 4):
            with T.block("C"):
                vi, vk, vj = T.axis.remap("SRS", [i, j, k])
                C[vi, vj] = C[vi, vj] + T.Cast("int32", A[vi, vk]) * T.Cast("int32", B[vj, vk])

    sch = tvm.tir.Schedule(func)
    _, j, _ = sch.get_loops(sch.get_block("C"))
    assert_fails_unchanged(sch, j, DOT4, "iterator kind mismatch")


def test_unknown_intrinsic_lists_registered_ones():
    sch, j_i = tiled(gemm(8, 16, 8))
    with pytest.raises(ValueError, match="no tensor intrinsic named 'nope'.*test_dot_8x4_loops.*import intrinsics"):
        sch.tensorize(j_i, "nope")


def test_register_refuses_duplicates_and_mismatched_pairs():
    with pytest.raises(ValueError, match="already registered"):
        TensorIntrin.register(DOT4, dot4_desc, dot4_impl)

    @T.prim_func
    def other(A: T.Buffer((4,), "int8", offset_factor=1), B: T.Buffer((8, 4), "int8", offset_factor=1),
              C: T.Buffer((8,), "int32", offset_factor=1)):
        with T.block("root"):
            T.reads(A[0:4], B[0:8, 0:4])
            T.writes(C[0:8])
            for i in range(8):
                C[i] = T.Cast("int32", A[0])

    with pytest.raises(ValueError, match="uint8.*in desc but int8.*in impl"):
        TensorIntrin.register("test_bad_pair", dot4_desc, other)


@T.prim_func
def dot4_annotated_impl(
    A: T.Buffer((4,), "uint8", offset_factor=1),
    B: T.Buffer((8, 4), "int8", offset_factor=1),
    C: T.Buffer((8,), "int32", offset_factor=1),
) -> None:
    with T.block("root"):
        T.reads(C[0:8], A[0:4], B[0:8, 0:4])
        T.writes(C[0:8])
        T.block_attr({"test_annotation": True})
        for k, i in T.grid(4, 8):
            C[i] = C[i] + T.Cast("int32", A[k]) * T.Cast("int32", B[i, k])


DOT4_ANNOTATED = "test_dot_8x4_annotated"
TensorIntrin.register(DOT4_ANNOTATED, dot4_desc, dot4_annotated_impl, override=True)


def test_the_impl_root_annotations_go_to_the_tensorized_block():
    # As TVM (test_tensorize_intrinsic_with_annotation).
    sch, j_i = tiled(gemm(16, 16, 16))
    sch.tensorize(j_i, DOT4_ANNOTATED)
    assert bool(sch.get(sch.get_block("C_o")).annotations["test_annotation"])
    run(sch.mod, 16, 16, 16)
