"""The depthwise-conv hand schedule (experiments/schedules.py ``cpu_hand``) compiles to a register
tile of zmm accumulators, with the inlined padding guard lowered to branches (no gathers, no
select over an out-of-bounds load) and no stack or heap buffer left for the tile."""
import re

import numpy as np
import pytest

import tensorize as tvm
from tests.perf_smoke.asm_shapes import AVX512_TARGET, build, count, hottest_block, llvm_functions
from experiments.schedules import apply_schedule
from experiments.workloads.conv import depthwise_conv2d_nhwc, depthwise_reference
from tensorize import te
from tensorize.ir import IRModule
from tensorize.ir import expr as E
from tensorize.ir.functor import post_order_visit

SHAPE = (1, 16, 16, 32, 3, 3, 1, 1)


def scheduled():
    data, kernel, out = depthwise_conv2d_nhwc(*SHAPE)
    mod = IRModule({"main": te.create_prim_func([data, kernel, out]).with_attr("global_symbol", "main")})
    return apply_schedule("dep_conv", "cpu_hand", tvm.tir.Schedule(mod))


@pytest.fixture(scope="module")
def avx512_kernel():
    return build(scheduled(), AVX512_TARGET)


def test_cpu_hand_matches_reference():
    rt_mod = build(scheduled(), "llvm -mcpu=native")
    rng = np.random.default_rng(2)
    n, h, w, c, kh, kw, stride, pad = SHAPE
    data = rng.standard_normal((n, h, w, c)).astype("float32")
    kernel = rng.standard_normal((kh, kw, c)).astype("float32")
    out = tvm.nd.array(np.zeros((n, h, w, c), dtype="float32"))
    rt_mod(tvm.nd.array(data), tvm.nd.array(kernel), out)
    np.testing.assert_allclose(out.numpy(), depthwise_reference(data, kernel, stride, pad), rtol=1e-5, atol=1e-5)


def test_padding_guard_stays_scalar_after_vectorization():
    lowered = tvm.lower(scheduled().mod)["main"]
    guards = []
    post_order_visit(lowered.body, lambda n: guards.append(n) if isinstance(n, E.Call) and n.op.name == "tir.if_then_else" else None)
    assert guards
    for guard in guards:
        assert guard.args[0].dtype == "bool", guard.args[0].dtype  # one branch, not a per-lane select
        assert guard.dtype.startswith("float32x"), guard.dtype  # the guarded load is a vector


def test_tile_is_in_zmm_registers_without_buffers(avx512_kernel):
    inner = hottest_block(avx512_kernel.get_source("asm"))
    assert count(inner, r"^vfmadd\d+ps\s.*%zmm") >= 16, inner
    for name, body in llvm_functions(avx512_kernel.get_source("ll")).items():
        assert "alloca" not in body or name == "main", f"{name} keeps a stack buffer"
        assert "aligned_alloc" not in body, name
        assert "masked.gather" not in body and "masked.scatter" not in body, name
    assert re.search(r"GOMP_parallel", avx512_kernel.get_source("ll"))
