"""Property: random valid sequences of schedule primitives never change what a program computes,
and their traces replay (through JSON) to a structurally equal module."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorize as tvm
from tensorize.schedule import Trace
from tensorize.script import tir as T


@T.prim_func
def matmul(A: T.Buffer((12, 16), "float32"), B: T.Buffer((16, 10), "float32"), C: T.Buffer((12, 10), "float32")):
    for i, j, k in T.grid(12, 10, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


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

ACTIONS = ["split", "split_uneven", "fuse", "reorder", "parallel", "vectorize", "unroll", "decompose"]


def _apply(sch, block, loops, action, pick, factor):
    """Apply one primitive to the compute block; invalid choices must raise ScheduleError."""
    pos = pick % len(loops)
    loop = loops[pos]
    if action == "split":
        extent = int(sch.get(loop).extent)
        divisors = [d for d in range(1, extent + 1) if extent % d == 0]
        sch.split(loop, factors=[None, divisors[factor % len(divisors)]])
    elif action == "split_uneven":
        sch.split(loop, factors=[None, 2 + factor % 5])
    elif action == "fuse" and pos + 1 < len(loops):
        sch.fuse(loop, loops[pos + 1])
    elif action == "reorder":
        other = factor % len(loops)
        if other != pos:
            outer, inner = sorted((pos, other))
            sch.reorder(loops[inner], loops[outer])  # swap two loops of the nest
    elif action in ("parallel", "vectorize", "unroll"):
        getattr(sch, action)(loop)
    elif action == "decompose":
        sch.decompose_reduction(block, loop)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.sampled_from(ACTIONS), st.integers(0, 20), st.integers(0, 20)),
                      min_size=1, max_size=6))
def test_random_schedules_preserve_results_and_replay(name, steps):
    func, inputs, out_shape, expected = WORKLOADS[name]
    sch = tvm.tir.Schedule(func)
    for action, pick, factor in steps:
        try:
            block = sch.get_block("C")
        except tvm.tir.ScheduleError:
            break  # the block was renamed by decompose_reduction: stop here
        loops = sch.get_loops(block)
        before, n = sch.mod, len(sch.trace)
        try:
            _apply(sch, block, loops, action, pick, factor)
        except tvm.tir.ScheduleError:
            assert sch.mod is before and len(sch.trace) == n
    out = tvm.nd.array(np.zeros(out_shape, "float32"))
    tvm.build(sch.mod, target="llvm")(*[tvm.nd.array(x) for x in inputs], out)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-5)
    fresh = tvm.tir.Schedule(func)
    Trace.from_json(sch.trace.as_json()).apply_to_schedule(fresh)
    tvm.ir.assert_structural_equal(fresh.mod, sch.mod)
