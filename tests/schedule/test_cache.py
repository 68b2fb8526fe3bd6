"""cache_read, cache_write, reindex, set_scope, storage_align."""
import pytest

import tensorize as tvm
from tensorize.script import tir as T
from tensorize.schedule import ScheduleError
from tests.schedule._sched_workloads import assert_func_equal, check_matmul, check_two_stage, matmul, rand, two_stage


@T.prim_func
def two_stage_cache_read(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    B = T.alloc_buffer((32, 32))
    A_shared = T.alloc_buffer((32, 32), scope="shared")
    for ax0, ax1 in T.grid(32, 32):
        with T.block("A_shared"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            A_shared[v0, v1] = A[v0, v1]
    for i, j in T.grid(32, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A_shared[vi, vj] * T.float32(2)
    for i, j in T.grid(32, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_cache_read_structure_and_numbers():
    sch = tvm.tir.Schedule(two_stage)
    rv = sch.cache_read(sch.get_block("B"), 0, "shared")
    assert rv.name == "A_shared"
    assert_func_equal(sch.mod, two_stage_cache_read)
    check_two_stage(sch.mod)


def test_cache_write_text_and_reverse_compute_at():
    sch = tvm.tir.Schedule(matmul)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, [None, 16])
    jo, ji = sch.split(j, [None, 16])
    sch.reorder(io, jo, k, ii, ji)
    cl = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(cl, jo)
    text = sch.mod.script()
    assert 'C_local = T.alloc_buffer((64, 64), scope="local")' in text
    assert """            for ax0, ax1 in T.grid(16, 16):
                with T.block("C_local"):
                    v0 = T.axis.spatial(64, i_0 * 16 + ax0)
                    v1 = T.axis.spatial(64, j_0 * 16 + ax1)
                    T.reads(C_local[v0, v1])
                    T.writes(C[v0, v1])
                    C[v0, v1] = C_local[v0, v1]""" in text
    check_matmul(sch.mod)


def test_cache_read_wmma_scope_name():
    sch = tvm.tir.Schedule(matmul)
    rv = sch.cache_read(sch.get_block("C"), 0, "wmma.matrix_a")
    assert rv.name == "A_wmma.matrix_a"
    assert 'scope="wmma.matrix_a"' in sch.mod.script()
    check_matmul(sch.mod)


def test_reindex_read():
    sch = tvm.tir.Schedule(matmul)
    rv = sch.reindex(sch.get_block("C"), ("read", 1))
    assert rv.name == "B_reindex"
    text = sch.mod.script()
    assert "B_reindex[vj, vk] = B[vj, vk]" in text
    assert "A[vi, vk] * B_reindex[vj, vk]" in text
    check_matmul(sch.mod)


def test_reindex_write_and_set_scope():
    sch = tvm.tir.Schedule(two_stage)
    sch.reindex(sch.get_block("C"), ("write", 0))
    sch.set_scope(sch.get_block("B"), 0, "shared")
    text = sch.mod.script()
    assert 'B = T.alloc_buffer((32, 32), scope="shared")' in text
    assert "C[vi, vj] = C_reindex[vi, vj]" in text
    check_two_stage(sch.mod)


def test_storage_align_annotation():
    sch = tvm.tir.Schedule(two_stage)
    sch.storage_align(sch.get_block("B"), 0, axis=0, factor=16, offset=1)
    assert 'T.block_attr({"buffer_dim_align": [[0, 0, 16, 1]]})' in sch.mod.script()
    check_two_stage(sch.mod)


def test_cache_errors_leave_schedule_unchanged():
    sch = tvm.tir.Schedule(two_stage)
    b = sch.get_block("B")
    c = sch.get_block("C")
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(ScheduleError, match="read_buffer_index 3 is out of range"):
        sch.cache_read(b, 3, "shared")
    with pytest.raises(ScheduleError, match="function parameter"):
        sch.set_scope(c, 0, "shared")
    with pytest.raises(ScheduleError, match="offset must be in"):
        sch.storage_align(b, 0, 0, 16, 20)
    assert sch.mod is before and len(sch.trace) == n


@pytest.mark.parametrize("scope", ["shared", "global"])
def test_cache_read_then_compute_at_into_tile_loops(scope):
    """The matmul tiling flow: cache A and B, then move the copies under the tile loops."""
    import numpy as np

    sch = tvm.tir.Schedule(matmul)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, [None, 16])
    jo, ji = sch.split(j, [None, 16])
    ko, ki = sch.split(k, [None, 16])
    sch.reorder(io, jo, ko, ii, ji, ki)
    a_c = sch.cache_read(c, 0, scope)
    sch.compute_at(a_c, ko)
    b_c = sch.cache_read(c, 1, scope)
    sch.compute_at(b_c, jo)
    text = sch.mod.script()
    assert "v0 = T.axis.spatial(64, i_0 * 16 + ax0)" in text
    assert "v1 = T.axis.spatial(64, k_0 * 16 + ax1)" in text
    assert f"C[vi, vj] = C[vi, vj] + A_{scope}[vi, vk] * B_{scope}[vj, vk]" in text
    a = np.random.default_rng(0).random((64, 64)).astype("float32")
    b = np.random.default_rng(1).random((64, 64)).astype("float32")
    out = tvm.nd.array(np.zeros((64, 64), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), tvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), a @ b.T, rtol=1e-4)


# -- placement as TVM: after the writer, under the loops it shares with the first consumer --------
import numpy as np


def _build_run(mod, *arrays):
    """Build with LLVM and run on numpy arrays (outputs updated in place)."""
    nd = [tvm.nd.array(a) for a in arrays]
    tvm.build(mod, target="llvm")(*nd)
    for a, x in zip(arrays, nd):
        a[...] = x.numpy()
    return arrays


@T.prim_func
def two_stage_fused_cache_read(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    B = T.alloc_buffer((32, 32))
    B_shared = T.alloc_buffer((32, 32), scope="shared")
    for i in range(32):
        for ax0 in range(32):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, ax0])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for ax0, ax1 in T.grid(1, 32):
            with T.block("B_shared"):
                v0 = T.axis.spatial(32, i + ax0)
                v1 = T.axis.spatial(32, ax1)
                B_shared[v0, v1] = B[v0, v1]
        for j in range(32):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B_shared[vi, vj] + T.float32(1)


@T.prim_func
def two_stage_fused_cache_write(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    B = T.alloc_buffer((32, 32))
    B_local = T.alloc_buffer((32, 32), scope="local")
    for i in range(32):
        for ax0 in range(32):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, ax0])
                B_local[vi, vj] = A[vi, vj] * T.float32(2)
        for ax0, ax1 in T.grid(1, 32):
            with T.block("B_local"):
                v0 = T.axis.spatial(32, i + ax0)
                v1 = T.axis.spatial(32, ax1)
                B[v0, v1] = B_local[v0, v1]
        for j in range(32):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + T.float32(1)


def _fused_two_stage():
    sch = tvm.tir.Schedule(two_stage)
    b, c = sch.get_block("B"), sch.get_block("C")
    sch.compute_at(b, sch.get_loops(c)[0])
    return sch, b, c


def test_cache_read_after_compute_at_copies_inside_the_shared_loop():
    sch, b, c = _fused_two_stage()
    rv = sch.cache_read(c, 0, "shared")
    assert rv.name == "B_shared"
    assert_func_equal(sch.mod, two_stage_fused_cache_read)
    assert """            for ax0, ax1 in T.grid(1, 32):
                with T.block("B_shared"):
                    v0 = T.axis.spatial(32, i + ax0)
                    v1 = T.axis.spatial(32, ax1)
                    T.reads(B[v0, v1])
                    T.writes(B_shared[v0, v1])
                    B_shared[v0, v1] = B[v0, v1]
            for j in range(32):""" in sch.mod.script()
    check_two_stage(sch.mod)


def test_cache_write_after_compute_at_copies_back_before_the_consumer():
    sch, b, c = _fused_two_stage()
    rv = sch.cache_write(b, 0, "local")
    assert rv.name == "B_local"
    assert_func_equal(sch.mod, two_stage_fused_cache_write)
    check_two_stage(sch.mod)


@T.prim_func
def multi_consumer(X: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"), C: T.Buffer((128,), "float32")):
    A = T.alloc_buffer((128,))
    for i in range(8):
        for j in range(16):
            with T.block("A"):
                vi = T.axis.spatial(128, i * 16 + j)
                A[vi] = X[vi] + T.float32(1)
        for j in range(16):
            with T.block("B"):
                vi = T.axis.spatial(128, i * 16 + j)
                B[vi] = A[vi] * T.float32(2)
    for i in range(128):
        with T.block("C"):
            vi = T.axis.spatial(128, i)
            C[vi] = A[vi] + T.float32(3)


@T.prim_func
def multi_consumer_cache_read(X: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"),
                              C: T.Buffer((128,), "float32")):
    A = T.alloc_buffer((128,))
    A_shared = T.alloc_buffer((128,), scope="shared")
    for i in range(8):
        for j in range(16):
            with T.block("A"):
                vi = T.axis.spatial(128, i * 16 + j)
                A[vi] = X[vi] + T.float32(1)
        for ax0 in range(16):
            with T.block("A_shared"):
                v0 = T.axis.spatial(128, i * 16 + ax0)
                A_shared[v0] = A[v0]
        for j in range(16):
            with T.block("B"):
                vi = T.axis.spatial(128, i * 16 + j)
                B[vi] = A_shared[vi] * T.float32(2)
    for i in range(128):
        with T.block("C"):
            vi = T.axis.spatial(128, i)
            C[vi] = A_shared[vi] + T.float32(3)


@T.prim_func
def multi_consumer_cache_read_c_only(X: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"),
                                     C: T.Buffer((128,), "float32")):
    A = T.alloc_buffer((128,))
    A_shared = T.alloc_buffer((128,), scope="shared")
    for i in range(8):
        for j in range(16):
            with T.block("A"):
                vi = T.axis.spatial(128, i * 16 + j)
                A[vi] = X[vi] + T.float32(1)
        for j in range(16):
            with T.block("B"):
                vi = T.axis.spatial(128, i * 16 + j)
                B[vi] = A[vi] * T.float32(2)
    for ax0 in range(128):
        with T.block("A_shared"):
            v0 = T.axis.spatial(128, ax0)
            A_shared[v0] = A[v0]
    for i in range(128):
        with T.block("C"):
            vi = T.axis.spatial(128, i)
            C[vi] = A_shared[vi] + T.float32(3)


@T.prim_func
def multi_consumer_cache_write(X: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"),
                               C: T.Buffer((128,), "float32")):
    A = T.alloc_buffer((128,))
    A_local = T.alloc_buffer((128,), scope="local")
    for i in range(8):
        for j in range(16):
            with T.block("A"):
                vi = T.axis.spatial(128, i * 16 + j)
                A_local[vi] = X[vi] + T.float32(1)
        for ax0 in range(16):
            with T.block("A_local"):
                v0 = T.axis.spatial(128, i * 16 + ax0)
                A[v0] = A_local[v0]
        for j in range(16):
            with T.block("B"):
                vi = T.axis.spatial(128, i * 16 + j)
                B[vi] = A[vi] * T.float32(2)
    for i in range(128):
        with T.block("C"):
            vi = T.axis.spatial(128, i)
            C[vi] = A[vi] + T.float32(3)


@T.prim_func
def multi_consumer_cache_write_b_reads_cache(X: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"),
                                             C: T.Buffer((128,), "float32")):
    A = T.alloc_buffer((128,))
    A_local = T.alloc_buffer((128,), scope="local")
    for i in range(8):
        for j in range(16):
            with T.block("A"):
                vi = T.axis.spatial(128, i * 16 + j)
                A_local[vi] = X[vi] + T.float32(1)
        for j in range(16):
            with T.block("B"):
                vi = T.axis.spatial(128, i * 16 + j)
                B[vi] = A_local[vi] * T.float32(2)
    for ax0 in range(128):
        with T.block("A_local"):
            v0 = T.axis.spatial(128, ax0)
            A[v0] = A_local[v0]
    for i in range(128):
        with T.block("C"):
            vi = T.axis.spatial(128, i)
            C[vi] = A[vi] + T.float32(3)


def _check_multi_consumer(mod):
    x = np.random.default_rng(0).random(128).astype("float32")
    b, c = np.zeros(128, "float32"), np.zeros(128, "float32")
    _build_run(mod, x, b, c)
    np.testing.assert_allclose(b, (x + 1) * 2, rtol=1e-6)
    np.testing.assert_allclose(c, x + 4, rtol=1e-6)


@pytest.mark.parametrize("primitive, block, consumers, expected", [
    ("cache_read", "B", None, multi_consumer_cache_read),
    ("cache_read", "B", ["C"], multi_consumer_cache_read_c_only),
    ("cache_write", "A", None, multi_consumer_cache_write),
    ("cache_write", "A", ["B"], multi_consumer_cache_write_b_reads_cache),
])
def test_multiple_consumers_under_different_loops(primitive, block, consumers, expected):
    sch = tvm.tir.Schedule(multi_consumer)
    kwargs = {} if consumers is None else {"consumer_blocks": [sch.get_block(n) for n in consumers]}
    getattr(sch, primitive)(sch.get_block(block), 0, "shared" if primitive == "cache_read" else "local", **kwargs)
    assert_func_equal(sch.mod, expected)
    _check_multi_consumer(sch.mod)
    replay = tvm.tir.Schedule(multi_consumer)
    tvm.tir.Trace.from_json(sch.trace.as_json()).apply_to_schedule(replay)
    tvm.ir.assert_structural_equal(replay.mod, sch.mod)


def test_cache_read_accepts_block_and_buffer_names():
    sch = tvm.tir.Schedule(multi_consumer)
    sch.cache_read("C", "A", "shared", consumer_blocks=["C"])
    assert_func_equal(sch.mod, multi_consumer_cache_read_c_only)


def _tiled_matmul(k_factor=8):
    sch = tvm.tir.Schedule(matmul)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, [None, 16])
    jo, ji = sch.split(j, [None, 16])
    ko, ki = sch.split(k, [None, k_factor])
    sch.reorder(io, jo, ko, ii, ji, ki)
    return sch, c, (io, jo, ko)


def test_cache_read_of_an_input_goes_to_the_scope_start_then_compute_at_tiles_it():
    sch, c, (io, jo, ko) = _tiled_matmul()
    a_shared = sch.cache_read(c, 0, "shared")
    text = sch.mod.script()
    # An input of the scope is copied whole at the start of the scope, before the tiled nest.
    assert """        A_shared = T.alloc_buffer((64, 64), scope="shared")
        for ax0, ax1 in T.grid(64, 64):
            with T.block("A_shared"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(A[v0, v1])
                T.writes(A_shared[v0, v1])
                A_shared[v0, v1] = A[v0, v1]
        for i_0, j_0, k_0, i_1, j_1, k_1 in T.grid(4, 4, 8, 16, 16, 8):""" in text
    sch.compute_at(a_shared, ko)
    b_shared = sch.cache_read(c, 1, "shared")
    sch.compute_at(b_shared, ko)
    c_local = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(c_local, jo)
    text = sch.mod.script()
    assert """            for k_0 in range(8):
                for ax0, ax1 in T.grid(16, 8):
                    with T.block("A_shared"):
                        v0 = T.axis.spatial(64, i_0 * 16 + ax0)
                        v1 = T.axis.spatial(64, k_0 * 8 + ax1)""" in text
    assert """            for ax0, ax1 in T.grid(16, 16):
                with T.block("C_local"):
                    v0 = T.axis.spatial(64, i_0 * 16 + ax0)
                    v1 = T.axis.spatial(64, j_0 * 16 + ax1)""" in text
    assert "C_local[vi, vj] = C_local[vi, vj] + A_shared[vi, vk] * B_shared[vj, vk]" in text
    a, b = rand(64, 64), np.random.default_rng(5).random((64, 64)).astype("float32")
    out = np.zeros((64, 64), "float32")
    _build_run(sch.mod, a, b, out)
    np.testing.assert_allclose(out, a @ b.T, rtol=1e-4)


def test_cache_read_under_the_reduction_loop_after_compute_at_of_the_consumer_tile():
    """cache_read of an intermediate whose producer was computed at the tile loop: the copy lands
    under that loop, sized to one tile."""
    sch = tvm.tir.Schedule(two_stage)
    b, c = sch.get_block("B"), sch.get_block("C")
    i, j = sch.get_loops(c)
    io, ii = sch.split(i, [None, 8])
    jo, ji = sch.split(j, [None, 8])
    sch.reorder(io, jo, ii, ji)
    sch.compute_at(b, jo)
    sch.cache_read(c, 0, "local")
    text = sch.mod.script()
    assert """            for ax0, ax1 in T.grid(8, 8):
                with T.block("B_local"):
                    v0 = T.axis.spatial(32, i_0 * 8 + ax0)
                    v1 = T.axis.spatial(32, j_0 * 8 + ax1)""" in text
    check_two_stage(sch.mod)
    a, out = rand(32, 32), np.zeros((32, 32), "float32")
    _build_run(sch.mod, a, out)
    np.testing.assert_allclose(out, a * 2 + 1, rtol=1e-6)


def test_cache_read_of_uneven_split_writer_stays_in_bounds():
    sch = tvm.tir.Schedule(two_stage)
    b, c = sch.get_block("B"), sch.get_block("C")
    i, j = sch.get_loops(c)
    io, _ = sch.split(i, [None, 5])
    sch.compute_at(b, io)
    sch.cache_read(c, 0, "shared")
    text = sch.mod.script()
    assert "T.where(i_0 * 5 + ax0 < 32)" in text.split('T.block("B_shared")')[1].split("T.reads")[0]
    tvm.tir.analysis.verify_well_formed(sch.mod)
    check_two_stage(sch.mod)


@T.prim_func
def loop_carried(X: T.Buffer((16,), "float32"), Y: T.Buffer((16,), "float32")):
    A = T.alloc_buffer((16,))
    for i in range(16):
        with T.block("R"):
            vi = T.axis.spatial(16, i)
            Y[vi] = A[T.max(vi - 1, 0)]
        with T.block("W"):
            vi = T.axis.spatial(16, i)
            A[vi] = X[vi]


def test_cache_placement_errors_leave_schedule_unchanged():
    sch = tvm.tir.Schedule(loop_carried)
    r, w = sch.get_block("R"), sch.get_block("W")
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(ScheduleError, match="block 'R' reads 'A' before the copy, which must follow the writer 'W'"):
        sch.cache_read(r, 0, "shared")
    with pytest.raises(ScheduleError, match="reads 'A' in a later iteration of loop i than 'W' writes it"):
        sch.cache_write(w, 0, "local")
    with pytest.raises(ScheduleError, match="unknown storage scope 'sharde'"):
        sch.cache_read(r, 0, "sharde")
    with pytest.raises(ScheduleError, match="consumer block 'W' does not read buffer 'A'"):
        sch.cache_read(r, 0, "shared", consumer_blocks=[w])
    assert sch.mod is before and len(sch.trace) == n


def test_cache_write_needs_a_single_writer():
    sch = tvm.tir.Schedule(matmul)
    c = sch.get_block("C")
    sch.decompose_reduction(c, sch.get_loops(c)[0])
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(ScheduleError, match="expected to be written by a single block, but 2 blocks write it"):
        sch.cache_write(c, 0, "local")
    assert sch.mod is before and len(sch.trace) == n


def test_cache_read_inside_a_blockized_scope_copies_the_scope_region():
    """In a non-root scope block, an input of the scope is copied at the start of the scope body,
    over the region the scope block declares it reads, into a cache shaped like that region (TVM)."""
    sch = tvm.tir.Schedule(matmul)
    c = sch.get_block("C")
    i = sch.get_loops(c)[0]
    io, ii = sch.split(i, [None, 16])
    sch.blockize(ii)
    sch.cache_read(c, "A", "local")
    text = sch.mod.script()
    assert 'A_local = T.alloc_buffer((16, 64), scope="local")' in text
    assert """                for ax0, ax1 in T.grid(16, 64):
                    with T.block("A_local"):
                        v0, v1 = T.axis.remap("SS", [ax0, ax1])
                        T.reads(A[vi_o * 16 + v0, v1])
                        T.writes(A_local[v0, v1])""" in text
    assert "A_local[vi_i, vk_i]" in text
    check_matmul(sch.mod)


def test_cache_copy_made_inside_a_loop_moves_further_with_compute_at():
    sch, b, c = _fused_two_stage()
    b_shared = sch.cache_read(c, 0, "shared")
    sch.compute_at(b_shared, sch.get_loops(c)[1])
    text = sch.mod.script()
    assert """            for j in range(32):
                with T.block("B_shared"):
                    v0, v1 = T.axis.remap("SS", [i, j])""" in text
    check_two_stage(sch.mod)


@T.prim_func
def opaque_copy(A: T.Buffer((32, 32), "float16"), B: T.Buffer((32, 32), "float16")):
    for i in range(2):
        with T.block("opaque"):
            vi = T.axis.spatial(2, i)
            T.reads(A[vi * 16:vi * 16 + 16, 0:32])
            T.writes(B[vi * 16:vi * 16 + 16, 0:32])
            T.evaluate(T.tvm_load_matrix_sync(
                B.data, 16, 16, 16, vi,
                T.tvm_access_ptr(T.type_annotation(dtype="float16"), A.data, vi * 512, 512, 1, dtype="handle"),
                32, "row_major", dtype="handle"))


@T.prim_func
def opaque_copy_cache_read(A: T.Buffer((32, 32), "float16"), B: T.Buffer((32, 32), "float16")):
    A_shared = T.alloc_buffer((32, 32), "float16", scope="shared")
    for ax0, ax1 in T.grid(32, 32):
        with T.block("A_shared"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            A_shared[v0, v1] = A[v0, v1]
    for i in range(2):
        with T.block("opaque"):
            vi = T.axis.spatial(2, i)
            T.reads(A_shared[vi * 16:vi * 16 + 16, 0:32])
            T.writes(B[vi * 16:vi * 16 + 16, 0:32])
            T.evaluate(T.tvm_load_matrix_sync(
                B.data, 16, 16, 16, vi,
                T.tvm_access_ptr(T.type_annotation(dtype="float16"), A_shared.data, vi * 512, 512, 1,
                                 dtype="handle"),
                32, "row_major", dtype="handle"))


def test_cache_read_swaps_the_data_pointer_of_opaque_accesses():
    # As TVM: a consumer that reads A through its data pointer reads the cache's pointer instead.
    sch = tvm.tir.Schedule(opaque_copy)
    sch.cache_read(sch.get_block("opaque"), 0, "shared")
    assert_func_equal(sch.mod["main"], opaque_copy_cache_read)


@T.prim_func
def _inplace_call(data_io: T.Buffer((64,), "int32")):
    for i0 in range(1):
        with T.block("ext_call"):
            T.reads(data_io[0:64])
            T.writes(data_io[0:64])
            T.evaluate(T.call_extern("call_impl", data_io.data, dtype=""))


@T.prim_func
def _inplace_call_cached(data_io: T.Buffer((64,), "int32")):
    data_io_local = T.alloc_buffer((64,), "int32", scope="local")
    for i0 in range(1):
        for ax0 in range(64):
            with T.block("data_io_local"):
                v0 = T.axis.spatial(64, ax0)
                T.reads(data_io[v0])
                T.writes(data_io_local[v0])
                data_io_local[v0] = data_io[v0]
        with T.block("ext_call"):
            T.reads(data_io_local[0:64])
            T.writes(data_io_local[0:64])
            T.evaluate(T.call_extern("call_impl", data_io_local.data, dtype=""))
        for ax0 in range(64):
            with T.block("data_io_local_1"):
                v0 = T.axis.spatial(64, ax0)
                T.reads(data_io_local[v0])
                T.writes(data_io[v0])
                data_io[v0] = data_io_local[v0]


def test_cache_inplace_copies_in_before_and_out_after_the_block():
    sch = tvm.tir.Schedule(_inplace_call)
    copy_in, copy_out = sch.cache_inplace("ext_call", 0, "local")
    assert (sch.get(copy_in).name_hint, sch.get(copy_out).name_hint) == ("data_io_local", "data_io_local_1")
    assert_func_equal(sch.mod, _inplace_call_cached)
    # the copy into the cache reads the input before anything writes it: a cache_read of it goes first
    sch.cache_read(copy_in, 0, "global", [copy_in])
    assert [b.name_hint for b in _block_order(sch)][:2] == ["data_io_global", "data_io_local"]
    fresh = tvm.tir.Schedule(_inplace_call)
    tvm.tir.Trace.from_json(sch.trace.as_json()).apply_to_schedule(fresh)
    tvm.ir.assert_structural_equal(fresh.mod, sch.mod)


def test_cache_inplace_of_a_buffer_the_block_only_reads_is_refused():
    sch = tvm.tir.Schedule(_inplace_call)
    sch.cache_inplace("ext_call", 0, "local")
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(tvm.tir.ScheduleError, match="does not write it.*use cache_read"):
        sch.cache_inplace("data_io_local", 0, "global")
    assert sch.mod is before and len(sch.trace) == n


def _block_order(sch):
    from tensorize.ir.stmt import Block
    from tensorize.ir.functor import post_order_visit

    found = []
    post_order_visit(sch.mod["main"].body, lambda n: found.append(n) if isinstance(n, Block) else None)
    return [b for b in found if b.name_hint != "root"]


@T.prim_func
def _resize(a: T.handle, b: T.handle) -> None:
    A = T.match_buffer(a, (1, 3, 40, 40))
    B = T.match_buffer(b, (1, 3, 80, 80))
    for i0, i1, i2, i3 in T.grid(1, 3, 80, 80):
        with T.block("A"):
            n, c, vi, vj = T.axis.remap("SSSS", [i0, i1, i2, i3])
            B[n, c, vi, vj] = A[n, c, vi // 4 + vj // 4, vj // 2]


def test_cache_index_precomputes_each_index_expression_once():
    import numpy as np

    sch = tvm.tir.Schedule(_resize)
    blocks = sch.cache_index("A", "global")
    assert [sch.get(b).name_hint for b in blocks] == ["index_0", "index_1"]
    text = sch.mod.script()
    assert "index_var_0[v0, v1] = v0 // 4 + v1 // 4" in text and "index_var_1[v0] = v0 // 2" in text
    assert "B[n, c, vi, vj] = A[n, c, index_var_0[vi, vj], index_var_1[vj]]" in text
    a, out = np.random.rand(1, 3, 40, 40).astype("float32"), tvm.nd.array(np.zeros((1, 3, 80, 80), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), out)
    vi, vj = np.meshgrid(np.arange(80), np.arange(80), indexing="ij")
    np.testing.assert_array_equal(out.numpy(), a[:, :, vi // 4 + vj // 4, vj // 2])
    fresh = tvm.tir.Schedule(_resize)
    tvm.tir.Trace.from_json(sch.trace.as_json()).apply_to_schedule(fresh)
    tvm.ir.assert_structural_equal(fresh.mod, sch.mod)


@T.prim_func
def _gather(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32"), B: T.Buffer((126,), "float32")):
    for i in range(126):
        with T.block("B"):
            vi = T.axis.spatial(126, i)
            B[vi] = A[vi // 2] + A[vi // 2 + 1] * C[vi // 2]


def test_cache_index_threshold_caches_only_repeated_subexpressions():
    import numpy as np

    # vi // 2 + 1 occurs once: with cse_thresh 2 it gives way to vi // 2, then seen three times
    sch = tvm.tir.Schedule(_gather)
    assert len(sch.cache_index("B", "global", 2)) == 1
    text = sch.mod.script()
    assert "index_var_0[v0] = v0 // 2" in text and "index_var_1" not in text
    assert "A[index_var_0[vi]] + A[index_var_0[vi] + 1] * C[index_var_0[vi]]" in text
    a, c = np.random.rand(64).astype("float32"), np.random.rand(64).astype("float32")
    out = tvm.nd.array(np.zeros(126, "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), tvm.nd.array(c), out)
    i = np.arange(126)
    np.testing.assert_allclose(out.numpy(), a[i // 2] + a[i // 2 + 1] * c[i // 2], rtol=1e-6)
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(ScheduleError, match="cse_thresh must be 0 or more"):
        sch.cache_index("B", "global", -1)
    assert sch.mod is before and len(sch.trace) == n
