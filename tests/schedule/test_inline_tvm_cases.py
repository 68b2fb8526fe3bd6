"""compute_inline / reverse_compute_inline on the cases TVM's tests pin: opaque accesses are refused
(schedule unchanged), a consumer may read the producer's buffer several times at one index, and a
reshaping read (a bijection onto the buffer) inlines with the flattened index split back."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize.script import tir as T


def run(mod, *arrays):
    nd = [tvm.nd.array(a) for a in arrays]
    tvm.build(mod, target="llvm")(*nd)
    return [x.numpy() for x in nd]


@T.prim_func
def pointer_consumer(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(B[0:16, 0:16])
            T.writes(C[0:16, 0:16])
            T.evaluate(B.access_ptr("r", extent=16))
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def matched_consumer(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            Bb = T.match_buffer(B[vi, vj], (1,))
            C[vi, vj] = Bb[0] + T.float32(1)


@pytest.mark.parametrize("func, user", [(pointer_consumer, "C"), (matched_consumer, "C")])
def test_compute_inline_refuses_opaque_access_and_keeps_the_schedule(func, user):
    sch = tvm.tir.Schedule(func)
    before = sch.mod.script()
    with pytest.raises(tvm.tir.ScheduleError, match=f"block '{user}' accesses B opaquely"):
        sch.compute_inline(sch.get_block("B"))
    assert sch.mod.script() == before and len(sch.trace) == 1


@T.prim_func
def twice_read(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = (B[vi, vj] + T.float32(1)) * B[vi, vj]


def test_reverse_compute_inline_with_two_reads_at_one_index():
    sch = tvm.tir.Schedule(twice_read)
    sch.reverse_compute_inline(sch.get_block("C"))
    assert "C[vi, vj] = (A[vi, vj] * T.float32(2.0) + T.float32(1.0)) * (A[vi, vj] * T.float32(2.0))" \
        in sch.mod.script()
    a = np.random.default_rng(0).random((16, 16), dtype="float32")
    _, c = run(sch.mod, a, np.zeros((16, 16), "float32"))
    np.testing.assert_allclose(c, (a * 2 + 1) * (a * 2), rtol=1e-6)


@T.prim_func
def reshape(A: T.Buffer((16, 16), "float32"), C: T.Buffer((4, 8, 8), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j, k in T.grid(4, 8, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            C[vi, vj, vk] = B[((vi * 8 + vj) * 8 + vk) // 16, ((vi * 8 + vj) * 8 + vk) % 16]


def test_reverse_compute_inline_of_a_reshape_splits_the_flat_index():
    sch = tvm.tir.Schedule(reshape)
    sch.reverse_compute_inline(sch.get_block("C"))
    text = sch.mod.script()
    assert "C[(vj + vi * 16) // 64, (vj + vi * 16) // 8 % 8, (vj + vi * 16) % 8] = A[vi, vj] * T.float32(2.0)" \
        in text
    a = np.random.default_rng(1).random((16, 16), dtype="float32")
    _, c = run(sch.mod, a, np.zeros((4, 8, 8), "float32"))
    np.testing.assert_allclose(c, (a * 2).reshape(4, 8, 8), rtol=1e-6)
