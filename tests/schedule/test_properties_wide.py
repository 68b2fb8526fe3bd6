"""Property, over a wider space than test_properties.py: random schedules mixing loop primitives with
blockize, rfactor, inlining, storage_align, transform_layout, pad_einsum and VNNI tensorization, on
int8/uint8/float16/float32 workloads (GEMMs of multiple and odd shapes, conv2d NHWC, depthwise conv,
matmul+relu, a max reduction). After every primitive the module prints and parses back structurally
equal; at the end it builds and computes what numpy computes, and its trace replays."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hypothesis_setup import examples

import tensorize as tvm
from tensorize.schedule import Trace
from tensorize.script import from_source
from tensorize.script import tir as T
from tensorize.target import host_cpu
from tests.workloads import int8_gemm

from tests.schedule.test_properties import ACTIONS, _pick_primitive

TARGET = "llvm -mcpu=native"
HAS_VNNI = "avx512vnni" in host_cpu()[1]


@T.prim_func
def depthwise(X: T.Buffer((1, 7, 7, 8), "float32"), W: T.Buffer((3, 3, 8), "float32"),
              Y: T.Buffer((1, 5, 5, 8), "float32")):
    for n, h, w, c, rh, rw in T.grid(1, 5, 5, 8, 3, 3):
        with T.block("C"):
            vn, vh, vw, vc, vrh, vrw = T.axis.remap("SSSSRR", [n, h, w, c, rh, rw])
            with T.init():
                Y[vn, vh, vw, vc] = T.float32(0)
            Y[vn, vh, vw, vc] = Y[vn, vh, vw, vc] + X[vn, vh + vrh, vw + vrw, vc] * W[vrh, vrw, vc]


@T.prim_func
def row_max(A: T.Buffer((12, 20), "float16"), B: T.Buffer((12,), "float16")):
    for i, k in T.grid(12, 20):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.min_value("float16")
            B[vi] = T.max(B[vi], A[vi, vk])


@T.prim_func
def scaled_relu(A: T.Buffer((12, 16), "float32"), B: T.Buffer((16, 10), "float32"), D: T.Buffer((12, 10), "float32")):
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
            D[vi, vj] = T.max(C[vi, vj] * T.float32(0.5), T.float32(0))


rng = np.random.default_rng(1)


def _gemm_case(M, N, K):
    a = rng.integers(0, 256, (M, K), dtype=np.uint8)
    b = rng.integers(-128, 128, (N, K), dtype=np.int8)
    return int8_gemm(M, N, K), [a, b], np.zeros((M, N), "int32"), a.astype(np.int32) @ b.astype(np.int32).T


def _depthwise_case():
    x, w = rng.random((1, 7, 7, 8), dtype=np.float32), rng.random((3, 3, 8), dtype=np.float32)
    y = sum(x[:, rh:rh + 5, rw:rw + 5, :] * w[rh, rw] for rh in range(3) for rw in range(3))
    return depthwise, [x, w], np.zeros((1, 5, 5, 8), "float32"), y


def _row_max_case():
    a = (rng.random((12, 20)) * 8 - 4).astype("float16")
    return row_max, [a], np.zeros(12, "float16"), a.max(axis=1)


def _scaled_relu_case():
    a, b = rng.random((12, 16), dtype=np.float32) - 0.5, rng.random((16, 10), dtype=np.float32)
    return scaled_relu, [a, b], np.zeros((12, 10), "float32"), np.maximum(a @ b * 0.5, 0)


WORKLOADS = {"gemm_i8_32": _gemm_case(32, 32, 16), "gemm_i8_odd": _gemm_case(20, 24, 10),
             "depthwise": _depthwise_case(), "row_max_f16": _row_max_case(), "scaled_relu": _scaled_relu_case()}

WIDE_ACTIONS = ACTIONS + ["blockize", "rfactor", "compute_inline", "reverse_compute_inline", "storage_align",
                          "transform_layout", "pad_einsum", "tensorize_vnni", "vectorize", "parallel"]


def _param_buffers(sch):
    return {id(b) for b in sch.mod["main"].buffer_map.values()}


def _vnni(sch, block):
    """Pad to the intrinsic's multiples, pack B's copy as (N/16, K/4, 16, 4), tile and tensorize."""
    from intrinsics.x86 import VNNI_DOT_16x4_INTRIN

    node = sch.get(block)
    extents = [int(iv.dom.extent) for iv in node.iter_vars]
    if len(extents) != 3:
        return
    pads = [extents[0], -(-extents[1] // 16) * 16, -(-extents[2] // 4) * 4]
    if pads != extents:
        sch.pad_einsum(block, pads)
    cache = sch.cache_read(block, 1, "global")
    sch.transform_layout(cache, ("write", 0), lambda j, k: (j // 16, k // 4, j % 16, k % 4))
    loops = sch.get_loops(block)
    if len(loops) < 3:
        return
    i, j, k = loops[-3:]
    j_o, j_i = sch.split(j, [None, 16])
    k_o, k_i = sch.split(k, [None, 4])
    sch.reorder(j_o, k_o, j_i, k_i)
    sch.tensorize(j_i, VNNI_DOT_16x4_INTRIN)


def _pick_wide(sch, block, loops, action, pick, factor):
    if action == "unroll" and int(sch.get(loops[pick % len(loops)]).extent) > 64:
        return None  # fully unrolling 1024 iterations of a loop nest takes LLVM's O3 minutes
    if action in ACTIONS:
        return _pick_primitive(sch, block, loops, action, pick, factor)
    loop = loops[pick % len(loops)]
    node = sch.get(block)
    if action == "blockize":
        return lambda: sch.blockize(loop)
    if action == "rfactor":
        return lambda: sch.rfactor(loop, 0)
    if action in ("compute_inline", "reverse_compute_inline"):
        others = sch.get_producers(block) if action == "compute_inline" else sch.get_consumers(block)
        if others:
            return lambda: getattr(sch, action)(others[factor % len(others)])
    if action == "storage_align":
        ndim = len(node.writes[0].buffer.shape)
        return lambda: sch.storage_align(block, 0, factor % ndim, [4, 8, 16][pick % 3], factor % 3)
    if action == "transform_layout":
        regions = [("read", k, r) for k, r in enumerate(node.reads)] + [("write", k, r) for k, r in enumerate(node.writes)]
        kind, index, region = regions[pick % len(regions)]
        if id(region.buffer) in _param_buffers(sch):
            return None  # a parameter's layout is the caller's: the inputs would change
        f = [2, 3, 4][factor % 3]
        pad = 0 if int(region.buffer.shape[-1]) % f else None
        mapping = lambda *idx: (*idx[:-1], idx[-1] // f, idx[-1] % f)  # noqa: E731
        return lambda: sch.transform_layout(block, (kind, index), mapping, pad_value=pad)
    if action == "pad_einsum":
        m = [2, 4, 8][factor % 3]
        return lambda: sch.pad_einsum(block, [-(-int(iv.dom.extent) // m) * m for iv in node.iter_vars])
    tensorized = any(inst.kind == "tensorize" for inst in sch.trace.insts)
    if action == "tensorize_vnni" and HAS_VNNI and not tensorized and node.writes[0].buffer.dtype == "int32":
        return lambda: _vnni(sch, block)
    return None


def _assert_round_trip(mod):
    text = mod.script()
    tvm.ir.assert_structural_equal(from_source(text), mod)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.sampled_from(WIDE_ACTIONS), st.integers(0, 20), st.integers(0, 20)),
                      min_size=1, max_size=6))
def test_wide_random_schedules(name, steps):
    func, inputs, out, expected = WORKLOADS[name]
    sch = tvm.tir.Schedule(func)
    block = sch.get_block("C")
    for action, pick, factor in steps:
        try:
            loops = sch.get_loops(block)
        except tvm.tir.ScheduleError:
            break  # the block was inlined or replaced
        if not loops:
            break
        call = _pick_wide(sch, block, loops, action, pick, factor)
        if call is None:
            continue
        before, n = sch.mod, len(sch.trace)
        try:
            call()
        except tvm.tir.ScheduleError:
            if action != "tensorize_vnni":  # a macro of several primitives may stop half-way
                assert sch.mod is before and len(sch.trace) == n
        if sch.mod is not before:
            _assert_round_trip(sch.mod)
    result = tvm.nd.array(np.zeros_like(out))
    tvm.build(sch.mod, target=TARGET)(*[tvm.nd.array(x) for x in inputs], result)
    if out.dtype.kind == "i":
        np.testing.assert_array_equal(result.numpy(), expected)
    else:
        np.testing.assert_allclose(result.numpy(), expected, rtol=1e-3, atol=1e-4)
    fresh = tvm.tir.Schedule(func)
    Trace.from_json(sch.trace.as_json()).apply_to_schedule(fresh)
    tvm.ir.assert_structural_equal(fresh.mod, sch.mod)
