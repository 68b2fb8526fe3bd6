import logging

import numpy as np
import pytest

import tensorize as tvm
from tensorize.ir import expr as E
from tensorize.ir import stmt as S
from tensorize.ir.functor import post_order_visit
from tensorize.ir.function import IRModule
from tensorize.codegen.python import interpreter
from tensorize.transform.compact_buffer import compact_buffer_allocation
from tensorize.transform.convert_blocks_to_opaque import convert_blocks_to_opaque
from tensorize.transform.plan_buffer_allocation import plan_buffer_allocation

from tests.transform.transform_programs import func_of, matmul, two_stage, vector_add


def nodes_of(func, cls):
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, cls) else None)
    return found


def check_lowered_form(func):
    assert not nodes_of(func, (S.Block, S.BlockRealize))
    for access in nodes_of(func, (E.BufferLoad, S.BufferStore)):
        assert len(access.indices) == 1 and access.buffer.ndim == 1
    assert not [f for f in nodes_of(func, S.For) if f.kind == S.ForKind.VECTORIZED]


def test_lower_matmul_numerics_and_form():
    f = matmul(16)
    mod = tvm.lower(f)
    low = mod["main"]
    check_lowered_form(low)
    assert low.attrs["global_symbol"] == "main"
    assert low.buffer_map == f.buffer_map  # shaped parameter buffers are kept
    ifs = nodes_of(low, S.IfThenElse)
    assert len(ifs) == 1  # the lowered init
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((16, 16), dtype="float32"), rng.standard_normal((16, 16), dtype="float32")
    c = np.zeros((16, 16), "float32")
    interpreter.run_prim_func(low, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_lower_init_block_guard_is_reduce_iter_at_min():
    low = tvm.tir.transform.LowerInitBlock()(IRModule({"main": matmul(8)}))["main"]
    (block,) = [b for b in nodes_of(low, S.Block) if b.name_hint == "C"]
    assert block.init is None
    guard = block.body.seq[0]
    assert isinstance(guard, S.IfThenElse) and isinstance(guard.condition, E.EQ)
    assert guard.condition.a is block.iter_vars[2].var


def test_allocation_moves_to_loop_and_compacts():
    f, Bt = two_stage(16, 8)
    planned = plan_buffer_allocation(f)
    loop = planned.body.block.body
    assert isinstance(loop, S.For) and not planned.body.block.alloc_buffers
    inner_block = loop.body.block
    assert [b.data for b in inner_block.alloc_buffers] == [Bt.data]
    compacted = compact_buffer_allocation(convert_blocks_to_opaque(planned))
    (alloc,) = compacted.body.block.body.body.block.alloc_buffers
    assert [int(s) for s in alloc.shape] == [1, 8]
    a = np.random.default_rng(2).standard_normal((16, 8)).astype("float32")
    for func in (f, planned, compacted, tvm.lower(f)["main"]):
        c = np.zeros((16, 8), "float32")
        interpreter.run_prim_func(func, a, c)
        np.testing.assert_allclose(c, a * 2 + 1)
    allocs = nodes_of(tvm.lower(f)["main"], S.Allocate)
    assert len(allocs) == 1 and int(allocs[0].extents[0]) == 8


def test_vectorize_expands_to_ramps():
    f = vector_add(32, S.ForKind.VECTORIZED)
    low = tvm.lower(f)["main"]
    assert not nodes_of(low, S.For)
    (store,) = nodes_of(low, S.BufferStore)
    assert isinstance(store.indices[0], E.Ramp) and store.value.dtype == "float32x32"
    a, b = np.arange(32, dtype="float32"), np.ones(32, "float32")
    c = np.zeros(32, "float32")
    interpreter.run_prim_func(low, a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_vectorize_falls_back_to_serial_with_reason(caplog):
    a, c = tvm.tir.decl_buffer((8,), "float32", "a"), tvm.tir.decl_buffer((8,), "float32", "c")
    i = E.Var("i")
    body = S.For(i, 0, 8, S.ForKind.VECTORIZED, S.IfThenElse(a[i] > 0.0, S.BufferStore(c, a[i], [i])))
    with caplog.at_level(logging.INFO, logger="tensorize.transform.vectorize_loop"):
        low = tvm.lower(func_of([a, c], body))["main"]
    (loop,) = nodes_of(low, S.For)
    assert loop.kind == S.ForKind.SERIAL
    assert "data-dependent control flow" in caplog.text
    x, out = np.array([1, -1, 2, -2, 3, -3, 4, -4], "float32"), np.zeros(8, "float32")
    interpreter.run_prim_func(low, x, out)
    np.testing.assert_array_equal(out, np.maximum(x, 0))


def test_disable_vectorize_config():
    with tvm.transform.PassContext(config={"tir.disable_vectorize": True}):
        low = tvm.lower(vector_add(16, S.ForKind.VECTORIZED))["main"]
    (loop,) = nodes_of(low, S.For)
    assert loop.kind == S.ForKind.SERIAL


def test_unroll_loop():
    low = tvm.lower(vector_add(4, S.ForKind.UNROLLED))["main"]
    stores = nodes_of(low, S.BufferStore)
    assert not nodes_of(low, S.For) and [int(s.indices[0]) for s in stores] == [0, 1, 2, 3]


def test_match_buffer_lowered_to_source_indices():
    A, B = tvm.tir.decl_buffer((8, 8), "float32", "A"), tvm.tir.decl_buffer((8, 8), "float32", "B")
    io, x, y = E.Var("io"), E.Var("x"), E.Var("y")
    sub = tvm.tir.decl_buffer((4, 8), "float32", "A_sub", offset_factor=1)
    match = S.MatchBufferRegion(sub, S.BufferRegion(A, [E.Range.from_min_extent(io * 4, 4), E.Range(0, 8)]))
    inner = S.For(x, 0, 4, body=S.For(y, 0, 8, body=S.BufferStore(B, sub[x, y] + 1.0, [io * 4 + x, y])))
    block = S.Block((), (), (), "tile", inner, match_buffers=[match])
    f = func_of([A, B], S.For(io, 0, 2, body=S.BlockRealize((), True, block)))
    low = tvm.lower(f)["main"]
    check_lowered_form(low)
    assert all(load.buffer.data is A.data for load in nodes_of(low, E.BufferLoad))
    a, b = np.arange(64, dtype="float32").reshape(8, 8), np.zeros((8, 8), "float32")
    interpreter.run_prim_func(f, a, b)
    np.testing.assert_array_equal(b, a + 1)
    b[:] = 0
    interpreter.run_prim_func(low, a, b)
    np.testing.assert_array_equal(b, a + 1)


def _vectorize8_pass():
    """The seed-001 custom pass: split loops of extent divisible by 8 and vectorize the inner part."""
    loops = []

    def find_width8(op):
        if isinstance(op, tvm.tir.For) and isinstance(op.extent, tvm.tir.IntImm) and op.extent.value % 8 == 0:
            loops.append(op)

    def vectorize8(op):
        if op in loops:
            extent = op.extent.value
            name = op.loop_var.name
            lo, li = tvm.tir.Var(name + ".outer", "int32"), tvm.tir.Var(name + ".inner", "int32")
            body = tvm.tir.stmt_functor.substitute(op.body, {op.loop_var: lo * 8 + li})
            body = tvm.tir.For(li, 0, 8, tvm.tir.ForKind.VECTORIZED, body)
            return tvm.tir.For(lo, 0, extent // 8, tvm.tir.ForKind.SERIAL, body)
        return None

    @tvm.tir.transform.prim_func_pass(opt_level=0)
    def vectorize(f, mod, ctx):
        tvm.tir.stmt_functor.post_order_visit(f.body, find_width8)
        if not loops:
            return f
        return f.with_body(tvm.tir.stmt_functor.ir_transform(f.body, None, vectorize8, ["tir.For"]))

    return vectorize


def test_seed001_custom_pass_after_phase1():
    f = vector_add(128)
    with tvm.transform.PassContext(config={"tir.add_lower_pass": [(1, _vectorize8_pass())]}):
        low = tvm.lower(f)["main"]
    (loop,) = nodes_of(low, S.For)
    assert loop.loop_var.name == "i.outer" and int(loop.extent) == 16
    let = loop.body
    assert isinstance(let, S.LetStmt) and let.var.name == "cse_var_1"
    assert isinstance(let.value, E.Mul) and let.value.a is loop.loop_var and int(let.value.b) == 8
    store = let.body
    assert isinstance(store.indices[0], E.Ramp) and store.indices[0].base is let.var
    a, b = np.arange(128, dtype="float32"), np.full(128, 0.5, "float32")
    c = np.zeros(128, "float32")
    interpreter.run_prim_func(low, a, b, c)
    np.testing.assert_array_equal(c, a + b)
    try:
        text = low.script()
    except ImportError:
        pytest.skip("the TVMScript printer is not available yet")
    assert "cse_var_1: T.int32 = i_outer * 8" in text
    assert "c[cse_var_1:cse_var_1 + 8] = a[cse_var_1:cse_var_1 + 8] + b[cse_var_1:cse_var_1 + 8]" in text


def test_remove_no_op_keeps_copies_between_different_indices():
    a = tvm.tir.decl_buffer((8,), "float32", "a")
    i = E.Var("i")
    body = S.For(i, 0, 4, body=S.SeqStmt([S.BufferStore(a, a[i], [i]), S.BufferStore(a, a[i + 4], [i])]))
    low = tvm.tir.transform.RemoveNoOp()(IRModule({"main": func_of([a], body)}))["main"]
    (store,) = nodes_of(low, S.BufferStore)
    assert isinstance(store.value.indices[0], E.Add)


def test_pass_context_and_sequential():
    seen = []

    @tvm.transform.module_pass(opt_level=3, name="Late")
    def late(mod, ctx):
        seen.append("late")
        return mod

    @tvm.tir.transform.prim_func_pass(opt_level=0)
    class Rename:
        def transform_function(self, func, mod, ctx):
            seen.append("rename")
            return func.with_attr("renamed", True)

    seq = tvm.transform.Sequential([late, Rename()])
    mod = IRModule({"main": vector_add(8)})
    out = seq(mod)
    assert seen == ["rename"] and out["main"].attrs["renamed"] and "renamed" not in mod["main"].attrs
    with tvm.transform.PassContext(opt_level=3):
        seq(mod)
    assert seen == ["rename", "late", "rename"]
    with tvm.transform.PassContext(opt_level=3, disabled_pass=["Late"]):
        seq(mod)
    assert seen[-1] == "rename" and seen.count("late") == 1
    with pytest.raises(AttributeError, match="invalid PassContext config option"):
        tvm.transform.PassContext(config={"tir.no_such_option": 1})
    with pytest.raises(ValueError, match="phase"):
        tvm.transform.PassContext(config={"tir.add_lower_pass": [(7, late)]})


def test_vectorize_masks_the_guard_of_a_split_that_does_not_divide():
    """``j`` split by 16 over 197 columns: the guard ``j_0 * 16 + j_1 < 197`` becomes masked loads and
    stores (the reduction's init inside it stays an ``if`` on the invariant ``k == 0``)."""
    from tensorize import te, tir

    A, B = te.placeholder((5, 24), name="A"), te.placeholder((24, 197), name="B")
    k = te.reduce_axis((0, 24), name="k")
    C = te.compute((5, 197), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    i, j, kk = sch.get_loops(sch.get_block("C"))
    jo, ji = sch.split(j, [None, 16])
    sch.reorder(i, jo, kk, ji)
    sch.vectorize(ji)
    low = tvm.lower(sch.mod)["main"]
    assert all(loop.kind != S.ForKind.VECTORIZED for loop in nodes_of(low, S.For))
    stores = [s for s in nodes_of(low, S.BufferStore) if s.predicate is not None]
    assert len(stores) == 2  # the init and the update, both masked
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 24)).astype("float32"), rng.standard_normal((24, 197)).astype("float32")
    out = tvm.nd.array(np.zeros((5, 197), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), tvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-5, atol=1e-5)


def test_vectorize_blends_a_guarded_store_into_a_local_tile_instead_of_masking_it():
    """The same 197-column product accumulated in a local 16-lane tile (``cache_write``): the
    guarded update of the tile becomes an unmasked store of ``select(mask, new, old)``, which LLVM
    keeps in registers (a masked store to a local buffer it cannot); the store to ``C`` stays masked."""
    from tensorize import te, tir
    from tensorize.ir import expr as E

    A, B = te.placeholder((5, 24), name="A"), te.placeholder((24, 197), name="B")
    k = te.reduce_axis((0, 24), name="k")
    C = te.compute((5, 197), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    block = sch.get_block("C")
    i, j, kk = sch.get_loops(block)
    jo, ji = sch.split(j, [None, 16])
    sch.reorder(i, jo, kk, ji)
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, jo)
    sch.vectorize(ji)
    sch.vectorize(sch.get_loops(local)[-1])
    with tvm.transform.PassContext(disabled_pass=["tir.PartitionPaddedLoops"]):  # every tile guarded
        low = tvm.lower(sch.mod)["main"]
    tile = [s for s in nodes_of(low, S.BufferStore) if s.buffer.name.startswith("C_local")]
    assert tile and all(s.predicate is None and isinstance(s.value, E.Select) for s in tile)
    out_stores = [s for s in nodes_of(low, S.BufferStore) if s.buffer.name == "C"]
    assert out_stores and all(s.predicate is not None for s in out_stores)
    # with the partition, the 12 whole column tiles test nothing; only the last one blends and masks
    low = tvm.lower(sch.mod)["main"]
    whole, last = [loop for loop in nodes_of(low, S.For) if loop.loop_var.name.startswith("j_0")][:2]
    assert (int(whole.extent), int(last.min), int(last.extent)) == (12, 12, 1)
    assert not any(isinstance(s.value, E.Select) or s.predicate is not None for s in nodes_of(whole, S.BufferStore))
    assert any(isinstance(s.value, E.Select) for s in nodes_of(last, S.BufferStore))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 24)).astype("float32"), rng.standard_normal((24, 197)).astype("float32")
    out = tvm.nd.array(np.zeros((5, 197), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), tvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-5, atol=1e-5)


@tvm.script.tir.prim_func
def _unit_level_cache(A: tvm.script.tir.Buffer((64, 16), "float32"), C: tvm.script.tir.Buffer((64, 16), "float32")):
    T = tvm.script.tir
    B = T.alloc_buffer((64, 16))
    for i0, i1 in T.grid(16, 1):
        for i2, j in T.grid(4, 16):
            with T.block("B"):
                vi = T.axis.spatial(64, i0 * 4 + i1 * 4 + i2)
                vj = T.axis.spatial(16, j)
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i2, j in T.grid(4, 16):
            with T.block("C"):
                vi = T.axis.spatial(64, i0 * 4 + i2)
                vj = T.axis.spatial(16, j)
                C[vi, vj] = B[vi, vj] + T.float32(1)


def test_a_unit_loop_around_the_allocation_does_not_stop_compaction():
    """A tile level of extent 1 (``i1``) that one block binds and the other does not: its variable is its min,
    so both accesses cover one 4-row tile (the search's write caches, else a whole-size buffer per tile)."""
    compacted = compact_buffer_allocation(convert_blocks_to_opaque(plan_buffer_allocation(_unit_level_cache)))
    (alloc,) = [b for blk in nodes_of(compacted, S.Block) for b in blk.alloc_buffers]
    assert [int(s) for s in alloc.shape] == [4, 16]
    a = np.random.default_rng(3).standard_normal((64, 16)).astype("float32")
    for func in (compacted, tvm.lower(_unit_level_cache)["main"]):
        c = np.zeros((64, 16), "float32")
        interpreter.run_prim_func(func, a, c)
        np.testing.assert_allclose(c, a * 2 + 1)


@tvm.script.tir.prim_func
def _unit_tile_levels(A: tvm.script.tir.Buffer((64,), "float32"), B: tvm.script.tir.Buffer((64,), "float32")):
    T = tvm.script.tir
    for i0, i1 in T.grid(16, 1):
        for i2 in T.unroll(1):
            for i3 in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(64, i0 * 4 + i1 * 4 + i2 * 4 + i3)
                    B[vi] = A[vi] * T.float32(2)
    for t in T.thread_binding(1, thread="threadIdx.x"):
        for j in range(1):
            with T.block("C"):
                vj = T.axis.spatial(1, t + j)
                B[vj] = B[vj] + T.float32(1)


def test_unit_loops_become_their_bodies():
    """A loop of one iteration without annotations is replaced by its body with the variable at the loop's
    start, as TVM's LowerOpaqueBlock does (tile levels of extent 1 otherwise reach LLVM as loops, which
    multiplied its optimisation time); a thread binding of extent 1 stays a loop."""
    low = tvm.lower(_unit_tile_levels)["main"]
    loops = {f.loop_var.name: (int(f.extent), f.kind) for f in nodes_of(low, S.For)}
    assert loops == {"i0": (16, S.ForKind.SERIAL), "i3": (4, S.ForKind.SERIAL), "t": (1, S.ForKind.THREAD_BINDING)}
    a = np.arange(64, dtype="float32")
    b = np.zeros(64, "float32")
    interpreter.run_prim_func(low, a, b)
    want = a * 2
    want[0] += 1
    np.testing.assert_array_equal(b, want)
