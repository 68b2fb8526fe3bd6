"""compute_inline and reverse_compute_inline."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize.script import tir as T


@T.prim_func
def elementwise(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
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
def inlined(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)


@T.prim_func
def reverse_inlined(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)


@T.prim_func
def matmul_relu(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), D: T.Buffer((16, 16), "float32")):
    C = T.alloc_buffer((16, 16))
    for i, j, k in T.grid(16, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(16, 16):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = T.max(C[vi, vj], T.float32(0))


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


def test_compute_inline():
    sch = tvm.tir.Schedule(elementwise)
    sch.compute_inline(sch.get_block("B"))
    assert_func_equal(sch, inlined)
    a = np.random.rand(16, 16).astype("float32")
    _, c = run(sch.mod, a, np.zeros((16, 16), "float32"))
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)
    with pytest.raises(tvm.tir.ScheduleError, match="no longer exists"):
        sch.get_loops(tvm.tir.BlockRV("B", sch.mod.function_names()[0]))


def test_reverse_compute_inline():
    sch = tvm.tir.Schedule(elementwise)
    sch.reverse_compute_inline(sch.get_block("C"))
    assert_func_equal(sch, reverse_inlined)
    a = np.random.rand(16, 16).astype("float32")
    _, c = run(sch.mod, a, np.zeros((16, 16), "float32"))
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)


def test_inline_errors_leave_schedule_unchanged():
    sch = tvm.tir.Schedule(matmul_relu)
    block_c, block_d = sch.get_block("C"), sch.get_block("D")
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(tvm.tir.ScheduleError, match="output block"):
        sch.compute_inline(block_d)
    with pytest.raises(tvm.tir.ScheduleError, match="needs a spatial block"):
        sch.compute_inline(block_c)
    with pytest.raises(tvm.tir.ScheduleError, match="needs a spatial block"):
        sch.reverse_compute_inline(block_c)
    # relu cannot be folded into a reduction producer either
    with pytest.raises(tvm.tir.ScheduleError, match="reverse_compute_inline"):
        sch.reverse_compute_inline(block_d)
    assert sch.mod is before and len(sch.trace) == n
