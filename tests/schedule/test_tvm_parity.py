"""TVM's argument forms and answers, pinned by TVM's own schedule tests (expected texts from TVM)."""
import pytest

import tensorize as tvm
from tensorize import te
from tensorize.ir.structural import structural_equal, structural_hash
from tensorize.s_tir.schedule.testing import assert_structural_equal_ignore_global_symbol, verify_trace_roundtrip
from tensorize.script import ir as I
from tensorize.script import tir as T


@T.prim_func
def two_elementwise(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def two_elementwise_inlined(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)


def test_primitives_take_block_names():
    sch = tvm.s_tir.Schedule(two_elementwise)
    i, j = sch.get_loops("C")
    assert sch.get(i).extent.value == 16 and sch.get("C").name_hint == "C"
    sch.compute_inline("B")
    assert_structural_equal_ignore_global_symbol(sch.mod["main"], two_elementwise_inlined)
    verify_trace_roundtrip(sch, mod=two_elementwise)
    with pytest.raises(tvm.s_tir.ScheduleError, match="no longer exists|'B'"):
        sch.get_loops("B")


def test_set_scope_and_storage_align_take_buffer_names():
    by_name, by_index = tvm.s_tir.Schedule(two_elementwise), tvm.s_tir.Schedule(two_elementwise)
    by_name.set_scope("B", "B", "shared")
    by_index.set_scope(by_index.get_block("B"), 0, "shared")
    assert structural_equal(by_name.mod, by_index.mod)
    assert by_name.mod["main"].body.block.alloc_buffers[0].scope() == "shared"
    by_name.storage_align("B", "B", axis=0, factor=16, offset=1)
    assert by_name.get("B").annotations["buffer_dim_align"] == [[0, 0, 16, 1]]
    with pytest.raises(tvm.s_tir.ScheduleError, match="does not write a buffer named 'A'"):
        by_name.set_scope("B", "A", "shared")


def test_printed_trace_replays_star_arguments():
    sch = tvm.s_tir.Schedule(two_elementwise)
    i, j = sch.get_loops("B")
    sch.reorder(j, i)
    sch.fuse(j, i)
    lines = sch.trace.as_python()
    assert lines[1] == "sch.reorder(l1, l0)" and lines[2] == "l2 = sch.fuse(l1, l0, preserve_unit_iters=True)"
    verify_trace_roundtrip(sch, mod=two_elementwise, text_format="python")


def test_structural_equal_ignores_block_names_and_buffer_map_order():
    @T.prim_func
    def renamed(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i, j in T.grid(16, 16):
            with T.block("other_name"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)

    renamed = renamed.without_attr("global_symbol")
    inlined = two_elementwise_inlined.without_attr("global_symbol")
    assert structural_equal(renamed, inlined) and structural_hash(renamed) == structural_hash(inlined)
    f = two_elementwise_inlined
    reordered = f.replace(buffer_map=dict(reversed(list(f.buffer_map.items()))))
    assert structural_equal(reordered, f) and structural_hash(reordered) == structural_hash(f)
    swapped = f.replace(params=tuple(reversed(f.params)))  # a different signature still differs
    assert not structural_equal(swapped, f)


def test_builtins_take_dtype_and_let_annotations():
    @I.ir_module(s_tir=True)
    class Module:
        @T.prim_func
        def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
            for i in range(8):
                with T.block("B"):
                    vi = T.axis.spatial(8, i)
                    x: T.let[T.float32] = A[vi] + T.float32(1)
                    B[vi] = T.if_then_else(vi < 4, x, T.exp(A[vi], dtype="float32"), dtype="float32")
                    T.evaluate(T.call_extern("int32", "f", vi))
                    T.evaluate(T.call_extern("f", vi, dtype="int32"))

    text = Module.script()
    assert "T.if_then_else(vi < 4, x, T.exp(A[vi]))" in text
    assert text.count('T.call_extern("int32", "f", vi)') == 2


def test_te_create_prim_func_has_tvm_attrs():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    func = te.create_prim_func([A, B])
    assert func.attrs == {"global_symbol": "main", "tir.noalias": True}
    assert "@T.prim_func\n" in func.script()  # public, as TVM prints a te function


def test_tvm_namespaces():
    assert tvm.tirx is tvm.tir
    from tensorize.s_tir.schedule import InstructionKind
    from tensorize.tir.expr import IntImm

    assert InstructionKind.get("GetLoops").is_pure and not InstructionKind.get("Split").is_pure
    assert IntImm("int32", 3).value == 3


n = tvm.testing.parameter(1, 2)
named = tvm.testing.parameter(by_dict={"one": 1, "two": 2})


def test_testing_parameter(n, named):
    assert n in (1, 2) and named in (1, 2)


def test_srefs_follow_statements_and_copies_have_their_own():
    sch = tvm.s_tir.Schedule(two_elementwise)
    sref = sch.get_sref("B")
    assert sref.stmt.same_as(sch.get("B")) and sch.get_sref(sch.get_block("B")) is sref
    assert sch.state.get_sref(sch.get("B")) is sref
    copy = sch.copy()
    assert copy.get_sref("B") is not sref and copy.get_sref("B").stmt.same_as(sref.stmt)
    i, _ = sch.get_loops("B")
    i0, _ = sch.split(i, [None, 4])
    assert sch.get_sref(i0).stmt.extent.value == 4
    with pytest.raises(IndexError, match="does not refer to a statement of this schedule"):
        copy.get_sref(i0)
    state = tvm.s_tir.ScheduleState(two_elementwise)
    assert isinstance(state.get_sref(two_elementwise.body.block.body[0]), tvm.s_tir.StmtSRef)


def test_q_multiply_shift_parses_and_prints():
    @T.prim_func
    def requant(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = T.q_multiply_shift(A[vi], 1457846997, 31, 0, dtype="int32")

    assert "B[vi] = T.q_multiply_shift(A[vi], 1457846997, 31, 0)" in requant.script()


def test_reindex_rejects_two_reads_of_one_buffer_with_different_indices():
    @T.prim_func
    def multiple_read(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
        for i, j in T.grid(16, 16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vj, vi] + A[vi, vj]

    sch = tvm.s_tir.Schedule(multiple_read)
    with pytest.raises(tvm.s_tir.ScheduleError, match="different indices"):
        sch.reindex("B", "A")
    i, j = multiple_read.body.block.body.loop_var, multiple_read.body.block.body.body.loop_var
    assert structural_equal(i + j, i + j, map_free_vars=False)
    assert not structural_equal(i + j, j + i, map_free_vars=False) and structural_equal(i + j, j + i)


@T.prim_func
def two_writers_one_loop(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128))
    for i in range(128):
        for j in range(64):
            with T.block("B_0"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j in range(64):
            with T.block("B_1"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j + 64)
                B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_compute_at_refuses_a_block_that_shares_its_output_and_its_own_loop():
    # TVM: a scope without compact dataflow ("complete block"), and a loop above the block itself.
    sch = tvm.s_tir.Schedule(two_writers_one_loop)
    before = sch.mod
    with pytest.raises(tvm.s_tir.ScheduleError, match="not a complete block.*'B_1' also writes buffer 'B'"):
        sch.compute_at("B_0", sch.get_loops("C")[0])
    assert sch.mod is before
    sch = tvm.s_tir.Schedule(two_elementwise)
    with pytest.raises(tvm.s_tir.ScheduleError, match="loop i is an ancestor of block 'B'"):
        sch.compute_at("B", sch.get_loops("B")[0])
    assert structural_equal(sch.mod["main"], two_elementwise)


def test_tirx_and_tensor_intrin_name_modules_import():
    from tensorize.s_tir.tensor_intrin.arm_cpu import ARM_DOT_4x4_i8_SDOT_INTRIN
    from tensorize.s_tir.tensor_intrin.x86 import VNNI_DOT_16x4_INTRIN
    from tensorize.tirx.expr import IntImm
    from tensorize import tirx

    assert IntImm is tvm.tir.IntImm and tirx.For is tvm.tir.For
    assert tvm.tir.TensorIntrin.get(VNNI_DOT_16x4_INTRIN) is not None
    assert tvm.tir.TensorIntrin.get(ARM_DOT_4x4_i8_SDOT_INTRIN) is not None


@T.prim_func
def symbolic_copy(a: T.handle, b: T.handle, n: T.int32):
    A = T.match_buffer(a, (128, n))
    B = T.match_buffer(b, (128, n))
    for i, k in T.grid(128, n):
        with T.block("B"):
            vi, vk = T.axis.remap("SS", [i, k])
            B[vi, vk] = A[vi, vk] * T.float32(2)


@T.prim_func
def symbolic_copy_split(a: T.handle, b: T.handle, n: T.int32):
    A = T.match_buffer(a, (128, n))
    B = T.match_buffer(b, (128, n))
    for i, k_0, k_1 in T.grid(128, 10, (n + 9) // 10):
        with T.block("B"):
            vi = T.axis.spatial(128, i)
            vk = T.axis.spatial(n, k_0 * ((n + 9) // 10) + k_1)
            T.where(k_0 * ((n + 9) // 10) + k_1 < n)
            B[vi, vk] = A[vi, vk] * T.float32(2)


@T.prim_func
def symbolic_copy_fused(a: T.handle, b: T.handle, n: T.int32):
    A = T.match_buffer(a, (128, n))
    B = T.match_buffer(b, (128, n))
    for i_k_fused in range(n * 128):
        with T.block("B"):
            vi = T.axis.spatial(128, i_k_fused // n)
            vk = T.axis.spatial(n, i_k_fused % n)
            B[vi, vk] = A[vi, vk] * T.float32(2)


def test_split_and_fuse_take_symbolic_extents():
    # TVM's answers (test_split_symbolic, test_fuse_symbolic): a None factor of a symbolic extent is
    # a ceil-division, and the imperfect split gets a predicate.
    sch = tvm.s_tir.Schedule(symbolic_copy)
    sch.split(sch.get_loops("B")[1], factors=[10, None])
    assert_structural_equal_ignore_global_symbol(sch.mod["main"], symbolic_copy_split)
    verify_trace_roundtrip(sch, mod=symbolic_copy)
    sch = tvm.s_tir.Schedule(symbolic_copy)
    sch.fuse(*sch.get_loops("B"))
    assert_structural_equal_ignore_global_symbol(sch.mod["main"], symbolic_copy_fused)
    sch = tvm.s_tir.Schedule(symbolic_copy)
    with pytest.raises(tvm.s_tir.ScheduleError, match="at most one split factor may be None"):
        sch.split(sch.get_loops("B")[1], factors=[None, None])
    assert structural_equal(sch.mod["main"], symbolic_copy)


@T.prim_func
def copy_3d(A: T.Buffer((4, 8, 16), "float32"), B: T.Buffer((4, 8, 16), "float32")):
    for i, j, k in T.grid(4, 8, 16):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            B[vi, vj, vk] = A[vi, vj, vk]


def test_fuse_middle_binding_is_tvm_form():
    # TVM: the middle iterator of a fused nest is fused % (inner product * extent) // inner product.
    sch = tvm.s_tir.Schedule(copy_3d)
    sch.fuse(*sch.get_loops("B"))
    assert "vj = T.axis.spatial(8, i_j_k_fused % 128 // 16)" in sch.mod.script()


def test_state_replace_rebuilds_the_path_and_moves_srefs():
    # TVM's ScheduleState.replace: the old module is untouched, srefs of rebuilt ancestors follow,
    # the replaced statement's sref is gone, and block_sref_reuse carries a block's sref over.
    state = tvm.s_tir.ScheduleState(two_elementwise)
    old_mod = state.mod
    root = state.mod["main"].body.block
    first, second = root.body[0], root.body[1]
    root_sref, first_sref = state.get_sref(root), state.get_sref(first)
    state.replace(first_sref, tvm.tir.For(first.loop_var, 0, 16, first.kind, tvm.tir.Evaluate(0)))
    assert old_mod["main"].body.block.body[0] is first, "the old module is unchanged"
    assert first_sref.stmt is state.mod["main"].body.block.body[0], "a loop reusing the variable keeps its sref"
    assert root_sref.stmt is state.mod["main"].body.block and root_sref.stmt is not root
    assert state.mod["main"].body.block.body[1] is second, "siblings are shared, not copied"
    inner = state.mod["main"].body.block.body[1].body.body.block
    inner_sref = state.get_sref(inner)
    renamed = inner.replace(name_hint="C2")
    state.replace(inner_sref, renamed, {inner: renamed})
    assert inner_sref.stmt is renamed and state.get_sref(renamed) is inner_sref
    with pytest.raises(ValueError, match="not in the state's current module"):
        state.replace(tvm.s_tir.StmtSRef(first), first)


@T.prim_func
def rowsum(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128,), "float32")):
    for k, i in T.grid(128, 128):
        with T.block("B"):
            vk, vi = T.axis.remap("RS", [k, i])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def rowsum_blockized(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128,), "float32")):
    with T.block("B_o"):
        vko = T.axis.reduce(1, 0)
        vio = T.axis.spatial(1, 0)
        with T.init():
            for i1 in range(128):
                with T.block("B_init"):
                    vi_init = T.axis.spatial(128, i1)
                    B[vi_init] = T.float32(0)
        for i0, i1_1 in T.grid(128, 128):
            with T.block("B"):
                vk, vi = T.axis.remap("RS", [i0, i1_1])
                B[vi] = B[vi] + A[vi, vk]


def test_blockize_keeps_unit_outer_iterators_and_drops_unit_inner_ones():
    # TVM's answer (test_blockize_init_loops): the outer block keeps its unit iterators bound to 0 and
    # the inner block, which lost its init, reads its accumulator.
    sch = tvm.s_tir.Schedule(rowsum)
    sch.blockize(sch.get_loops("B")[0])
    assert_structural_equal_ignore_global_symbol(sch.mod["main"], rowsum_blockized)
    verify_trace_roundtrip(sch, mod=rowsum)
    sch = tvm.s_tir.Schedule(two_elementwise)
    sch.blockize(sch.get_loops("B")[1])
    text = sch.mod.script()
    assert "vj_o = T.axis.spatial(1, 0)" in text and "vi_i" not in text, text


@T.prim_func
def factorized(A: T.Buffer((16, 16, 16), "float32"), B: T.Buffer((16,), "float32")):
    B_rf_local = T.alloc_buffer((16, 16), scope="local")
    for j in T.thread_binding(16, thread="blockIdx.x"):
        for i_o in T.thread_binding(4, thread="threadIdx.x"):
            for i_i, k in T.grid(4, 16):
                with T.block("B_rf"):
                    vi = T.axis.spatial(16, i_o * 4 + i_i)
                    vj, vk = T.axis.remap("SR", [j, k])
                    with T.init():
                        B_rf_local[vi, vj] = T.float32(0)
                    B_rf_local[vi, vj] = B_rf_local[vi, vj] + A[vj, vi, vk]
    for i, k in T.grid(16, 16):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + B_rf_local[vk, vi]


@T.prim_func
def factorized_after_reverse_compute_at(A: T.Buffer((16, 16, 16), "float32"), B: T.Buffer((16,), "float32")):
    B_rf_local = T.alloc_buffer((16, 16), scope="local")
    for j in T.thread_binding(16, thread="blockIdx.x"):
        for i_o in T.thread_binding(4, thread="threadIdx.x"):
            for i_i, k in T.grid(4, 16):
                with T.block("B_rf"):
                    vi = T.axis.spatial(16, i_o * 4 + i_i)
                    vj, vk = T.axis.remap("SR", [j, k])
                    with T.init():
                        B_rf_local[vi, vj] = T.float32(0)
                    B_rf_local[vi, vj] = B_rf_local[vi, vj] + A[vj, vi, vk]
            for k in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(16, j)
                    vk = T.axis.reduce(16, i_o * 4 + k)
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + B_rf_local[vk, vi]


def test_reverse_compute_at_moves_a_reduction_block():
    # TVM's answer (test_reverse_compute_at_factorized).
    sch = tvm.s_tir.Schedule(factorized)
    _, loop, _, _ = sch.get_loops("B_rf")
    sch.reverse_compute_at("B", loop, preserve_unit_loops=False)
    assert_structural_equal_ignore_global_symbol(sch.mod["main"], factorized_after_reverse_compute_at)
    verify_trace_roundtrip(sch, mod=factorized)


@T.prim_func
def access_under_scope(B: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    A = T.alloc_buffer((128, 128))
    for i0, j0 in T.grid(8, 8):
        with T.block("scope"):
            i, j = T.axis.remap("SS", [i0, j0])
            for x, y in T.grid(16, 16):
                with T.block("A"):
                    vi = T.axis.spatial(128, i * 16 + x)
                    vj = T.axis.spatial(128, j * 16 + y)
                    A[vi, vj] = T.float32(1)
            for x, y in T.grid(16, 16):
                with T.block("B"):
                    vi = T.axis.spatial(128, i * 16 + x)
                    vj = T.axis.spatial(128, j * 16 + y)
                    B[vi, vj] = A[vi, vj] + T.float32(1)
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def cache_read_under_scope(B: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    A = T.alloc_buffer((128, 128))
    for i0, j0 in T.grid(8, 8):
        with T.block("scope"):
            i, j = T.axis.remap("SS", [i0, j0])
            A_local = T.alloc_buffer((16, 16), scope="local")
            for x, y in T.grid(16, 16):
                with T.block("A"):
                    vi = T.axis.spatial(128, i * 16 + x)
                    vj = T.axis.spatial(128, j * 16 + y)
                    A[vi, vj] = T.float32(1)
            for x, y in T.grid(16, 16):
                with T.block("A_local"):
                    vi, vj = T.axis.remap("SS", [x, y])
                    A_local[vi, vj] = A[i * 16 + vi, j * 16 + vj]
            for x, y in T.grid(16, 16):
                with T.block("B"):
                    vi = T.axis.spatial(128, i * 16 + x)
                    vj = T.axis.spatial(128, j * 16 + y)
                    B[vi, vj] = A_local[vi - i * 16, vj - j * 16] + T.float32(1)
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2)


def test_cache_inside_a_block_scope_is_shaped_like_its_region():
    # TVM's answer (test_cache_read_under_scope): the cache in a non-root scope holds the 16x16 tile.
    sch = tvm.s_tir.Schedule(access_under_scope)
    sch.cache_read("B", 0, "local")
    assert_structural_equal_ignore_global_symbol(sch.mod["main"], cache_read_under_scope)
    verify_trace_roundtrip(sch, mod=access_under_scope)


@T.prim_func
def grouped_read(A: T.Buffer((8, 4), "float32"), C: T.Buffer((8, 16), "float32")):
    for i, j, k in T.grid(8, 16, 4):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vj // 16 * 4 + vk]


def test_reindex_drops_an_iterator_the_simplified_index_does_not_use():
    # TVM's answer (test_conv2d_reindex_data): vj // 16 is 0 over vj's domain, so vj is no axis.
    sch = tvm.s_tir.Schedule(grouped_read)
    sch.reindex("C", ("read", 0))
    text = sch.mod.script()
    assert "A_reindex = T.alloc_buffer((8, 4))" in text and "A_reindex[vi, vk]" in text, text


def test_cache_write_refuses_an_update_without_init_and_pad_einsum_a_nested_block():
    # After blockize the inner block updates its accumulator with no init: a new write cache would
    # start uninitialized, so cache_write refuses; pad_einsum would outgrow the outer block's regions.
    sch = tvm.s_tir.Schedule(rowsum)
    sch.blockize(sch.get_loops("B")[0])
    sch.blockize(sch.get_loops("B")[0])  # B_o_1 inside B_o: no init of its own
    before = sch.mod
    with pytest.raises(tvm.s_tir.ScheduleError, match="has no init, so a new cache would start uninitialized"):
        sch.cache_write("B", 0, "global")
    with pytest.raises(tvm.s_tir.ScheduleError, match="pad the block before blockize"):
        sch.pad_einsum("B", [128, 256])
    assert sch.mod is before


def test_a_module_of_several_functions_needs_work_on():
    mod = tvm.IRModule({"a": two_elementwise, "b": rowsum})
    sch = tvm.s_tir.Schedule(mod)
    with pytest.raises(ValueError, match="does not know which function to be working on"):
        sch.get_block("B")
    sch.work_on("b")
    assert sch.func_working_on is sch.mod.get_global_var("b")
    assert sch.get("B").name_hint == "B"


def test_as_python_prints_integral_floats_as_tvm_does():
    sch = tvm.s_tir.Schedule(two_elementwise, seed=1)
    sch.sample_categorical([3], [1.0])
    assert sch.trace.as_python()[-1] == "v0 = sch.sample_categorical(candidates=[3], probs=[1], decision=0)"


def test_transform_layout_takes_a_keyword_only_last_index():
    # TVM's `lambda *indices, k: [*indices, k // 4, k % 4]` (test_var_args_sugar).
    sch = tvm.s_tir.Schedule(two_elementwise)
    sch.transform_layout("B", "A", lambda *rest, k: [*rest, k // 4, k % 4])
    assert [int(s) for s in sch.get("B").reads[0].buffer.shape] == [16, 4, 4]


@T.prim_func
def elementwise_int64(A: T.Buffer((T.int64(16), T.int64(16)), "float32"),
                      B: T.Buffer((T.int64(16), T.int64(16)), "float32")):
    for i, j in T.grid(T.int64(16), T.int64(16)):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


def test_transform_block_layout_keeps_int64_iterators():
    # TVM: the lambda's variables take the iterators' dtype, so the new loop is int64 too.
    sch = tvm.s_tir.Schedule(elementwise_int64)
    sch.transform_block_layout("B", lambda i, j: (i * 16 + j,))
    loop = sch.get(sch.get_loops("B")[0])
    assert loop.loop_var.dtype == "int64" and loop.extent.dtype == "int64"
    verify_trace_roundtrip(sch, mod=elementwise_int64)


@T.prim_func
def annotated_rowsum(A: T.Buffer((16, 64), "float32"), B: T.Buffer((16,), "float32")):
    for i, k in T.grid(16, 64):
        with T.block("B"):
            T.block_attr({"test_annotation": 1})
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


def test_rfactor_keeps_the_annotations_on_both_blocks():
    # TVM's answer (test_reduction_rfactor_with_annotation).
    sch = tvm.s_tir.Schedule(annotated_rowsum)
    rf = sch.rfactor(sch.get_loops("B")[1], 0)
    assert sch.get(rf).annotations == {"test_annotation": 1}
    assert sch.get("B").annotations == {"test_annotation": 1}


@T.prim_func
def multi_producer_consumer(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32"),
                            D: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)
    for i, j in T.grid(16, 16):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = B[vi, vj] + T.float32(2) + C[vi, vj]


def test_compute_inline_puts_the_producer_reads_where_the_inlined_buffer_was():
    # TVM's answer (test_compute_inline_multi_consumer): D reads [A, C], not [C, A].
    sch = tvm.s_tir.Schedule(multi_producer_consumer)
    sch.compute_inline("B")
    assert [r.buffer.name for r in sch.get("D").reads] == ["A", "C"]


@T.prim_func
def opaque_rows(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(4, 4):
        with T.block("opaque"):
            T.reads(A[i * 4 + j, 0:16])
            T.writes(B[i * 4 + j, 0:16])
            for k in range(16):
                B[i * 4 + j, k] = A[i * 4 + j, k] + T.float32(1)


def test_fuse_substitutes_loop_variables_inside_an_opaque_block():
    # TVM's answer (test_fuse_with_opaque_block): the opaque block's regions and body follow the fuse.
    sch = tvm.s_tir.Schedule(opaque_rows)
    sch.fuse(*sch.get_loops("opaque"))
    text = sch.mod.script()
    assert "T.reads(A[i_j_fused // 4 * 4 + i_j_fused % 4, 0:16])" in text, text
    assert " i " not in text.split("def ")[1].split("for k")[1]


@T.prim_func
def reversed_producer(X: T.Buffer((10, 10), "float32"), Z: T.Buffer((10, 10), "float32")):
    Y = T.alloc_buffer((10, 10))
    for i, j in T.grid(10, 10):
        with T.block("b0"):
            vi, vj = T.axis.remap("SS", [i, j])
            Y[9 - vi, 9 - vj] = X[vi, vj] + T.float32(1)
    for i, j in T.grid(10, 10):
        with T.block("b1"):
            vi, vj = T.axis.remap("SS", [i, j])
            Z[vi, vj] = Y[vj, vi] + T.float32(2)


def test_compute_at_solves_a_reversed_index():
    # TVM's answer (test_compute_at_rev_iter): Y[9 - vi, 9 - vj] needed at row vj = i gives vj = 9 - i.
    import numpy as np

    sch = tvm.s_tir.Schedule(reversed_producer)
    sch.compute_at("b0", sch.get_loops("b1")[0])
    text = sch.mod.script()
    assert "vj = T.axis.spatial(10, 9 - i)" in text, text
    x = np.random.default_rng(0).random((10, 10), dtype="float32")
    z = tvm.nd.array(np.zeros((10, 10), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(x), z)
    np.testing.assert_allclose(z.numpy(), (x + 1)[::-1, ::-1].T + 2, rtol=1e-6)


@T.prim_func
def unit_outer(A: T.Buffer((1, 8), "float32"), C: T.Buffer((1, 8), "float32")):
    B = T.alloc_buffer((1, 8))
    for i, j in T.grid(1, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(1, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_compute_at_binds_a_unit_loop_iterator_to_its_constant():
    # TVM's answer (test_compute_at_to_index): under a loop of extent 1 the iterator is bound to 0.
    sch = tvm.s_tir.Schedule(unit_outer)
    sch.compute_at("B", sch.get_loops("C")[0])
    assert "vi = T.axis.spatial(1, 0)" in sch.mod.script()


@T.prim_func
def static_bound(A: T.Buffer((32, 1), "float32"), C: T.Buffer((32, 1), "float32")):
    B = T.alloc_buffer((32, 1))
    for i, j in T.grid(32, 1):
        with T.block("B"):
            vi = T.axis.spatial(32, i)
            vj = T.axis.spatial(1, j)
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(32, 32):
        with T.block("C"):
            vi = T.axis.spatial(32, i)
            vj = T.axis.spatial(1, j)
            T.where(j < 1)
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_compute_at_clips_a_region_to_the_iterator_domain():
    # TVM's answer (test_compute_at_simplify_static_bound): vj's region is its domain [0, 1), not 32 wide.
    sch = tvm.s_tir.Schedule(static_bound)
    sch.compute_at("B", sch.get_loops("C")[0], preserve_unit_loops=True)
    assert "for ax0, ax1 in T.grid(1, 1):" in sch.mod.script()


@T.prim_func
def concat(A: T.Buffer((16,), "float32"), B: T.Buffer((8,), "float32"), D: T.Buffer((24,), "float32")):
    C = T.alloc_buffer((24,))
    for i in range(16):
        with T.block("C_0"):
            vi = T.axis.spatial(16, i)
            C[vi] = A[vi]
    for i in range(8):
        with T.block("C_1"):
            vi = T.axis.spatial(8, i)
            C[vi + 16] = B[vi]
    for i in range(24):
        with T.block("D"):
            vi = T.axis.spatial(24, i)
            D[vi] = C[vi] * T.float32(2)


def test_compute_at_predicates_in_tvm_form():
    # TVM's answer (test_compute_at_concat): the guard of C_1 under D's loop is `16 <= i`.
    sch = tvm.s_tir.Schedule(concat)
    loop = sch.get_loops("D")[0]
    sch.compute_at("C_1", loop)
    sch.compute_at("C_0", loop)
    text = sch.mod.script()
    assert "T.where(i < 16)" in text and "T.where(T.int32(16) <= i)" in text, text


def test_transform_layout_pad_value_must_have_the_buffer_dtype():
    # TVM's answers (test_error_on_wrong_padding_type, test_error_on_non_matching_types).
    sch = tvm.s_tir.Schedule(two_elementwise)
    before = sch.mod
    for pad in (tvm.tir.IntImm("int8", 0), 0):
        with pytest.raises(tvm.s_tir.schedule.schedule.ScheduleError, match="does not match the dtype float32"):
            sch.transform_layout("B", "B", lambda i, j: [i, j // 5, j % 5], pad_value=pad)
    assert sch.mod is before
    assert tvm.s_tir.schedule.state.ScheduleDebugMask.VERIFY_SREF_TREE == 1


def test_get_output_blocks_includes_nested_blocks():
    # TVM's answer (test_get_output_blocks_nested): the blockized block and the block inside it.
    sch = tvm.s_tir.Schedule(two_elementwise)
    sch.blockize(sch.get_loops("C")[0])
    root = sch.get_block("root")
    assert [sch.get(b).name_hint for b in sch.get_output_blocks(root)] == ["C_o", "C"]


@T.prim_func
def subregion_match(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B_sub = T.match_buffer(B[vi, vj], (), offset_factor=1)
            B_sub[()] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_set_scope_reaches_match_buffer_views():
    # TVM's answer (test_set_scope_subregion): the view of B is in the new scope too.
    sch = tvm.s_tir.Schedule(subregion_match)
    sch.set_scope("B", 0, "shared")
    view = sch.get("B").match_buffers[0].buffer
    assert view.scope() == "shared" and sch.get("B").match_buffers[0].source.buffer.scope() == "shared"
