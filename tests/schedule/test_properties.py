"""Property: random valid sequences of schedule primitives never change what a program computes,
and their traces replay (through JSON) to a structurally equal module."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hypothesis_setup import examples

import tensorize as tvm
from tensorize.schedule import Trace
from tensorize.script import tir as T
from tests.workloads import matmul_f32


matmul = matmul_f32(12, 10, 16)


@T.prim_func
def matmul_relu(A: T.Buffer((12, 16), "float32"), B: T.Buffer((16, 10), "float32"), D: T.Buffer((12, 10), "float32")):
    C = T.alloc_buffer((12, 10))
    for i, j, k in T.grid(12, 10, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(12, 10):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = T.max(C[vi, vj], T.float32(0))


@T.prim_func
def conv2d(X: T.Buffer((1, 8, 8, 4), "float32"), W: T.Buffer((3, 3, 4, 6), "float32"),
           Y: T.Buffer((1, 6, 6, 6), "float32")):
    for n, h, w, co, rh, rw, ci in T.grid(1, 6, 6, 6, 3, 3, 4):
        with T.block("C"):
            vn, vh, vw, vco, vrh, vrw, vci = T.axis.remap("SSSSRRR", [n, h, w, co, rh, rw, ci])
            with T.init():
                Y[vn, vh, vw, vco] = T.float32(0)
            Y[vn, vh, vw, vco] = Y[vn, vh, vw, vco] + X[vn, vh + vrh, vw + vrw, vci] * W[vrh, vrw, vci, vco]


def _conv_ref(x, w):
    out = np.zeros((1, 6, 6, 6), "float32")
    for rh in range(3):
        for rw in range(3):
            out += np.einsum("nhwc,co->nhwo", x[:, rh:rh + 6, rw:rw + 6, :], w[rh, rw])
    return out


rng = np.random.default_rng(0)
_A, _B = rng.random((12, 16), dtype=np.float32), rng.random((16, 10), dtype=np.float32)
_X, _W = rng.random((1, 8, 8, 4), dtype=np.float32), rng.random((3, 3, 4, 6), dtype=np.float32)
WORKLOADS = {
    "matmul": (matmul, [_A, _B], (12, 10), _A @ _B),
    "matmul_relu": (matmul_relu, [_A, _B], (12, 10), np.maximum(_A @ _B, 0)),
    "conv2d": (conv2d, [_X, _W], (1, 6, 6, 6), _conv_ref(_X, _W)),
}

ACTIONS = ["split", "split_uneven", "fuse", "reorder", "parallel", "vectorize", "unroll", "decompose",
           "cache_read", "cache_write", "compute_at", "reverse_compute_at"]


def _pick_primitive(sch, block, loops, action, pick, factor):
    """The primitive call (a thunk) for one step around the compute block, or None to skip the step.
    Handle lookups happen here, outside the call, so that the call alone may change the trace."""
    pos = pick % len(loops)
    loop = loops[pos]
    if action == "split":
        extent = int(sch.get(loop).extent)
        divisors = [d for d in range(1, extent + 1) if extent % d == 0]
        return lambda: sch.split(loop, factors=[None, divisors[factor % len(divisors)]])
    if action == "split_uneven":
        return lambda: sch.split(loop, factors=[None, 2 + factor % 5])
    if action == "fuse" and pos + 1 < len(loops):
        return lambda: sch.fuse(loop, loops[pos + 1])
    if action == "reorder":
        other = factor % len(loops)
        if other != pos:
            outer, inner = sorted((pos, other))
            return lambda: sch.reorder(loops[inner], loops[outer])  # swap two loops of the nest
    if action in ("parallel", "vectorize", "unroll"):
        return lambda: getattr(sch, action)(loop)
    if action == "decompose":
        return lambda: sch.decompose_reduction(block, loop)
    if action == "cache_read":
        index = factor % len(sch.get(block).reads)
        return lambda: sch.cache_read(block, index, "global")
    if action == "cache_write":
        return lambda: sch.cache_write(block, 0, "global")
    if action == "compute_at":
        producers = sch.get_producers(block)
        if producers:
            return lambda: sch.compute_at(producers[factor % len(producers)], loop)
    if action == "reverse_compute_at":
        consumers = sch.get_consumers(block)
        if consumers:
            return lambda: sch.reverse_compute_at(consumers[factor % len(consumers)], loop)
    return None


@pytest.mark.parametrize("name", sorted(WORKLOADS))
@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.sampled_from(ACTIONS), st.integers(0, 20), st.integers(0, 20)),
                      min_size=1, max_size=7))
def test_random_schedules_preserve_results_and_replay(name, steps):
    func, inputs, out_shape, expected = WORKLOADS[name]
    sch = tvm.tir.Schedule(func)
    block = sch.get_block("C")  # the handle follows decompose_reduction's rename to "C_update"
    for action, pick, factor in steps:
        call = _pick_primitive(sch, block, sch.get_loops(block), action, pick, factor)
        if call is None:
            continue
        before, n = sch.mod, len(sch.trace)
        try:
            call()
        except tvm.tir.ScheduleError:
            assert sch.mod is before and len(sch.trace) == n
    if any(inst.kind == "decompose_reduction" for inst in sch.trace.insts):
        assert sch.get(block).name_hint == "C_update"
    out = tvm.nd.array(np.zeros(out_shape, "float32"))
    tvm.build(sch.mod, target="llvm")(*[tvm.nd.array(x) for x in inputs], out)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-5)
    fresh = tvm.tir.Schedule(func)
    Trace.from_json(sch.trace.as_json()).apply_to_schedule(fresh)
    tvm.ir.assert_structural_equal(fresh.mod, sch.mod)
