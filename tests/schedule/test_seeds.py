"""The schedule cells of seed tutorials 000 (TensorIR blitz course) and 003 (tensor program
abstraction), run with only the imports changed, checked against the printed programs they show."""
import numpy as np

import tensorize as tvm
from tensorize import te
from tensorize.ir.module import IRModule
from tests.programs import (
    SEED000_BIND_PRINTED, SEED000_MODULE, SEED000_REORDER_PRINTED, SEED000_SPLIT_PRINTED, SEED003_PARALLEL_PRINTED,
    SEED003_REORDER_PRINTED, SEED003_SPLIT_PRINTED, SEED003_VECTOR_ADD, load,
)

# -- seed 000 ---------------------------------------------------------------------------------

MyModule = load(SEED000_MODULE, "seed000")["MyModule"]


def _run_vector_add_one(mod):
    a = tvm.nd.array(np.arange(8).astype("float32"))
    b = tvm.nd.array(np.zeros((8,)).astype("float32"))
    tvm.build(mod, target="llvm")(a, b)
    np.testing.assert_allclose(b.numpy(), np.arange(8) + 1)


def test_seed000_split_reorder_bind():
    ir_module = MyModule
    sch = tvm.tir.Schedule(ir_module)
    block_b = sch.get_block("B")
    (i,) = sch.get_loops(block_b)
    i_0, i_1, i_2 = sch.split(i, factors=[2, 2, 2])
    tvm.ir.assert_structural_equal(sch.mod, tvm.script.from_source(SEED000_SPLIT_PRINTED))
    _run_vector_add_one(sch.mod)
    sch.reorder(i_0, i_2, i_1)
    tvm.ir.assert_structural_equal(sch.mod, tvm.script.from_source(SEED000_REORDER_PRINTED))
    _run_vector_add_one(sch.mod)
    sch.bind(i_0, "blockIdx.x")
    sch.bind(i_2, "threadIdx.x")
    tvm.ir.assert_structural_equal(sch.mod, tvm.script.from_source(SEED000_BIND_PRINTED))


# -- seed 003 ---------------------------------------------------------------------------------

VecAdd = load(SEED003_VECTOR_ADD, "seed003")["MyModule"]


def _as_block_text(seed_text: str) -> str:
    return seed_text.replace("T.sblock", "T.block").strip()


def _run_vec_add(mod):
    a = tvm.runtime.tensor(np.arange(128, dtype="float32"))
    b = tvm.runtime.tensor(np.ones(128, dtype="float32"))
    c = tvm.runtime.tensor(np.zeros(128, dtype="float32"))
    rt_mod = tvm.build(mod, target="llvm")
    rt_mod["main"](a, b, c)
    np.testing.assert_allclose(c.numpy(), np.arange(128) + 1)


def test_seed003_vector_add_exact_text():
    from tensorize import s_tir

    sch = s_tir.Schedule(VecAdd)
    block = sch.get_sblock("C")
    (i,) = sch.get_loops(block)
    i0, i1, i2 = sch.split(i, factors=[None, 4, 4])
    assert sch.mod.script().strip() == _as_block_text(SEED003_SPLIT_PRINTED)
    sch.reorder(i2, i1)
    assert sch.mod.script().strip() == _as_block_text(SEED003_REORDER_PRINTED)
    sch.parallel(i0)
    assert sch.mod.script().strip() == _as_block_text(SEED003_PARALLEL_PRINTED)
    tvm.ir.assert_structural_equal(sch.mod, tvm.script.from_source(SEED003_PARALLEL_PRINTED))
    _run_vec_add(sch.mod)


def _te_matmul(size):
    M = K = N = size
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")
    func = te.create_prim_func([A, B, C]).with_attr("global_symbol", "main")
    return IRModule({"main": func})


def _tile(ir_module, parallel: bool):
    sch = tvm.s_tir.Schedule(ir_module)
    block_c = sch.get_sblock("C")
    (y, x, k) = sch.get_loops(block_c)
    block_size = 32
    yo, yi = sch.split(y, [None, block_size])
    xo, xi = sch.split(x, [None, block_size])
    sch.reorder(yo, xo, k, yi, xi)
    if parallel:
        sch.parallel(yo)
    return sch


def _expected_tiled(n, parallel):
    outer = (f"        for m_0 in T.parallel({n // 32}):\n            for n_0, k, m_1, n_1 in T.grid({n // 32}, {n}, 32, 32):\n"
             if parallel else f"        for m_0, n_0, k, m_1, n_1 in T.grid({n // 32}, {n // 32}, {n}, 32, 32):\n")
    pad = "    " if parallel else ""
    body = [
        'with T.block("C"):',
        f"    v_m = T.axis.spatial({n}, m_0 * 32 + m_1)",
        f"    v_n = T.axis.spatial({n}, n_0 * 32 + n_1)",
        f"    v_k = T.axis.reduce({n}, k)",
        "    T.reads(A[v_m, v_k], B[v_k, v_n])",
        "    T.writes(C[v_m, v_n])",
        "    with T.init():",
        "        C[v_m, v_n] = T.float32(0.0)",
        "    C[v_m, v_n] = C[v_m, v_n] + A[v_m, v_k] * B[v_k, v_n]",
    ]
    return outer + "".join(f"            {pad}{line}\n" for line in body)


def test_seed003_tiled_matmul_1024_text():
    sch = _tile(_te_matmul(1024), parallel=False)
    assert _expected_tiled(1024, False) in sch.mod.script() + "\n"
    sch = _tile(_te_matmul(1024), parallel=True)
    assert _expected_tiled(1024, True) in sch.mod.script() + "\n"


def test_seed003_tiled_matmul_numbers_small():
    n = 64
    a = np.random.rand(n, n).astype("float32")
    b = np.random.rand(n, n).astype("float32")
    for parallel in (False, True):
        sch = _tile(_te_matmul(n), parallel)
        func = tvm.build(sch.mod, target="llvm")
        c = tvm.runtime.tensor(np.zeros((n, n), dtype="float32"))
        func(tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
        np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)
