"""The search finds Intel AMX tensorization by itself: the candidate generator matches the AMX descs (B in
the VNNI-packed layout) on GEMMs and NHWC convolutions, the design space of an AMX target holds AMX
sketches (and a target without AMX none), sampled candidates compile to AMX code for a Sapphire Rapids CPU,
and their numerics, run on the numpy model of the tile registers, equal numpy. Real runs need AMX."""
import re

import numpy as np
import pytest

import intrinsics  # noqa: F401  (registers the families)
import tensorize as tvm
from intrinsics.x86_amx import AMX_BF16_INTRIN, AMX_U8S8_INTRIN, amx_matmul_intrin
from intrinsics.x86_amx_model import AMXModel, bf16_to_f32
from intrinsics.x86_amx_schedule import conv2d_nhwc_hwio as conv2d_nhwc
from search import apply_candidate, get_tensorize_candidates
from search.candidates.einsum import NotEinsumError
from search.candidates.packed import desc_view
from search.context import TuneContext
from search.postproc import default_postprocs
from search.schedule_rule import LAYOUT_REWRITE_PREPROC
from search.schedule_rule.amx_blocking import SKETCHES
from search.space_generator import PostOrderApply, sample_candidate
from tensorize.codegen.python.interpreter import run_prim_func
from tensorize.script import tir as T
from tensorize.target import host_cpu
from tests.workloads import int8_gemm

SPR = "llvm -mcpu=sapphirerapids"
AMX_MATTR = "llvm -mcpu=haswell -mattr=+amx-tile,+amx-int8,+amx-bf16"
HAS_AMX = {"amx-tile", "amx-int8", "amx-bf16"} <= set(host_cpu()[1])
needs_amx = pytest.mark.skipif(not HAS_AMX, reason="the host CPU has no AMX (amx-tile/amx-int8/amx-bf16)")


# -- workloads and data --------------------------------------------------------------------------
def gemm(M, N, K, dtype="uint8", w_dtype="int8", k_major=False):
    """C = A . B with B stored (N, K), or (K, N) when ``k_major``; int32 or float32 accumulation."""
    acc = "float32" if dtype == "bfloat16" else "int32"

    @T.prim_func
    def func(A: T.Buffer((M, K), dtype), B: T.Buffer((N, K), w_dtype), C: T.Buffer((M, N), acc)):
        for i, j, k in T.grid(M, N, K):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.cast(0, acc)
                C[vi, vj] = C[vi, vj] + T.Cast(acc, A[vi, vk]) * T.Cast(acc, B[vj, vk])

    @T.prim_func
    def func_k_major(A: T.Buffer((M, K), dtype), B: T.Buffer((K, N), w_dtype), C: T.Buffer((M, N), acc)):
        for i, j, k in T.grid(M, N, K):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.cast(0, acc)
                C[vi, vj] = C[vi, vj] + T.Cast(acc, B[vk, vj]) * T.Cast(acc, A[vi, vk])

    return func_k_major if k_major else func


def bf16_bits(x):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def random_operand(rng, shape, dtype):
    if dtype == "bfloat16":
        return bf16_bits(rng.standard_normal(shape))
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


def values(x):
    return bf16_to_f32(x).astype(np.float64) if x.dtype == np.uint16 else x.astype(np.int64)


def check(got, ref, depth):
    if got.dtype == np.float32:  # f32 sums of exact bf16 products, in another order than numpy's
        np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6 * depth * np.abs(ref).max() + 1e-5)
    else:
        np.testing.assert_array_equal(got, ref)


def amx_sketches(func, target=SPR, intrinsics=None):
    ctx = TuneContext.create(func, target, seed=0, num_threads=4, intrinsics=intrinsics)
    space = PostOrderApply().generate_design_space(ctx)
    return ctx, space, [s for s in space if re.search(r"matmul_\w+_amx", str(s.trace))]


def amx_names(schedules) -> set:
    return set(re.findall(r"matmul_\w+_amx", "\n".join(str(s.trace) for s in schedules)))


# -- the packed desc, read through its logical indices -------------------------------------------
def test_desc_view_reads_the_vnni_packed_b_by_its_iterators():
    view = desc_view(tvm.tir.TensorIntrin.get(amx_matmul_intrin("uint8", "int8", 2, 2, 4)).desc)
    assert sorted(view.packings) == ["B"]
    layout = view.packings["B"]
    assert [v.name for v in layout.logical] == ["vj", "vk"]
    assert layout.text(["n", "k"]) == "[n, k] -> [n // 16, k // 4, n % 16, k % 4]"
    # the map packs a whole (outer, N, K) copy: each 16 x 4 group is one contiguous run of B
    index_map = layout.index_map(1)
    assert [str(e) for e in index_map.final_indices] == ["v0", "v1 // 16", "v2 // 4", "v1 % 16", "v2 % 4"]
    bf16 = desc_view(tvm.tir.TensorIntrin.get(AMX_BF16_INTRIN).desc).packings["B"]
    assert bf16.text(["n", "k"]) == "[n, k] -> [n // 16, k // 2, n % 16, k % 2]"


def _packed_desc(index, shape):
    @T.prim_func
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (16, 8), "uint8")
        B = T.match_buffer(b, shape, "int8")
        C = T.match_buffer(c, (16, 16), "int32")
        with T.block("root"):
            for i, j, k in T.grid(16, 16, 8):
                with T.block("update"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[vi, vj] = C[vi, vj] + T.Cast("int32", A[vi, vk]) * T.Cast("int32", B[index(vj, vk)])

    return desc


@pytest.mark.parametrize("index,shape,message", [
    (lambda j, k: (j // 3, k, j % 3), (5, 8, 3), "does not divide"),
    (lambda j, k: (j // 4, k, j % 8), (4, 8, 8), "split once"),
    (lambda j, k: (j // 4, k // 2, j % 4, k % 2), (4, 4, 4, 4), "extent 4 in dimension 3"),
    (lambda j, k: (j + k,), (23,), "splits"),
])
def test_invalid_packed_indices_are_rejected_with_a_reason(index, shape, message):
    with pytest.raises(NotEinsumError, match=message):
        desc_view(_packed_desc(index, shape))


# -- candidates ----------------------------------------------------------------------------------
def test_gemm_candidate_maps_the_roles_and_packs_b():
    sch = tvm.tir.Schedule(gemm(1024, 1024, 1024))
    cands = get_tensorize_candidates(sch, "C", AMX_U8S8_INTRIN)
    assert cands.reason is None
    cand = cands[0]
    assert [(m.desc_iter, m.block_iter_names, m.intrin_extent) for m in cand.mappings] == [
        ("vi", ("vi",), 16), ("vj", ("vj",), 16), ("vk", ("vk",), 64)]
    assert not cand.needs_padding
    assert "B[vj, vk] -> [vj // 16, vk // 4, vj % 16, vk % 4]" in cand.describe()


def test_conv2d_candidate_fuses_the_output_pixels_and_the_window():
    sch = tvm.tir.Schedule(conv2d_nhwc(1, 10, 10, 64, 32, 3, 3))
    cand = get_tensorize_candidates(sch, "conv", AMX_U8S8_INTRIN)[0]
    by_iter = {m.desc_iter: m.block_iter_names for m in cand.mappings}
    assert by_iter == {"vi": ("vn", "vh", "vw"), "vj": ("vco",), "vk": ("vrh", "vrw", "vci")}
    assert [(m.extent, m.padded_extent) for m in cand.mappings] == [(64, 64), (32, 32), (576, 576)]


@pytest.mark.parametrize("k_major", [False, True])
def test_applied_candidate_packs_only_b_and_runs_exactly_on_the_tile_model(k_major):
    M, N, K = 48, 32, 192
    func = gemm(M, N, K, k_major=k_major)
    sch = tvm.tir.Schedule(func)
    name = amx_matmul_intrin("uint8", "int8", 1, 2, 3)
    cand = get_tensorize_candidates(sch, "C", name)[0]
    sch.tensorize(apply_candidate(sch, cand), name)
    text = sch.mod.script()
    assert "B_reindex[vj // 16, vk // 4, vj % 16, vk % 4] = B[" in text
    assert "A_reindex" not in text and "C_reindex" not in text, "A and C tiles are read at their row stride"
    rng = np.random.default_rng(0)
    a, b = random_operand(rng, (M, K), "uint8"), random_operand(rng, (K, N) if k_major else (N, K), "int8")
    c = np.full((M, N), 7, np.int32)
    run_prim_func(sch.mod, a, b, c, externs=AMXModel().externs())
    np.testing.assert_array_equal(c, values(a) @ (values(b) if k_major else values(b).T))


@pytest.mark.parametrize("shape", [(3, 32, 48, 256), (2, 40, 48, 130)])
def test_batch_matmul_keeps_the_batch_outside_and_is_exact(shape):
    from tests.search.test_tensor_candidates import batch_matmul

    Bt, M, N, K = shape
    sch = tvm.tir.Schedule(batch_matmul(Bt, M, N, K))
    cand = get_tensorize_candidates(sch, "C", AMX_U8S8_INTRIN)[0]
    assert cand.outer_iter_names == ("vb",)
    sch.tensorize(apply_candidate(sch, cand), AMX_U8S8_INTRIN)
    rng = np.random.default_rng(1)
    a, b = random_operand(rng, (Bt, M, K), "uint8"), random_operand(rng, (Bt, N, K), "int8")
    out = np.full((Bt, M, N), 7, np.int32)
    run_prim_func(sch.mod, a, b, out, externs=AMXModel().externs())
    np.testing.assert_array_equal(out, np.einsum("bik,bjk->bij", values(a), values(b)))


# -- the design space ----------------------------------------------------------------------------
@pytest.mark.parametrize("target", [SPR, AMX_MATTR])
def test_space_of_a_1024_cubed_int8_gemm_holds_amx_sketches(target):
    ctx, space, amx = amx_sketches(gemm(1024, 1024, 1024), target)
    assert amx and len(amx) < len(space), "AMX competes with the plain and VNNI sketches"
    assert {AMX_U8S8_INTRIN, "matmul_32x32x256_u8i8s32_amx", "matmul_32x32x1024_u8i8s32_amx",
            "matmul_16x16x1024_u8i8s32_amx"} <= amx_names(amx)
    if target == SPR:
        assert any("vnni" in str(s.trace) for s in space)
    for sketch in amx:  # one packing copy (of B; of A for the commuted s8 x u8 instruction), two with A packed
        packs = [r.block for r in _blocks(sketch)  # into tiles (_pa), unmarked: the function declares no weight,
                 if len(r.block.reads) == 1 and r.block.reads[0].buffer.name in ("A", "B")  # so they stay in the
                 and len(r.block.writes[0].buffer.shape) == 4]  # kernel
        assert len(packs) == (2 if "_amx_pa" in str(sketch.trace) else 1)
        assert all(LAYOUT_REWRITE_PREPROC not in p.annotations for p in packs)


def test_only_the_packing_of_a_declared_weight_is_marked_for_pre_packing():
    """With B layout-free (a weight), B's VNNI packing is marked for pre-packing; the commuted candidates'
    packing of A (an activation, packed on every call) is not, so the runner times it with the kernel."""
    _, _, amx = amx_sketches(gemm(256, 256, 256).with_attr("layout_free_buffers", [1]))
    marked = {"A": 0, "B": 0}
    for sketch in amx:
        for r in _blocks(sketch):
            block = r.block
            if len(block.reads) == 1 and block.reads[0].buffer.name in marked and \
                    len(block.writes[0].buffer.shape) == 4:
                marked[block.reads[0].buffer.name] += LAYOUT_REWRITE_PREPROC in block.annotations
    assert marked["B"] > 0 and marked["A"] == 0, marked


def _blocks(sch):
    from tensorize.ir.functor import post_order_visit
    from tensorize.ir.stmt import BlockRealize

    found = []
    post_order_visit(sch.mod["main"].body, lambda n: found.append(n) if isinstance(n, BlockRealize) else None)
    return found


@pytest.mark.parametrize("target", ["llvm -mcpu=cascadelake", "llvm -mcpu=haswell"])
def test_a_target_without_amx_gets_no_amx_sketch(target):
    _, space, amx = amx_sketches(gemm(256, 256, 256), target)
    assert space and not amx


def test_sampled_amx_candidate_compiles_to_tile_instructions_for_sapphire_rapids(tmp_path):
    ctx, _, amx = amx_sketches(gemm(1024, 1024, 1024), intrinsics=("matmul_32x32x256_u8i8s32_amx",))
    sch = sample_candidate(ctx, amx[0], default_postprocs(ctx), seed=1)
    lib = tvm.build(sch.mod, target=SPR)
    ir = lib.get_source("ll")
    for intrinsic in ("llvm.x86.tdpbusd", "llvm.x86.ldtilecfg", "llvm.x86.tileloadd64", "llvm.x86.tilestored64"):
        assert intrinsic in ir
    path = tmp_path / "amx.o"
    lib.save(str(path))
    obj = path.read_bytes()
    assert obj[:4] == b"\x7fELF"
    assert re.search(r"\btdpbusd\s+%tmm\d, %tmm\d, %tmm\d", lib.get_source("asm"))


# -- the cache-blocked AMX sketches ---------------------------------------------------------------
def test_each_amx_intrinsic_gives_the_three_cache_blocked_sketches_without_a_write_cache():
    _, _, amx = amx_sketches(gemm(256, 256, 512, "bfloat16", "bfloat16"))
    by_intrin: dict = {}
    for sketch in amx:
        text = str(sketch.trace)
        by_intrin.setdefault(re.search(r"matmul_\w+_amx(?:_pa)?\b", text)[0], []).append(
            re.search(r'"amx_(panel|a|b)"', text)[1])
        assert "cache_write" not in text  # the tile stores write C in place
    assert by_intrin and all(sorted(found) == sorted(SKETCHES) for found in by_intrin.values()), by_intrin
    assert {"matmul_32x32x256_bf16bf16f32_amx_pa", "matmul_32x32x1024_bf16bf16f32_amx"} <= set(by_intrin)


@pytest.mark.parametrize("sketch,expected", [("panel", "SSSR"), ("a", "SSRS"), ("b", "SSRSS")])
def test_amx_sketch_loop_orders(sketch, expected):
    """panel, row block, column block, K chunk ("panel"); K chunk outside the column blocks ("a"); region, panel,
    K chunk, column block, row block ("b": the row blocks innermost, reusing the column block's chunk of B)."""
    from search.schedule_rule.amx_blocking import amx_blocked_loops
    from search.schedule_rule.analysis import loop_kinds
    from tensorize.schedule import Schedule

    sch = Schedule(gemm(256, 256, 512, "bfloat16", "bfloat16"))
    block = sch.get_block("C")
    name = amx_matmul_intrin("bfloat16", "bfloat16", 2, 2, 4)
    inner = apply_candidate(sch, list(get_tensorize_candidates(sch, block, name))[0])
    loops = sch.get_loops(block)
    outer = loops[:[sch.get(lp).loop_var for lp in loops].index(sch.get(inner).loop_var)]
    order = amx_blocked_loops(sch, outer, loop_kinds(sch, block)[:len(outer)], sketch)
    kinds = dict(zip((id(sch.get(lp).loop_var) for lp in sch.get_loops(block)), loop_kinds(sch, block)))
    assert "".join(kinds[id(sch.get(lp).loop_var)] for lp in order) == expected
    assert [sch.get(lp).loop_var for lp in sch.get_loops(block)][:len(order)] == [sch.get(lp).loop_var for lp in order]
    before = sch.mod.script()
    assert amx_blocked_loops(sch, order[:2], ["S", "R"], sketch) is None and sch.mod.script() == before
    with pytest.raises(ValueError, match="unknown AMX sketch"):
        amx_blocked_loops(sch, order, list(expected), "c")


@pytest.mark.parametrize("intrin", ["matmul_32x32x256_u8i8s32_amx", "matmul_32x32x512_u8i8s32_amx_pa"])
def test_sampled_cache_blocked_sketches_are_exact_on_the_tile_model(intrin):
    amx = _check_sampled(gemm(100, 72, 600), ("uint8", "int8"), 600, intrinsics=(intrin,))
    assert len(amx) == len(SKETCHES)


def test_sampled_cache_blocked_sketches_of_a_batch_matmul_keep_the_batch_outside_and_are_exact():
    from tests.search.test_tensor_candidates import batch_matmul

    amx = _check_sampled(batch_matmul(2, 40, 48, 256), ("uint8", "int8"), 256,
                         intrinsics=("matmul_32x32x256_u8i8s32_amx",))
    assert sorted(re.search(r'"amx_(panel|a|b)"', str(s.trace))[1] for s in amx) == sorted(SKETCHES)


# -- numerics of sampled candidates, on the tile model -------------------------------------------
def _check_sampled(func, operand_dtypes, depth, n=None, intrinsics=None):
    ctx, _, amx = amx_sketches(func, intrinsics=intrinsics)
    assert amx
    params = [func.buffer_map[p] for p in func.params]
    rng = np.random.default_rng(5)
    ins = [random_operand(rng, [int(s) for s in buf.shape], dt) for buf, dt in zip(params[:2], operand_dtypes)]
    expected = _reference(ins)
    for i, sketch in enumerate(amx[:n]):
        sch = sample_candidate(ctx, sketch, default_postprocs(ctx), seed=i)
        lowered = tvm.lower(sch.mod)
        assert "llvm.x86.tilezero" in lowered.script(), "the init's zero fill and accumulator loads are fused"
        for program in (sch.mod, lowered):  # lowered: tiles configured once, init fused into tilezero
            out = np.full(expected.shape, 7, np.float32 if operand_dtypes[0] == "bfloat16" else np.int32)
            run_prim_func(program, *ins, out, externs=AMXModel().externs())
            check(out, expected, depth)
    return amx


def _reference(ins):
    a, b = (values(x) for x in ins)
    if a.ndim == 2:  # a GEMM with B stored (N, K)
        return a @ b.T
    if a.ndim == 3:  # a batch matmul, B stored (batch, N, K)
        return np.einsum("bik,bjk->bij", a, b)
    KH, KW = b.shape[:2]
    OH, OW = a.shape[1] - KH + 1, a.shape[2] - KW + 1
    return sum(np.einsum("nhwc,co->nhwo", a[:, r:r + OH, s:s + OW], b[r, s]) for r in range(KH) for s in range(KW))


def test_every_amx_sketch_of_an_odd_int8_gemm_is_exact():
    amx = _check_sampled(gemm(100, 72, 200), ("uint8", "int8"), 200)
    assert "matmul_16x16x64_i8u8s32_amx" in amx_names(amx), "the commuted s8 x u8 instruction plays too"


def test_sampled_int8_gemm_127_255_511_is_exact():
    _check_sampled(gemm(127, 255, 511), ("uint8", "int8"), 511, n=3)


def test_sampled_bf16_gemm_within_bf16_tolerance():
    _check_sampled(gemm(70, 48, 96, "bfloat16", "bfloat16"), ("bfloat16", "bfloat16"), 96, n=6)


@pytest.mark.parametrize("dtype,w_dtype", [("uint8", "int8"), ("bfloat16", "bfloat16")])
def test_sampled_conv2d_nhwc_is_exact(dtype, w_dtype):
    func = conv2d_nhwc(1, 8, 8, 32, 32, 3, 3, dtype, w_dtype)
    _check_sampled(func, (dtype, w_dtype), 9 * 32, n=4)


@pytest.mark.slow
def test_sampled_1024_cubed_int8_gemm_is_exact_on_the_tile_model():
    _check_sampled(int8_gemm(1024, 1024, 1024), ("uint8", "int8"), 1024, n=1,
                   intrinsics=("matmul_32x32x1024_u8i8s32_amx",))


# -- on an AMX CPU ---------------------------------------------------------------------------------
@needs_amx
@pytest.mark.parametrize("dtype,w_dtype", [("uint8", "int8"), ("bfloat16", "bfloat16")])
def test_sampled_candidates_run_exactly_on_amx(dtype, w_dtype):
    func = gemm(127, 255, 511, dtype, w_dtype)
    ctx, _, amx = amx_sketches(func, target="llvm -mcpu=native")
    assert amx
    rng = np.random.default_rng(3)
    a, b = random_operand(rng, (127, 511), dtype), random_operand(rng, (255, 511), w_dtype)
    expected = values(a) @ values(b).T
    for i, sketch in enumerate(amx[:4]):
        sch = sample_candidate(ctx, sketch, default_postprocs(ctx), seed=i)
        lib = tvm.build(sch.mod, target="llvm -mcpu=native")
        args = [tvm.nd.array(x, dtype="bfloat16") if x.dtype == np.uint16 else tvm.nd.array(x) for x in (a, b)]
        out = tvm.nd.array(np.zeros(expected.shape, np.float32 if dtype == "bfloat16" else np.int32))
        lib(*args, out)
        check(out.numpy(), expected, 511)


# -- direct convolutions on flat pixels ----------------------------------------------------------
@pytest.mark.parametrize("dtype,w_dtype,channels", [("uint8", "int8", 64), ("bfloat16", "bfloat16", 64)])
def test_direct_conv_on_flat_pixels_reads_the_input_in_place_and_is_exact(dtype, w_dtype, channels):
    """``intrinsics.x86_amx_conv.amx_conv2d_direct``: the AMX rule prefers the candidate that tensorizes one tap's
    pixels x channels (the input's rows read where they are, shifted by the tap) to the im2col one, the sketches
    put the taps next to K, and lowering keeps the accumulators in their tiles across them."""
    from intrinsics.x86_amx_conv import amx_conv2d_direct, direct_rows, flatten_input, output_pixels

    N, H, W, CI, CO, KH, KW = 1, 9, 10, channels, 32, 3, 3
    func = amx_conv2d_direct(N, H, W, CI, CO, KH, KW, dtype, w_dtype)
    ctx, _, amx = amx_sketches(func)
    direct = [s for s in amx if "data_reindex" not in s.mod.script()]
    blockings = {re.search(r'"(matmul_\w+_amx\w*)"', str(s.trace))[1] for s in direct}
    assert f"matmul_32x32x{channels}_{'u8i8s32' if dtype == 'uint8' else 'bf16bf16f32'}_amx" in blockings
    rng = np.random.default_rng(6)
    image = random_operand(rng, (N, H, W, CI), dtype)
    weight = random_operand(rng, (CO, KH, KW, CI), w_dtype)
    a, w = values(image), values(weight)
    OH, OW = H - KH + 1, W - KW + 1
    expected = sum(np.einsum("nhwc,oc->nhwo", a[:, r:r + OH, s:s + OW], w[:, r, s]) for r in range(KH)
                   for s in range(KW))
    flat = flatten_input(image, KH, KW)
    for i, sketch in enumerate(direct[:4]):
        sch = sample_candidate(ctx, sketch, default_postprocs(ctx), seed=i)
        lowered = tvm.lower(sch.mod)
        out = np.full((direct_rows(N, H, W, KH, KW)[1], CO), 7, np.float32 if dtype == "bfloat16" else np.int32)
        run_prim_func(lowered, flat, weight, out, externs=AMXModel().externs())
        check(out[output_pixels(N, H, W, KH, KW)], expected, KH * KW * CI)


def test_amx_sketches_put_a_convolutions_taps_next_to_k():
    """Loops ``taps..., i, j, k`` above the intrinsic: the taps stay outside ``k`` in every sketch's order."""
    from search.schedule_rule.amx_blocking import amx_blocked_loops
    from search.schedule_rule.analysis import loop_kinds
    from tensorize.schedule import Schedule

    from intrinsics.x86_amx_conv import amx_conv2d_direct

    sch = Schedule(amx_conv2d_direct(1, 12, 12, 64, 64, 3, 3))
    block = sch.get_block("C")
    name = amx_matmul_intrin("uint8", "int8", 2, 2, 1)
    cands = list(get_tensorize_candidates(sch, block, name))
    direct = next(c for c in cands if c.outer_iter_names == ("vr", "vs"))
    inner = apply_candidate(sch, direct)
    loops = sch.get_loops(block)
    outer = loops[:[sch.get(lp).loop_var for lp in loops].index(sch.get(inner).loop_var)]
    kinds = loop_kinds(sch, block)[:len(outer)]
    assert "".join(k for k in kinds if k != "U") == "RRSSR"
    order = amx_blocked_loops(sch, outer, kinds, "panel")
    names = [sch.get(lp).loop_var.name for lp in order]
    assert names[-3:-1] == [sch.get(outer[0]).loop_var.name, sch.get(outer[1]).loop_var.name]
