"""Intel AMX intrinsics: assembly for an AMX CPU, numerics through a numpy model of the tiles (the interpreter
runs the very instruction calls) and through the descriptions compiled for this CPU, the OS permission and
the feature checks; real runs where the CPU has AMX."""
import re

import numpy as np
import pytest

import tensorize as tvm
from tensorize.codegen.llvm.features import MissingTargetFeatureError
from tensorize.codegen.python.interpreter import run_prim_func
from tensorize.runtime.amx import AMXPermissionError, amx_permitted, uses_amx
from tensorize.target import host_cpu

import intrinsics  # noqa: F401  (registers the families)
from intrinsics.x86_amx import (AMX_BF16_INTRIN, AMX_U8S8_INTRIN, INSTRUCTIONS, ISSUE_ORDERS, amx_matmul_intrin,
                                impl_variant_intrin, tile_config)
from intrinsics.x86_amx_model import AMXError, AMXModel, bf16_to_f32
from intrinsics.x86_amx_schedule import (amx_conv2d_nhwc, amx_gemm, emulation_schedule, pack_b, schedule_amx_conv2d,
                                         schedule_amx_gemm)
from tests.workloads import int8_gemm

SPR = "llvm -mcpu=sapphirerapids"
HOST_FEATURES = host_cpu()[1]


def _cpuinfo_has(flag: str) -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return any(flag in line.split() for line in f if line.startswith("flags"))
    except OSError:
        return False


HAS_AMX = _cpuinfo_has("amx_tile") and _cpuinfo_has("amx_int8") and "amx-int8" in HOST_FEATURES
needs_amx = pytest.mark.skipif(not HAS_AMX, reason="the host CPU has no AMX (amx_tile/amx_int8 in /proc/cpuinfo)")
needs_amx_bf16 = pytest.mark.skipif(not (HAS_AMX and _cpuinfo_has("amx_bf16")), reason="the host CPU has no AMX-BF16")


def bf16_bits(x):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def operands(a_dtype, b_dtype, M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    if a_dtype == "bfloat16":
        a, b = bf16_bits(rng.standard_normal((M, K))), bf16_bits(rng.standard_normal((N, K)))
        ref = bf16_to_f32(a).astype(np.float64) @ bf16_to_f32(b).astype(np.float64).T
        return a, b, ref
    lo = {"uint8": 0, "int8": -128}
    a = rng.integers(lo[a_dtype], lo[a_dtype] + 256, (M, K)).astype(a_dtype)
    b = rng.integers(lo[b_dtype], lo[b_dtype] + 256, (N, K)).astype(b_dtype)
    a[0], b[0] = np.iinfo(a_dtype).max, np.iinfo(b_dtype).min  # the extremes of the range
    return a, b, a.astype(np.int64) @ b.astype(np.int64).T


def nd(x):
    """A runtime tensor; uint16 arrays hold bfloat16 bits."""
    return tvm.nd.array(x, dtype="bfloat16") if x.dtype == np.uint16 else tvm.nd.array(x)


def check(got, ref, a_dtype, K):
    if a_dtype == "bfloat16":  # f32 sums of exact products: the order of K differs from the reference's
        np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6 * K * np.abs(ref).max() + 1e-5)
    else:
        np.testing.assert_array_equal(got, ref)


# -- the datasheet ------------------------------------------------------------------------------------
def test_registered_names_features_and_register_limit():
    for (a, b), (instruction, c, k_step, features) in INSTRUCTIONS.items():
        intrin = tvm.tir.TensorIntrin.get(amx_matmul_intrin(a, b))
        assert intrin.meta.extra["instruction"] == instruction and intrin.meta.features == features
        assert sorted(op.dtype for op in intrin.meta.operands) == sorted((a, b, c))
    assert tvm.tir.TensorIntrin.get(AMX_U8S8_INTRIN).meta.features == ("amx-tile", "amx-int8")
    assert tvm.tir.TensorIntrin.get(AMX_BF16_INTRIN).meta.features == ("amx-tile", "amx-bf16")
    assert amx_matmul_intrin("uint8", "int8", 2, 2, 16) == "matmul_32x32x1024_u8i8s32_amx"
    with pytest.raises(ValueError, match="tile registers"):
        amx_matmul_intrin("uint8", "int8", 2, 3, 1)  # 6 accumulators + 2 + 3 > 8
    with pytest.raises(ValueError, match="no instruction"):
        amx_matmul_intrin("float32", "float32")


def test_tile_config_bytes():
    raw = b"".join(w.to_bytes(8, "little") for w in tile_config())
    assert raw[0] == 1 and raw[1] == 0
    assert all(raw[16 + 2 * t] == 64 and raw[17 + 2 * t] == 0 for t in range(8)) and raw[32:48] == bytes(16)
    assert raw[48:56] == bytes([16] * 8) and raw[56:64] == bytes(8)


# -- assembly for an AMX CPU (compiled here, not run) ----------------------------------------------
@pytest.mark.parametrize("a_dtype,b_dtype", list(INSTRUCTIONS))
def test_assembly_has_the_tile_instructions(a_dtype, b_dtype):
    sch = schedule_amx_gemm(amx_gemm(64, 64, 128, a_dtype, b_dtype), parallel=False)
    asm = tvm.build(sch.mod, target=SPR).get_source("asm")
    instruction = INSTRUCTIONS[(a_dtype, b_dtype)][0]
    assert re.search(rf"\b{instruction}\s+%tmm\d, %tmm\d, %tmm\d", asm), instruction
    assert "ldtilecfg" in asm and re.search(r"tileloadd\s+\(", asm) and re.search(r"tilestored\s+%tmm", asm)
    # the 2 x 2 block: 4 accumulators, each multiplied once per K step
    assert len(re.findall(rf"\b{instruction}\b", asm)) % 4 == 0


def test_register_blocking_uses_all_eight_tiles():
    sch = schedule_amx_gemm(amx_gemm(32, 32, 256), m_tiles=2, n_tiles=2, k_steps=4, parallel=False)
    asm = tvm.build(sch.mod, target=SPR).get_source("asm")  # one call: a 32 x 32 block, 4 K steps
    assert set(re.findall(r"%tmm(\d)", asm)) == set("01234567")
    # the accumulators are zeroed (the init fused into tilezero) and stored once, the K steps stream A and B (the
    # loop may be unrolled); the tiles are configured once and released
    stores, loads, dots, zeros, configs, releases = (len(re.findall(rf"\b{op}\b", asm)) for op in (
        "tilestored", "tileloadd", "tdpbusd", "tilezero", "ldtilecfg", "tilerelease"))
    assert (stores, zeros, configs, releases) == (4, 4, 1, 1) and (loads, dots) in ((4, 4), (4 * 4, 16))


# -- numerics: the instruction calls on the numpy model of the tiles ---------------------------------
@pytest.mark.parametrize("a_dtype,b_dtype", list(INSTRUCTIONS))
def test_impl_on_the_tile_model(a_dtype, b_dtype):
    name = amx_matmul_intrin(a_dtype, b_dtype, 2, 2, 4)
    impl = tvm.tir.TensorIntrin.get(name).impl
    k_step = INSTRUCTIONS[(a_dtype, b_dtype)][2]
    a, b, ref = operands(a_dtype, b_dtype, 32, 32, 4 * k_step, seed=1)
    c_dtype = np.int32 if k_step == 64 else np.float32
    c = np.full((32, 32), 3, c_dtype)
    run_prim_func(impl, a, pack_b(b, 4 if k_step == 64 else 2), c, externs=AMXModel().externs())
    check(c, ref + 3, a_dtype, 4 * k_step)


@pytest.mark.parametrize("blocking", [(1, 1, 3), (1, 2, 1), (1, 2, 3), (2, 1, 3), (2, 2, 1), (2, 2, 3), (1, 3, 2),
                                      (3, 1, 2)])
@pytest.mark.parametrize("issue,prefetch,stream,columns", [(order, "", "", False) for order in ISSUE_ORDERS] + [
    ("pipelined", "ab", "", False), ("grouped", "b", "a", True), ("pipelined", "", "b", True)])
def test_issue_orders_on_the_tile_model(blocking, issue, prefetch, stream, columns):
    """Both issue orders, with prefetches and no-reuse loads or not, compute the block. The model runs the calls in
    program order, so a load issued before the last multiply that reads the tile's previous contents would change
    the sums."""
    mt, nt, ks = blocking
    intrin = impl_variant_intrin(amx_matmul_intrin("uint8", "int8", mt, nt, ks), issue, prefetch, stream=stream,
                                 multiply_order="columns" if columns else "rows")
    a, b, ref = operands("uint8", "int8", 16 * mt, 16 * nt, 64 * ks, seed=11)
    c = np.full((16 * mt, 16 * nt), 3, np.int32)
    run_prim_func(intrin.impl, a, pack_b(b), c, externs=AMXModel().externs())
    check(c, ref + 3, "uint8", 64 * ks)


def _loop_calls(func) -> list:
    """(instruction, first tile) of the calls inside the impl's K-step loop, in program order."""
    text = func.script()
    body = text[text.index("for s in range("):].split("\n")[1:]
    indent = len(body[0]) - len(body[0].lstrip())
    calls = [line for line in body[:next(i for i, ln in enumerate(body) if len(ln) - len(ln.lstrip()) < indent)]]
    return [(m[1], int(m[2])) for m in (re.search(r'"llvm\.x86\.(\w+)", T\.int8\((\d)\)', ln) for ln in calls) if m]


def test_pipelined_order_loads_the_next_step_between_the_multiplies():
    """2 x 2 tiles (C 0-3, A 4-5, B 6-7): A0 and B0 of the next step load right after their last multiply; A1 and
    B1, last read by the step's final multiply, at the step's start. Grouped: four loads, four multiplies."""
    name = amx_matmul_intrin("bfloat16", "bfloat16", 2, 2, 4)
    load, dot = "tileloadd64", "tdpbf16ps"
    assert _loop_calls(tvm.tir.TensorIntrin.get(name).impl) == [
        (load, 7), (load, 5), (dot, 0), (dot, 1), (load, 4), (dot, 2), (load, 6), (dot, 3)]
    assert _loop_calls(impl_variant_intrin(name, "grouped").impl) == [
        (load, 4), (load, 5), (load, 6), (load, 7), (dot, 0), (dot, 1), (dot, 2), (dot, 3)]
    with pytest.raises(ValueError, match="issue order"):
        impl_variant_intrin(name, "reversed")


def test_column_order_gives_bs_next_loads_the_lead_and_is_the_a_packed_default():
    """Multiplies column by column (C00, C10, C01, C11): B0 reloads after its last multiply (the second), A0 after
    the third; A-packed intrinsics, which serve the sketch where A stays in L1 and B streams, order them so."""
    load, dot = "tileloadd64", "tdpbf16ps"
    expected = [(load, 4 + 1), (load, 6 + 1), (dot, 0), (dot, 2), (load, 6), (dot, 1), (load, 4), (dot, 3)]
    packed = tvm.tir.TensorIntrin.get(amx_matmul_intrin("bfloat16", "bfloat16", 2, 2, 8, a_packed=True))
    assert packed.meta.extra["impl_options"].multiply_order == "columns" and _loop_calls(packed.impl) == expected
    plain = amx_matmul_intrin("bfloat16", "bfloat16", 2, 2, 4)
    assert _loop_calls(impl_variant_intrin(plain, multiply_order="columns").impl) == expected
    with pytest.raises(ValueError, match="multiply order"):
        impl_variant_intrin(plain, multiply_order="diagonal")


@pytest.mark.parametrize("prefetch,a_packed", [("a", False), ("b", False), ("ab", True)])
def test_prefetch_variants_prefetch_each_tile_row_ahead(prefetch, a_packed):
    """``prefetch``: 16 ``prefetcht0`` (one a tile row) per prefetched tile per K step, ``distance`` steps ahead and
    clamped to the call's last step; the assembly holds them."""
    name = amx_matmul_intrin("bfloat16", "bfloat16", 2, 2, 4, a_packed=a_packed)
    intrin = impl_variant_intrin(name, prefetch=prefetch, distance=2)
    text = intrin.impl.script()
    loop = text[text.index("for s in range("):]
    per_step = 16 * 2 * len(prefetch)
    assert loop.split("T.call_llvm_intrin")[1:per_step + 1] and all(
        '"llvm.prefetch.p0"' in call for call in loop.split("T.call_llvm_intrin")[1:per_step + 1])
    assert "T.min(s + 2, 3)" in loop
    sch = schedule_amx_gemm(amx_gemm(64, 64, 128, "bfloat16", "bfloat16"), parallel=False, intrin=intrin,
                            pack_a=a_packed, k_steps=4)
    assert "prefetcht0" in tvm.build(sch.mod, target=SPR).get_source("asm")
    with pytest.raises(ValueError, match="name operands"):
        impl_variant_intrin(name, prefetch="c")


def test_streamed_operand_loads_with_the_no_reuse_hint():
    name = amx_matmul_intrin("uint8", "int8", 2, 2, 4)
    intrin = impl_variant_intrin(name, stream="b")
    assert intrin.name == f"{name}_pipelined_rows_stream_b"
    sch = schedule_amx_gemm(amx_gemm(64, 64, 256), parallel=False, intrin=intrin, k_steps=4)
    asm = tvm.build(sch.mod, target=SPR).get_source("asm")
    assert len(re.findall(r"tileloaddt1\s", asm)) >= 2 and re.search(r"tileloadd\s", asm)  # B hinted, A and C not
    with pytest.raises(ValueError, match="name operands"):
        impl_variant_intrin(name, stream="x")


def _check_gemm_on_the_tile_model(sch, a_dtype, b_dtype, M, N, K, seed):
    """Run the scheduled GEMM on the tile model (C filled with 7 first: the init must overwrite it), B pre-packed
    unless the schedule pads (and packs) it, and check the result."""
    a, b, ref = operands(a_dtype, b_dtype, M, N, K, seed=seed)
    padded = "pad_einsum" in [inst.kind for inst in sch.trace.insts]
    for program in (sch.mod, tvm.lower(sch.mod)):  # lowered: tiles configured once, init fused into tilezero
        c = np.full((M, N), 7, np.float32 if a_dtype == "bfloat16" else np.int32)
        run_prim_func(program, a, b if padded else pack_b(b, 4 if a_dtype != "bfloat16" else 2), c,
                      externs=AMXModel().externs())
        check(c, ref, a_dtype, K)


@pytest.mark.parametrize("shape,a_dtype,b_dtype,blocking", [((127, 255, 511), "uint8", "int8", (2, 2, None)),
                                                            ((64, 64, 128), "int8", "int8", (2, 2, None)),
                                                            ((48, 32, 192), "uint8", "uint8", (1, 1, 1)),
                                                            ((40, 40, 128), "int8", "uint8", (1, 2, 2)),
                                                            ((33, 47, 70), "bfloat16", "bfloat16", (2, 2, None))])
def test_scheduled_gemm_on_the_tile_model(shape, a_dtype, b_dtype, blocking):
    M, N, K = shape
    sch = schedule_amx_gemm(amx_gemm(M, N, K, a_dtype, b_dtype), *blocking, parallel=False)
    _check_gemm_on_the_tile_model(sch, a_dtype, b_dtype, M, N, K, seed=2)


@pytest.mark.parametrize("a_dtype,b_dtype", [("uint8", "int8"), ("bfloat16", "bfloat16")])
@pytest.mark.parametrize("shape,stationary,pack_a,loop_names", [
    ((64, 128, 256), "a", False, ["j_0", "i_0", "k_0", "j_1"]),
    ((64, 128, 256), "a", True, ["j_0", "i_0", "k_0", "j_1"]),
    ((64, 128, 256), "b", False, ["i_0", "j_0", "k_0", "j_1", "i_1"]),
    ((100, 100, 200), "b", False, ["i_0", "j_0", "k_0", "j_1", "i_1"])])
def test_k_chunks_outside_the_column_blocks_on_the_tile_model(a_dtype, b_dtype, shape, stationary, pack_a, loop_names):
    """``stationary``: K chunks outside the blocks of C that reuse the stationary operand's chunk (``"a"``: the
    panel's column blocks; ``"b"``: the region's row blocks, inside the column blocks), so the accumulators are
    stored after each chunk and reloaded for the next; the sums stay exact (int8) or within bf16 tolerance, padded
    shapes too, and the init still overwrites C once."""
    M, N, K = shape
    sch = schedule_amx_gemm(amx_gemm(M, N, K, a_dtype, b_dtype), 2, 2, 1, parallel=False, stationary=stationary,
                            pack_a=pack_a, panel_bytes=2 * 32 * 256 * (2 if a_dtype == "bfloat16" else 1),
                            region_rows=64)  # two column blocks a panel, two row blocks a region
    loops = [(sch.get(lp).loop_var.name, int(sch.get(lp).extent)) for lp in sch.get_loops(sch.get_block("C_o"))]
    assert [name for name, _ in loops] == loop_names and loops[3][1] == 2 and loops[2][1] > 1, loops
    if stationary == "b":
        assert loops[4][1] == 2, loops
    _check_gemm_on_the_tile_model(sch, a_dtype, b_dtype, M, N, K, seed=4)


def test_stationary_must_name_an_operand():
    with pytest.raises(ValueError, match="stationary must be"):
        schedule_amx_gemm(amx_gemm(32, 32, 64), stationary="c")


def test_a_view_of_a_wider_buffer_is_tiled_by_the_gemms_extents():
    """A stored with a padded row stride (``K + 32`` columns, the GEMM reading the first K): the tile loads take
    that stride, and the GEMM's shape comes from its loops, not A's buffer."""
    M, N, K = 32, 32, 128
    sch = schedule_amx_gemm(int8_gemm(M, N, K, a_cols=K + 32), parallel=False)
    assert "pad_einsum" not in [inst.kind for inst in sch.trace.insts]
    a, b, ref = operands("uint8", "int8", M, N, K, seed=5)
    wide = np.zeros((M, K + 32), np.uint8)
    wide[:, :K] = a
    c = np.zeros((M, N), np.int32)
    run_prim_func(sch.mod, wide, pack_b(b), c, externs=AMXModel().externs())
    check(c, ref, "uint8", K)


@pytest.mark.parametrize("shape,a_dtype,b_dtype", [((64, 64, 256), "uint8", "int8"),
                                                   ((64, 96, 128), "bfloat16", "bfloat16"),
                                                   ((33, 47, 70), "bfloat16", "bfloat16")])
def test_a_packed_into_tiles_on_the_tile_model_and_in_assembly(shape, a_dtype, b_dtype):
    """``pack_a``: A copied into tiles of one contiguous KiB (the ``_pa`` intrinsics, loaded at a 64-byte row
    stride), padded shapes too; the sums are those of the unpacked schedule, and the assembly loads the tiles."""
    M, N, K = shape
    sch = schedule_amx_gemm(amx_gemm(M, N, K, a_dtype, b_dtype), parallel=False, pack_a=True)
    assert "_amx_pa" in str(sch.trace)
    _check_gemm_on_the_tile_model(sch, a_dtype, b_dtype, M, N, K, seed=6)
    asm = tvm.build(sch.mod, target=SPR).get_source("asm")
    assert re.search(rf"\b{INSTRUCTIONS[(a_dtype, b_dtype)][0]}\s+%tmm", asm) and "ldtilecfg" in asm


def test_a_packed_into_tiles_emulated_matches_numpy():
    M, N, K = 64, 64, 256
    sch = schedule_amx_gemm(amx_gemm(M, N, K, "bfloat16", "bfloat16"), emulate=True, pack_a=True)
    a, b, ref = operands("bfloat16", "bfloat16", M, N, K, seed=7)
    c = tvm.nd.array(np.zeros((M, N), np.float32))
    tvm.build(sch.mod, target="llvm")(nd(a), nd(pack_b(b, 2)), c)
    check(c.numpy(), ref, "bfloat16", K)


def conv_operands(dtype, N, H, W, CI, CO, KH, KW, seed=0):
    """data, weights as the im2col GEMM's W[co, (rh, rw, ci)], and the NHWC reference flattened to (M, CO)."""
    if dtype == "bfloat16":
        a, w, _ = operands(dtype, dtype, N * H * W, KH * KW * CO, CI, seed)
        data, weight = a.reshape(N, H, W, CI), w.reshape(KH, KW, CO, CI).transpose(0, 1, 3, 2)
        val = bf16_to_f32
    else:
        rng = np.random.default_rng(seed)
        data = rng.integers(0, 256, (N, H, W, CI)).astype(np.uint8)
        weight = rng.integers(-128, 128, (KH, KW, CI, CO)).astype(np.int8)
        val = np.asarray
    OH, OW = H - KH + 1, W - KW + 1
    ref = sum(np.einsum("nhwc,co->nhwo", val(data[:, r:r + OH, s:s + OW]).astype(np.float64),
                        val(weight[r, s]).astype(np.float64)) for r in range(KH) for s in range(KW))
    wk = np.ascontiguousarray(weight.reshape(KH * KW * CI, CO).T)
    return data, wk, ref.reshape(N * OH * OW, CO)


def _b_arg(sch, b, pack):
    func = sch.mod["main"]
    return pack_b(b, pack) if len(func.buffer_map[func.params[1]].shape) == 4 else b


@pytest.mark.parametrize("dtype,shape", [("uint8", (1, 12, 12, 64, 48, 3, 3)), ("bfloat16", (1, 9, 7, 32, 32, 2, 2))])
def test_conv2d_nhwc_on_the_tile_model_and_in_assembly(dtype, shape):
    w_dtype = "int8" if dtype == "uint8" else dtype
    sch = schedule_amx_conv2d(amx_conv2d_nhwc(*shape, dtype=dtype, w_dtype=w_dtype), parallel=False)
    data, wk, ref = conv_operands(dtype, *shape)
    for program in (sch.mod, tvm.lower(sch.mod)):
        out = np.zeros(ref.shape, np.float32 if dtype == "bfloat16" else np.int32)
        run_prim_func(program, data, _b_arg(sch, wk, 2 if dtype == "bfloat16" else 4), out,
                      externs=AMXModel().externs())
        check(out, ref, dtype, shape[3] * shape[5] * shape[6])
    asm = tvm.build(sch.mod, target=SPR).get_source("asm")
    assert ("tdpbf16ps" if dtype == "bfloat16" else "tdpbusd") in asm


def test_conv2d_nhwc_emulated_layer_matches_numpy():
    shape = (1, 30, 30, 64, 64, 3, 3)
    sch = schedule_amx_conv2d(amx_conv2d_nhwc(*shape), emulate=True)
    data, wk, ref = conv_operands("uint8", *shape, seed=9)
    out = tvm.nd.array(np.zeros(ref.shape, np.int32))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(data), tvm.nd.array(_b_arg(sch, wk, 4)), out)
    np.testing.assert_array_equal(out.numpy(), ref)


def test_model_faults_like_the_hardware():
    model = AMXModel()
    with pytest.raises(AMXError, match="not configured"):
        model.tilezero(0)
    from tensorize.codegen.python.interpreter import Pointer

    bad = np.array(tile_config(), np.int64)
    bad[1] = 1  # a reserved byte
    with pytest.raises(AMXError, match="reserved"):
        model.ldtilecfg(Pointer(bad, 0))
    model.ldtilecfg(Pointer(np.array(tile_config(rows=8), np.int64), 0))
    with pytest.raises(AMXError, match="shapes do not fit"):  # 8-row A and B tiles cannot make a 64-deep dot
        model.int8_dot("tdpbusd", 0, 4, 6)
    rows = np.zeros(8 * 64 + 63, np.uint8)  # 8 rows of 64 bytes at a 64-byte stride fit; at 65 the last does not
    model.tileloadd64(0, Pointer(rows, 0), 64)
    model.tilestored64(0, Pointer(rows, 63), 64)
    for instruction in (model.tileloadd64, model.tilestored64):
        with pytest.raises(AMXError, match=r"row 7 at byte 520 is outside the buffer \(575 bytes\)"):
            instruction(0, Pointer(rows, 65), 65)


# -- numerics: the descriptions in place of the instructions, compiled for this CPU -----------------
@pytest.mark.parametrize("shape,a_dtype,b_dtype", [((127, 255, 511), "uint8", "int8"),
                                                   ((1024, 1024, 1024), "uint8", "int8"),
                                                   ((127, 255, 511), "bfloat16", "bfloat16")])
def test_emulated_schedule_matches_numpy(shape, a_dtype, b_dtype):
    M, N, K = shape
    sch = emulation_schedule(amx_gemm(M, N, K, a_dtype, b_dtype))
    f = tvm.build(sch.mod, target="llvm")
    a, b, ref = operands(a_dtype, b_dtype, M, N, K, seed=3)
    padded = "pad_einsum" in [inst.kind for inst in sch.trace.insts]
    c = tvm.nd.array(np.zeros((M, N), np.float32 if a_dtype == "bfloat16" else np.int32))
    f(nd(a), nd(b if padded else pack_b(b, 4 if a_dtype != "bfloat16" else 2)), c)
    check(c.numpy(), ref, a_dtype, K)


@pytest.mark.slow
def test_1000_cubed_on_the_tile_model_is_padded_and_exact():
    sch = schedule_amx_gemm(amx_gemm(1000, 1000, 1000), parallel=False)
    assert "pad_einsum" in [inst.kind for inst in sch.trace.insts]
    a, b, ref = operands("uint8", "int8", 1000, 1000, 1000, seed=7)
    c = np.full((1000, 1000), 5, np.int32)
    run_prim_func(sch.mod, a, b, c, externs=AMXModel().externs())
    np.testing.assert_array_equal(c, ref)


@pytest.mark.slow
def test_emulated_bf16_1024_cubed_within_tolerance():
    sch = emulation_schedule(amx_gemm(1024, 1024, 1024, "bfloat16", "bfloat16"))
    a, b, ref = operands("bfloat16", "bfloat16", 1024, 1024, 1024, seed=8)
    c = tvm.nd.array(np.zeros((1024, 1024), np.float32))
    tvm.build(sch.mod, target="llvm")(nd(a), nd(pack_b(b, 2)), c)
    check(c.numpy(), ref, "bfloat16", 1024)


@pytest.mark.slow
def test_emulated_1000_cubed_is_padded_and_exact():
    sch = emulation_schedule(amx_gemm(1000, 1000, 1000))
    assert "pad_einsum" in [inst.kind for inst in sch.trace.insts]
    a, b, ref = operands("uint8", "int8", 1000, 1000, 1000, seed=4)
    c = tvm.nd.array(np.zeros((1000, 1000), np.int32))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_array_equal(c.numpy(), ref)


# -- the CPU and the OS -----------------------------------------------------------------------------
@pytest.mark.skipif("amx-tile" in HOST_FEATURES, reason="the host has AMX")
def test_no_amx_host_build_names_the_missing_feature():
    sch = schedule_amx_gemm(amx_gemm(32, 32, 64), parallel=False)
    with pytest.raises(MissingTargetFeatureError, match="amx-tile") as err:
        tvm.build(sch.mod, target="llvm -mcpu=native")
    assert "sapphirerapids" in str(err.value)
    with pytest.raises(MissingTargetFeatureError, match="amx"):
        tvm.build(sch.mod, target="llvm -mcpu=znver4")


@pytest.mark.skipif(HAS_AMX, reason="the host has AMX")
def test_calling_amx_code_without_amx_raises_instead_of_sigill(tmp_path):
    sch = schedule_amx_gemm(amx_gemm(32, 32, 64), parallel=False)
    f = tvm.build(sch.mod, target=SPR)
    assert f.requires_amx and uses_amx(f.get_source("ll"))
    args = [tvm.nd.array(np.zeros((32, 64), "uint8")), tvm.nd.array(np.zeros((2, 16, 16, 4), "int8")),
            tvm.nd.array(np.zeros((32, 32), "int32"))]
    with pytest.raises(AMXPermissionError, match="ARCH_REQ_XCOMP_PERM"):
        f(*args)
    path = str(tmp_path / "amx.so")
    f.export_library(path)
    loaded = tvm.runtime.load_module(path)
    assert loaded.requires_amx
    with pytest.raises(AMXPermissionError):
        loaded(*args)
    plain = tvm.build(emulation_schedule(amx_gemm(32, 32, 64)).mod, target="llvm")
    assert not plain.requires_amx


def test_search_context_offers_amx_only_where_the_target_has_it():
    from search.context import TuneContext

    func = amx_gemm(64, 64, 64)
    assert not [n for n in TuneContext.create(func, "llvm -mcpu=znver4", seed=0).intrinsics if "_amx" in n]
    assert AMX_U8S8_INTRIN in TuneContext.create(func, SPR, seed=0).intrinsics


# -- real AMX ----------------------------------------------------------------------------------------
@needs_amx
@pytest.mark.parametrize("shape,a_dtype,b_dtype", [((1024, 1024, 1024), "uint8", "int8"),
                                                   ((127, 255, 511), "uint8", "int8"),
                                                   ((1000, 1000, 1000), "int8", "int8")])
def test_amx_int8_gemm_runs_exactly(shape, a_dtype, b_dtype):
    M, N, K = shape
    sch = schedule_amx_gemm(amx_gemm(M, N, K, a_dtype, b_dtype))
    f = tvm.build(sch.mod, target="llvm -mcpu=native")
    a, b, ref = operands(a_dtype, b_dtype, M, N, K, seed=5)
    padded = "pad_einsum" in [inst.kind for inst in sch.trace.insts]
    c = tvm.nd.array(np.full((M, N), 7, np.int32))
    f(tvm.nd.array(a), tvm.nd.array(b if padded else pack_b(b)), c)
    np.testing.assert_array_equal(c.numpy(), ref)
    assert amx_permitted()  # the first call asked the OS for the tile registers


@needs_amx_bf16
@pytest.mark.parametrize("shape", [(1024, 1024, 1024), (127, 255, 511)])
def test_amx_bf16_gemm_runs_within_bf16_tolerance(shape):
    M, N, K = shape
    sch = schedule_amx_gemm(amx_gemm(M, N, K, "bfloat16", "bfloat16"))
    f = tvm.build(sch.mod, target="llvm -mcpu=native")
    a, b, ref = operands("bfloat16", "bfloat16", M, N, K, seed=6)
    padded = "pad_einsum" in [inst.kind for inst in sch.trace.insts]
    c = tvm.nd.array(np.zeros((M, N), np.float32))
    f(nd(a), nd(b if padded else pack_b(b, 2)), c)
    check(c.numpy(), ref, "bfloat16", K)


def test_the_search_leaves_out_the_a_packed_intrinsics():
    """Registered by a hand schedule, the ``_pa`` intrinsics stay out of the search's space (it must not depend on
    what ran before in the process)."""
    from search.context import available_intrinsics

    name = amx_matmul_intrin("bfloat16", "bfloat16", 2, 2, 4, a_packed=True)
    names = available_intrinsics(tvm.target.Target(SPR))
    assert name not in names and amx_matmul_intrin("bfloat16", "bfloat16", 2, 2, 4) in names
