"""Explicit unrolling is capped so that a huge ``T.unroll`` nest cannot stall LLVM for minutes."""
import time

import numpy as np

import tensorize as tvm
from tensorize.ir import stmt as S
from tensorize.ir.functor import post_order_visit
from tensorize.script import tir as T


@T.prim_func
def big_unroll(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    for ij in T.unroll(1024):
        for k in range(32):
            with T.block("C"):
                vi = T.axis.spatial(32, ij // 32)
                vj = T.axis.spatial(32, ij % 32)
                vk = T.axis.reduce(32, k)
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def _loops(mod):
    (func,) = mod.functions.values()
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, S.For) else None)
    return found


def test_huge_unroll_stays_a_loop_and_builds_quickly():
    lowered = tvm.lower(big_unroll)
    assert 1024 in [int(f.extent) for f in _loops(lowered) if f.kind == S.ForKind.SERIAL]  # kept as a loop
    start = time.perf_counter()
    mod = tvm.build(big_unroll, target="llvm")
    assert time.perf_counter() - start < 60
    rng = np.random.default_rng(0)
    a, b = rng.random((32, 32), dtype=np.float32), rng.random((32, 32), dtype=np.float32)
    c = tvm.nd.array(np.zeros((32, 32), "float32"))
    mod(a, b, c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)


def test_the_limit_is_configurable():
    with tvm.transform.PassContext(config={"tir.UnrollLoop": {"explicit_max_steps": 1 << 20}}):
        lowered = tvm.lower(big_unroll)
    assert all(int(f.extent) != 1024 for f in _loops(lowered))  # fully expanded
