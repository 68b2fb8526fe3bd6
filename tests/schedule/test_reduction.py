"""decompose_reduction and rfactor."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize.script import tir as T

from tests.schedule._sched_workloads import matmul_16 as matmul


@T.prim_func
def rowmax(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16,), "float32")):
    for i, k in T.grid(16, 32):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(-3.0e38)
            B[vi] = T.max(B[vi], A[vi, vk])


def only_func(mod):
    (name,) = mod.function_names()
    return mod[name]


def assert_func_equal(sch, expected):
    func = only_func(sch.mod)
    tvm.ir.assert_structural_equal(func, expected.with_attr("global_symbol", func.attrs.get("global_symbol")))


def run(mod, *arrays):
    nd = [tvm.nd.array(a) for a in arrays]
    tvm.build(mod, target="llvm")(*nd)
    return [x.numpy() for x in nd]


def test_decompose_reduction_text_and_numbers():
    sch = tvm.tir.Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    init = sch.decompose_reduction(block, j)
    assert init.name == "C_init" and sch.get(block).name_hint == "C_update"

    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i in range(16):
            for j_init in range(16):
                with T.block("C_init"):
                    vi_init, vj_init = T.axis.remap("SS", [i, j_init])
                    T.reads()
                    T.writes(C[vi_init, vj_init])
                    C[vi_init, vj_init] = T.float32(0)
            for j, k in T.grid(16, 16):
                with T.block("C_update"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    assert_func_equal(sch, expected)
    assert "for j_init in range(16):" in sch.mod.script()
    a, b = np.random.rand(16, 16).astype("float32"), np.random.rand(16, 16).astype("float32")
    *_, c = run(sch.mod, a, b, np.full((16, 16), 7, "float32"))
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    # the renamed handle keeps working
    assert len(sch.get_loops(block)) == 3


def test_decompose_reduction_copies_loop_kinds_like_tvm():
    """The init nest's loops keep their kind (TVM's DecomposeReduction copies ``kind``) but not their
    annotations; the init block keeps the block's annotations."""
    sch = tvm.tir.Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    sch.reorder(i, k, j)
    sch.parallel(i)
    sch.vectorize(j)
    sch.annotate(j, "pragma_hint", 1)
    sch.annotate(block, "meta_schedule.tiling_structure", "SSR")
    sch.decompose_reduction(block, k)

    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i in T.parallel(16):
            for j_init in T.vectorized(16):
                with T.block("C_init"):
                    vi_init, vj_init = T.axis.remap("SS", [i, j_init])
                    T.reads()
                    T.writes(C[vi_init, vj_init])
                    T.block_attr({"meta_schedule.tiling_structure": "SSR"})
                    C[vi_init, vj_init] = T.float32(0)
            for k in range(16):
                for j in T.vectorized(16, annotations={"pragma_hint": 1}):
                    with T.block("C_update"):
                        vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                        T.block_attr({"meta_schedule.tiling_structure": "SSR"})
                        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    assert_func_equal(sch, expected)
    assert "for j_init in T.vectorized(16):" in sch.mod.script()
    a, b = np.random.rand(16, 16).astype("float32"), np.random.rand(16, 16).astype("float32")
    c = np.full((16, 16), 7.0, "float32")  # stale values: the init nest must overwrite every element
    (_, _, c) = run(sch.mod, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_decompose_reduction_errors():
    sch = tvm.tir.Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    sch.reorder(k, i, j)
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(tvm.tir.ScheduleError, match="bound to a loop outside"):
        sch.decompose_reduction(block, i)
    assert sch.mod is before and len(sch.trace) == n
    sch.decompose_reduction(block, k)


@pytest.mark.parametrize("factor_axis", [0, 1])
def test_rfactor_sum(factor_axis):
    sch = tvm.tir.Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    k0, k1 = sch.split(k, factors=[None, 4])
    rf = sch.rfactor(k1, factor_axis)
    assert rf.name == "C_rf"
    rf_block = sch.get(rf)
    assert [iv.iter_type for iv in rf_block.iter_vars] == [0, 0, 0, 2]
    assert [int(s) for s in rf_block.writes[0].buffer.shape] == ([4, 16, 16] if factor_axis == 0 else [16, 4, 16])
    a, b = np.random.rand(16, 16).astype("float32"), np.random.rand(16, 16).astype("float32")
    *_, c = run(sch.mod, a, b, np.zeros((16, 16), "float32"))
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    # the printed program parses back to the same program
    tvm.ir.assert_structural_equal(tvm.script.from_source(sch.mod.script()), sch.mod)


def test_rfactor_max_and_errors():
    sch = tvm.tir.Schedule(rowmax)
    block = sch.get_block("B")
    i, k = sch.get_loops(block)
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(tvm.tir.ScheduleError, match="non-reduction iterator"):
        sch.rfactor(i, 0)
    assert sch.mod is before and len(sch.trace) == n
    k0, k1 = sch.split(k, factors=[4, 8])
    sch.rfactor(k0, 0)
    a = np.random.rand(16, 32).astype("float32")
    _, out = run(sch.mod, a, np.zeros(16, "float32"))
    np.testing.assert_allclose(out, a.max(axis=1))


def test_rfactor_rejects_unknown_reducer():
    @T.prim_func
    def weird(A: T.Buffer((16,), "float32"), B: T.Buffer((1,), "float32")):
        for k in range(16):
            with T.block("B"):
                vk = T.axis.reduce(16, k)
                with T.init():
                    B[0] = T.float32(0)
                B[0] = B[0] - A[vk]

    sch = tvm.tir.Schedule(weird)
    (k,) = sch.get_loops(sch.get_block("B"))
    with pytest.raises(tvm.tir.ScheduleError, match="not a sum, product, max or min"):
        sch.rfactor(k, 0)


def test_decompose_reduction_under_a_thread_binding_gives_the_init_loop_its_own_thread_iter_var():
    """As TVM (and as TVMScript parses two ``T.thread_binding`` loops): the init loop and the update loop
    are bound to threadIdx.x through distinct IterVars, so the result equals the script written out."""
    from tensorize.script import tir as T

    @T.prim_func
    def before(A: T.Buffer((32, 16), "float32"), B: T.Buffer((32,), "float32")):
        for t in T.thread_binding(0, 32, thread="threadIdx.x"):
            for r in T.serial(16):
                with T.block("B"):
                    vi, vr = T.axis.remap("SR", [t, r])
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + A[vi, vr]

    @T.prim_func
    def expected(A: T.Buffer((32, 16), "float32"), B: T.Buffer((32,), "float32")):
        for t_init in T.thread_binding(0, 32, thread="threadIdx.x"):
            with T.block("B_init"):
                vi = T.axis.remap("S", [t_init])
                B[vi] = T.float32(0)
        for t in T.thread_binding(0, 32, thread="threadIdx.x"):
            for r in T.serial(16):
                with T.block("B"):
                    vi, vr = T.axis.remap("SR", [t, r])
                    B[vi] = B[vi] + A[vi, vr]

    sch = tvm.tir.Schedule(before)
    t, _ = sch.get_loops("B")
    sch.decompose_reduction("B", t)
    tvm.ir.assert_structural_equal(sch.mod["main"], expected.with_attr("global_symbol", "before"))


# -- rfactor: TVM's loop-nest handling, let-bound updates, spatial-only rfactor blocks ---------------


@T.prim_func
def rowsum_let(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
    for i, ko, ki in T.grid(8, 4, 4):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            vk = T.axis.reduce(16, ko * 4 + ki)
            with T.init():
                B[vi] = T.float32(0)
            v_B: T.let[T.float32] = B[vi] + A[vi, vk]
            B[vi] = v_B


@T.prim_func
def rowsum_let_rfactor(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
    B_rf = T.alloc_buffer((4, 8))
    for i, ko, ki in T.grid(8, 4, 4):
        with T.block("B_rf"):
            vki, vi, vko = T.axis.remap("SSR", [ki, i, ko])
            with T.init():
                B_rf[vki, vi] = T.float32(0)
            B_rf[vki, vi] = B_rf[vki, vi] + A[vi, vko * 4 + vki]
    for i, ki in T.grid(8, 4):
        with T.block("B"):
            vki, vi = T.axis.remap("RS", [ki, i])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + B_rf[vki, vi]


def test_rfactor_reads_a_let_bound_update_as_its_store():
    sch = tvm.tir.Schedule(rowsum_let)
    sch.rfactor(sch.get_loops(sch.get_block("B"))[2], 0)
    assert_func_equal(sch, rowsum_let_rfactor)


@T.prim_func
def colsum_then_copy(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32"), C: T.Buffer((4, 8), "float32")):
    for i in range(4):
        for k in range(8):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
        for j in range(8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj]


@T.prim_func
def colsum_then_copy_rfactor(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32"),
                             C: T.Buffer((4, 8), "float32")):
    B_rf = T.alloc_buffer((4, 8))
    for i, k in T.grid(4, 8):
        with T.block("B_rf"):
            vk, vi = T.axis.remap("SS", [k, i])
            B_rf[vi, vk] = A[vi, vk]
    for i in range(4):
        for k in range(8):
            with T.block("B"):
                vk, vi = T.axis.remap("RS", [k, i])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + B_rf[vi, vk]
        for j in range(8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj]


def test_rfactor_keeps_the_siblings_of_the_block_in_the_original_nest():
    # As TVM: the rfactor block gets a copy of the loop nest, placed first; the write-back block stays
    # in the original nest (next to its siblings). With no reduction iterator left, the rfactor
    # block just stores its values (no init).
    sch = tvm.tir.Schedule(colsum_then_copy)
    sch.rfactor(sch.get_loops(sch.get_block("B"))[1], 1)
    assert_func_equal(sch, colsum_then_copy_rfactor)
    a, b, c = np.arange(32, dtype="float32").reshape(4, 8), np.zeros(4, "float32"), np.zeros((4, 8), "float32")
    _, b, c = run(sch.mod, a, b, c)
    np.testing.assert_allclose(b, a.sum(axis=1))
    np.testing.assert_allclose(c, a)


@T.prim_func
def rowsum_unit_loop(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    for i, k, u in T.grid(4, 8, 1):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


def test_rfactor_of_a_loop_bound_to_no_iterator():
    # TVM accepts it: the rfactor buffer gets an axis of the loop's extent.
    sch = tvm.tir.Schedule(rowsum_unit_loop)
    sch.rfactor(sch.get_loops(sch.get_block("B"))[2], 0)
    a, b = np.arange(32, dtype="float32").reshape(4, 8), np.zeros(4, "float32")
    _, b = run(sch.mod, a, b)
    np.testing.assert_allclose(b, a.sum(axis=1))
