"""parallel, vectorize, unroll, bind: printed programs, numbers, and errors."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize.script import tir as T
from tensorize.codegen.python import run_prim_func

from tests.schedule._sched_workloads import matmul_16 as matmul


def only_func(mod):
    (name,) = mod.function_names()
    return mod[name]


def assert_func_equal(sch, expected):
    func = only_func(sch.mod)
    tvm.ir.assert_structural_equal(func, expected.with_attr("global_symbol", func.attrs.get("global_symbol")))


def run_matmul(mod, build=True):
    """Check ``mod`` computes a matmul: compiled with LLVM, or with the IR interpreter."""
    a, b = np.random.rand(16, 16).astype("float32"), np.random.rand(16, 16).astype("float32")
    if build:
        c = tvm.nd.array(np.zeros((16, 16), "float32"))
        tvm.build(mod, target="llvm")(tvm.nd.array(a), tvm.nd.array(b), c)
        c = c.numpy()
    else:
        c = np.zeros((16, 16), "float32")
        run_prim_func(only_func(mod), a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_parallel_vectorize_unroll_text_and_numbers():
    sch = tvm.tir.Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i, j0, k, j1)
    sch.parallel(i)
    sch.vectorize(j1)
    sch.unroll(k)

    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i in T.parallel(16):
            for j_0 in range(2):
                for k in T.unroll(16):
                    for j_1 in T.vectorized(8):
                        with T.block("C"):
                            vi = T.axis.spatial(16, i)
                            vj = T.axis.spatial(16, j_0 * 8 + j_1)
                            vk = T.axis.reduce(16, k)
                            with T.init():
                                C[vi, vj] = T.float32(0)
                            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    assert_func_equal(sch, expected)
    text = sch.mod.script()
    assert "for i in T.parallel(16):" in text and "for k in T.unroll(16):" in text
    assert "for j_1 in T.vectorized(8):" in text
    run_matmul(sch.mod)
    run_matmul(sch.mod, build=False)


def test_vectorize_unroll_build():
    sch = tvm.tir.Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i, j0, k, j1)
    sch.vectorize(j1)
    sch.unroll(k)
    run_matmul(sch.mod)


def test_parallel_build():
    sch = tvm.tir.Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.parallel(i0)
    run_matmul(sch.mod)


@pytest.mark.parametrize("prim", ["parallel", "vectorize"])
def test_reduction_loop_cannot_be_parallel(prim):
    sch = tvm.tir.Schedule(matmul)
    _, _, k = sch.get_loops(sch.get_block("C"))
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(tvm.tir.ScheduleError, match="reduction iterator vk"):
        getattr(sch, prim)(k)
    assert sch.mod is before and len(sch.trace) == n
    sch.unroll(k)  # unroll is always allowed


def test_bind_prints_thread_binding_and_checks_tags():
    sch = tvm.tir.Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    text = sch.mod.script()
    assert 'for i in T.thread_binding(16, thread="blockIdx.x"):' in text
    assert 'for j in T.thread_binding(16, thread="threadIdx.x"):' in text
    before = sch.mod
    with pytest.raises(tvm.tir.ScheduleError, match="unknown thread axis"):
        sch.bind(k, "threadIdx.w")
    with pytest.raises(tvm.tir.ScheduleError, match="reduction iterator"):
        sch.bind(k, "blockIdx.y")
    assert sch.mod is before
    sch.bind(k, "threadIdx.y")  # cross-thread reduction is allowed
    reparsed = tvm.script.from_source(sch.mod.script())
    tvm.ir.assert_structural_equal(reparsed, sch.mod)
