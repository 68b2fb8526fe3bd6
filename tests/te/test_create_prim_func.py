"""te.create_prim_func: structure against TVMScript, numbers against numpy (through the TensorIR interpreter)."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize.analysis import verify_well_formed
from tensorize import te
from tensorize.ir import IRModule
from tensorize.ir.stmt import Block, BlockRealize, For, LetStmt
from tensorize.script import tir as T
from tensorize.codegen.python import run_prim_func

RNG = np.random.default_rng(0)


def rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def blocks_of(func):
    found = []
    tvm.tir.stmt_functor.post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, Block) else None)
    return [b for b in found if b.name_hint != "root"]


def test_vector_add_seed000():
    A = te.placeholder((8,), dtype="float32", name="A")
    B = te.compute((8,), lambda *i: A(*i) + 1.0, name="B")
    func = te.create_prim_func([A, B])

    @T.prim_func
    def expected(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        T.func_attr({"tir.noalias": True})
        for i0 in range(8):
            with T.block("B"):
                v_i0 = T.axis.spatial(8, i0)
                T.reads(A[v_i0])
                T.writes(B[v_i0])
                B[v_i0] = A[v_i0] + T.float32(1)

    tvm.ir.assert_structural_equal(func, expected.with_attr("global_symbol", "main"))
    text = IRModule({"main": func}).script()
    for line in ("for i0 in range(8):", 'with T.block("B"):', "v_i0 = T.axis.spatial(8, i0)", "T.reads(A[v_i0])",
                 "T.writes(B[v_i0])", "B[v_i0] = A[v_i0] + T.float32(1.0)"):
        assert line in text, text
    assert func.attrs == {"global_symbol": "main", "tir.noalias": True}  # as TVM
    assert func.with_attr("global_symbol", "main").attrs["global_symbol"] == "main"
    a, b = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    run_prim_func(func, a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_matmul_seed003_structure_and_numbers():
    k = te.reduce_axis((0, 32), "k")
    A = te.placeholder((32, 32), name="A")
    B = te.placeholder((32, 32), name="B")
    C = te.compute((32, 32), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")
    func = te.create_prim_func([A, B, C])

    @T.prim_func
    def expected(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
        T.func_attr({"tir.noalias": True})
        for m, n, k in T.grid(32, 32, 32):
            with T.block("C"):
                v_m, v_n, v_k = T.axis.remap("SSR", [m, n, k])
                T.reads(A[v_m, v_k], B[v_k, v_n])
                T.writes(C[v_m, v_n])
                with T.init():
                    C[v_m, v_n] = T.float32(0.0)
                C[v_m, v_n] = C[v_m, v_n] + A[v_m, v_k] * B[v_k, v_n]

    tvm.ir.assert_structural_equal(func, expected.with_attr("global_symbol", "main"))
    (block,) = blocks_of(func)
    assert [iv.var.name for iv in block.iter_vars] == ["v_m", "v_n", "v_k"]
    assert [iv.iter_type for iv in block.iter_vars] == [0, 0, 2]
    a, b, c = rand(32, 32), rand(32, 32), np.zeros((32, 32), "float32")
    run_prim_func(func, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_matmul_relu_allocates_intermediate():
    k = te.reduce_axis((0, 16), "k")
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    Y = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")
    C = te.compute((16, 16), lambda i, j: te.max(Y[i, j], 0.0), name="C")
    func = te.create_prim_func([A, B, C])

    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        T.func_attr({"tir.noalias": True})
        Y = T.alloc_buffer((16, 16))
        for i, j, k in T.grid(16, 16, 16):
            with T.block("Y"):
                v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
                T.reads(A[v_i, v_k], B[v_k, v_j])
                T.writes(Y[v_i, v_j])
                with T.init():
                    Y[v_i, v_j] = T.float32(0)
                Y[v_i, v_j] = Y[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]
        for i, j in T.grid(16, 16):
            with T.block("C"):
                v_i, v_j = T.axis.remap("SS", [i, j])
                T.reads(Y[v_i, v_j])
                T.writes(C[v_i, v_j])
                C[v_i, v_j] = T.max(Y[v_i, v_j], T.float32(0))

    tvm.ir.assert_structural_equal(func, expected.with_attr("global_symbol", "main"))
    assert [b.name for b in func.body.block.alloc_buffers] == ["Y"]
    a, b, c = rand(16, 16), rand(16, 16), np.zeros((16, 16), "float32")
    run_prim_func(func, a, b, c)
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_conv2d_with_padding():
    batch, cin, cout, size, kernel = 2, 3, 4, 6, 3
    A = te.placeholder((batch, cin, size, size), name="A")
    W = te.placeholder((cin, kernel, kernel, cout), name="W")
    Apad = te.compute(
        (batch, cin, size + 2, size + 2),
        lambda nn, cc, yy, xx: tvm.tir.if_then_else(
            tvm.tir.all(yy >= 1, yy - 1 < size, xx >= 1, xx - 1 < size), A[nn, cc, yy - 1, xx - 1], 0.0),
        name="Apad")
    rc = te.reduce_axis((0, cin), name="rc")
    ry = te.reduce_axis((0, kernel), name="ry")
    rx = te.reduce_axis((0, kernel), name="rx")
    B = te.compute((batch, cout, size, size),
                   lambda nn, ff, yy, xx: te.sum(Apad[nn, rc, yy + ry, xx + rx] * W[rc, ry, rx, ff], axis=[rc, ry, rx]),
                   name="B")
    func = te.create_prim_func([A, W, B])
    pad_block, conv_block = blocks_of(func)
    assert conv_block.name_hint == "B"
    assert [iv.var.name for iv in conv_block.iter_vars] == ["v_nn", "v_ff", "v_yy", "v_xx", "v_rc", "v_ry", "v_rx"]
    assert "".join("SR"[iv.iter_type == 2] for iv in conv_block.iter_vars) == "SSSSRRR"
    assert [r.buffer.name for r in conv_block.reads] == ["Apad", "W"]
    assert verify_well_formed(func)
    a, w = rand(batch, cin, size, size), rand(cin, kernel, kernel, cout)
    b = np.zeros((batch, cout, size, size), "float32")
    run_prim_func(func, a, w, b)
    ap = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros_like(b)
    for y in range(size):
        for x in range(size):
            ref[:, :, y, x] = np.einsum("ncij,cijf->nf", ap[:, :, y:y + kernel, x:x + kernel], w)
    np.testing.assert_allclose(b, ref, rtol=1e-4, atol=1e-4)


def test_max_reduction_init_is_min_value():
    A = te.placeholder((8, 5), name="A")
    k = te.reduce_axis((0, 5), "k")
    M = te.compute((8,), lambda i: te.max(A[i, k], axis=k), name="M")
    func = te.create_prim_func([A, M])
    (block,) = blocks_of(func)
    assert block.init.value.value == pytest.approx(-3.4028234663852886e38)
    a, m = rand(8, 5), np.zeros(8, "float32")
    run_prim_func(func, a, m)
    np.testing.assert_array_equal(m, a.max(axis=1))


def test_custom_comm_reducer_and_where():
    mysum = te.comm_reducer(lambda x, y: x + y, lambda t: tvm.tir.const(0, t), name="mysum")
    A = te.placeholder((6, 10), name="A")
    k = te.reduce_axis((0, 10), "k")
    S = te.compute((6,), lambda i: mysum(A[i, k], axis=k, where=k < 7), name="S")
    func = te.create_prim_func([A, S])
    a, s = rand(6, 10), np.zeros(6, "float32")
    run_prim_func(func, a, s)
    np.testing.assert_allclose(s, a[:, :7].sum(axis=1), rtol=1e-5, atol=1e-5)


def test_sum_with_init_value():
    A = te.placeholder((4, 3), name="A")
    k = te.reduce_axis((0, 3), "k")
    S = te.compute((4,), lambda i: te.sum(A[i, k], axis=k, init=10.0), name="S")
    func = te.create_prim_func([A, S])
    a, s = rand(4, 3), np.zeros(4, "float32")
    run_prim_func(func, a, s)
    np.testing.assert_allclose(s, a.sum(axis=1) + 10, rtol=1e-5)


def test_argmax_multi_value_reduction():
    def f_combine(x, y):
        lhs = tvm.tir.Select(x[1] >= y[1], x[0], y[0])
        rhs = tvm.tir.Select(x[1] >= y[1], x[1], y[1])
        return lhs, rhs

    def f_identity(dtype0, dtype1):
        return tvm.tir.const(-1, dtype0), te.min_value(dtype1)

    argmax = te.comm_reducer(f_combine, f_identity, name="argmax")
    idx = te.placeholder((5, 7), name="idx", dtype="int32")
    val = te.placeholder((5, 7), name="val", dtype="float32")
    k = te.reduce_axis((0, 7), "k")
    max_idx, max_val = te.compute((5,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="argmax")
    func = te.create_prim_func([idx, val, max_idx, max_val])
    (block,) = blocks_of(func)
    assert block.name_hint == "argmax"
    assert [r.buffer.name for r in block.reads] == ["val", "idx"]
    assert [w.buffer.name for w in block.writes] == ["argmax.v0", "argmax.v1"]
    assert isinstance(block.body, LetStmt)
    assert verify_well_formed(func)
    idx_np = np.tile(np.arange(7, dtype="int32"), (5, 1))
    val_np = rand(5, 7)
    out_i, out_v = np.zeros(5, "int32"), np.zeros(5, "float32")
    run_prim_func(func, idx_np, val_np, out_i, out_v)
    np.testing.assert_array_equal(out_v, val_np.max(axis=1))
    np.testing.assert_array_equal(out_i, val_np.argmax(axis=1))


def test_multi_output_elementwise_gives_one_block_per_output():
    A0 = te.placeholder((4, 6), name="A0")
    A1 = te.placeholder((4, 6), name="A1")
    B0, B1 = te.compute((4, 6), lambda i, j: (A0[i, j] + 2, A1[i, j] * 3), name="B")
    func = te.create_prim_func([A0, A1, B0, B1])
    loop = func.body.block.body
    assert isinstance(loop, For) and isinstance(loop.body, For)
    b0, b1 = loop.body.body.seq
    assert (b0.block.name_hint, b1.block.name_hint) == ("B.v0", "B.v1")
    assert b0.block.iter_vars[0].var is not b1.block.iter_vars[0].var
    assert verify_well_formed(func)
    a0, a1 = rand(4, 6), rand(4, 6)
    o0, o1 = np.zeros((4, 6), "float32"), np.zeros((4, 6), "float32")
    run_prim_func(func, a0, a1, o0, o1)
    np.testing.assert_allclose(o0, a0 + 2)
    np.testing.assert_allclose(o1, a1 * 3)


def test_symbolic_shape():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    func = te.create_prim_func([A, B])
    loop = func.body.block.body
    assert loop.extent is n
    assert func.buffer_map[func.params[0]].shape[0] is n
    assert verify_well_formed(func)
    a, b = rand(11), np.zeros(11, "float32")
    run_prim_func(func, a, b)
    np.testing.assert_allclose(b, a * 2)


def test_const_shape_and_scalar_param():
    n = tvm.tir.const(16, "int32")
    a = te.placeholder((n,), name="a")
    s = te.var("s", "float32")
    c = te.compute((n,), lambda i: a[i] * s, name="c")
    func = te.create_prim_func([a, s, c])
    assert func.params[1] is s
    x, y = rand(16), np.zeros(16, "float32")
    run_prim_func(func, x, 3.0, y)
    np.testing.assert_allclose(y, x * 3)


def test_zero_dim_compute_has_one_unit_iterator():
    a = te.placeholder((), name="a", dtype="int32")
    b = te.placeholder((), name="b", dtype="int32")
    c = te.compute(a.shape, lambda *i: a(*i) + b(*i), name="c")
    func = te.create_prim_func([a, b, c])
    realize = func.body.block.body
    assert isinstance(realize, BlockRealize)
    assert realize.block.iter_vars[0].var.name == "vi" and int(realize.block.iter_vars[0].dom.extent) == 1


def test_block_names_are_unique_and_attrs_become_annotations():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda x: A[x] * 2, name="main", attrs={"my_hint": 3})
    C = te.compute((4,), lambda x: B[x] + 1, name="main")
    func = te.create_prim_func([A, C])
    first, second = blocks_of(func)
    assert (first.name_hint, second.name_hint) == ("main", "main_1")
    assert first.annotations == {"my_hint": 3} and second.annotations == {}


def test_layout_free_placeholder_moves_to_function_attr():
    k = te.reduce_axis((0, 8), "k")
    A = te.placeholder((8, 8), name="A")
    B = te.placeholder((8, 8), name="B")
    C = te.compute((8, 8), lambda x, y: te.sum(A[x, k] * B[y, k], axis=k), name="C",
                   attrs={"layout_free_placeholders": [B]})
    func = te.create_prim_func([A, B, C])
    assert func.attrs["layout_free_buffers"] == [1]
    assert blocks_of(func)[0].annotations == {}


def test_elementwise_max_and_math():
    A = te.placeholder((5,), name="A")
    B = te.compute((5,), lambda i: te.max(A[i], 0.5) + te.exp(A[i]), name="B")
    func = te.create_prim_func([A, B])
    a, b = rand(5), np.zeros(5, "float32")
    run_prim_func(func, a, b)
    np.testing.assert_allclose(b, np.maximum(a, 0.5) + np.exp(a), rtol=1e-5)


def test_errors_name_the_problem():
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), "k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="B")
    with pytest.raises(ValueError, match="placeholder 'A' is read by the computation but is not in the argument list"):
        te.create_prim_func([B])
    with pytest.raises(ValueError, match="must be the whole body"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) * 2.0, name="bad")
    with pytest.raises(ValueError, match="fcompute takes 1 index argument"):
        te.compute((4, 4), lambda i: A[i, 0], name="bad")
    with pytest.raises(IndexError, match="has 2 dimension"):
        A(1)
    with pytest.raises(TypeError, match="te.reduce_axis"):
        te.sum(A[0, 0], axis=[te.var("x")])
