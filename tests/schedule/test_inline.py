"""compute_inline and reverse_compute_inline."""
import textwrap

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


@T.prim_func
def partial_consumer(A: T.Buffer((16, 16), "float32"), C: T.Buffer((8, 15), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(8, 15):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi * 2, vj + 1] + T.float32(1)


@T.prim_func
def partial_consumer_inlined(A: T.Buffer((16, 16), "float32"), C: T.Buffer((8, 15), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.where(i % 2 == 0 and j >= 1)
            C[vi // 2, vj - 1] = A[vi, vj] * T.float32(2) + T.float32(1)


PARTIAL_INLINED_TEXT = '''\
for i, j in T.grid(16, 16):
    with T.block("B"):
        vi, vj = T.axis.remap("SS", [i, j])
        T.where(i % 2 == 0 and j >= 1)
        T.reads(A[vi, vj])
        T.writes(C[vi // 2, vj - 1])
        C[vi // 2, vj - 1] = A[vi, vj] * T.float32(2.0) + T.float32(1.0)'''


def test_reverse_compute_inline_partial_consumer():
    """The consumer reads a strided, shifted part of the producer's buffer: the producer keeps its
    loops and writes the consumer's output only where the consumer read (a predicate)."""
    sch = tvm.tir.Schedule(partial_consumer)
    sch.reverse_compute_inline(sch.get_block("C"))
    assert_func_equal(sch, partial_consumer_inlined)
    assert textwrap.indent(PARTIAL_INLINED_TEXT, " " * 8) in sch.mod.script()
    a = np.random.rand(16, 16).astype("float32")
    _, c = run(sch.mod, a, np.zeros((8, 15), "float32"))
    np.testing.assert_allclose(c, a[::2, 1:] * 2 + 1, rtol=1e-6)
    replayed = tvm.tir.Schedule(partial_consumer)
    sch.trace.apply_to_schedule(replayed)
    tvm.ir.assert_structural_equal(replayed.mod, sch.mod)


@T.prim_func
def consumer_reads_diagonal(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[vi, vi]


@T.prim_func
def consumer_reads_row(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for j in range(16):
        with T.block("C"):
            vj = T.axis.spatial(16, j)
            C[vj] = B[3, vj]


@T.prim_func
def consumer_reads_guarded(A: T.Buffer((16, 16), "float32"), D: T.Buffer((32, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(32, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = T.if_then_else(vi >= 16, B[vi - 16, vj], T.float32(0))


def test_reverse_compute_inline_constant_axis():
    sch = tvm.tir.Schedule(consumer_reads_row)
    sch.reverse_compute_inline(sch.get_block("C"))
    assert "T.where(i == 3)" in sch.mod.script()
    a = np.random.rand(16, 16).astype("float32")
    _, c = run(sch.mod, a, np.zeros(16, "float32"))
    np.testing.assert_allclose(c, a[3] * 2, rtol=1e-6)


@pytest.mark.parametrize("func, message", [
    (consumer_reads_diagonal, "iterator vi indexes B on axes 0 and 1"),
    (consumer_reads_guarded, r"on axis 0 the consumer reads B at \[-16, 15\], outside the buffer"),
])
def test_reverse_compute_inline_partial_errors(func, message):
    sch = tvm.tir.Schedule(func)
    block = sch.get_block("C")
    before, n = sch.mod, len(sch.trace)
    with pytest.raises(tvm.tir.ScheduleError, match=message):
        sch.reverse_compute_inline(block)
    assert sch.mod is before and len(sch.trace) == n
