"""Weight layout rewrite: the packed-weight sketch of a fp32 GEMM, its split into a packing function and a
kernel, the runner packing once outside the timed kernel, and compile_tir's result with pre-packed weights."""
import numpy as np
import pytest

import search
import tensorize as tvm
from search.context import TuneContext
from search.measure import LocalBuilder, LocalRunner, MeasureCandidate
from search.postproc import RewriteLayout, default_postprocs, split_layout_rewrite
from tensorize.transform.split_layout_rewrite import packed_blocks
from search.schedule_rule import LAYOUT_REWRITE_PREPROC
from search.space_generator import PostOrderApply, replay_candidate
from tensorize.ir.function import IRModule
from tensorize.ir.stmt import ForKind
from tensorize.runtime import load_module
from tensorize.schedule import Schedule
from tensorize.script import from_source
from tensorize.target import host_cpu
from tests.search.space_workloads import gemm_f32

HOST = "llvm -mcpu=haswell"
pytestmark = pytest.mark.skipif("avx2" not in host_cpu()[1], reason="the measured code targets haswell (AVX2)")


def weight_gemm(M, N, K):
    """A GEMM whose B (parameter 1) is a weight: layout-free, as te marks ``layout_free_placeholders``."""
    return gemm_f32(M, N, K).with_attr("layout_free_buffers", [1])


def integer_inputs(M, N, K, seed=0):
    """Small integers as float32: every product and sum is exact, so any summation order gives numpy's result."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 5, (M, K)).astype("float32")
    b = rng.integers(-4, 5, (K, N)).astype("float32")
    return a, b


def packed_candidate(M=64, N=64, K=64, decisions=([2, 4, 1, 8], [2, 1, 2, 16], [16, 4], 2)):
    """The GEMM sketch with the write cache after the second spatial tile, sampled as ``decisions``, with
    the default postprocessors (rewrite_layout first)."""
    ctx = TuneContext.create(weight_gemm(M, N, K), HOST, intrinsics=(), seed=0, num_threads=2)
    sketch = PostOrderApply().generate_design_space(ctx)[2]
    it = iter(decisions)
    sch = replay_candidate(ctx, sketch.trace, default_postprocs(ctx), decision_provider=lambda inst, d: next(it))
    return ctx, sch


def test_the_gemm_space_holds_a_packed_weight_candidate():
    ctx, sch = packed_candidate()
    assert packed_blocks(sch.mod["main"]) == ["B_global"]
    copy = sch.get(sch.get_block("B_global"))
    assert copy.annotations[LAYOUT_REWRITE_PREPROC] == 1
    # B[k, j] with j = j0 j1 j2 j3 (2, 1, 2, 16) and k = k0 k1 (16, 4) read in nest order i0 j0 | i1 j1 | k0 |
    # i2 j2 | k1 | i3 j3: the packed layout is [j0, k0, j2, k1, j3], the vector tile j3 innermost
    packed = copy.writes[0].buffer
    assert [int(s) for s in packed.shape] == [2, 16, 2, 4, 16]
    update = sch.get(sch.get_block("C_update"))
    assert any(r.buffer is packed for r in update.reads)
    loops = [sch.get(lp) for lp in sch.get_loops(sch.get_block("C_update"))]
    assert loops[-1].kind == ForKind.VECTORIZED and int(loops[-1].extent) == 16
    # a finished candidate's full trace replays to the same program
    again = Schedule(ctx.mod)
    sch.trace.apply_to_schedule(again, remove_postproc=False)
    assert again.mod.script() == sch.mod.script()


def test_no_layout_free_attribute_no_rewrite():
    ctx = TuneContext.create(gemm_f32(64, 64, 64), HOST, intrinsics=(), seed=0, num_threads=2)
    sketch = PostOrderApply().generate_design_space(ctx)[2]
    it = iter(([2, 4, 1, 8], [2, 1, 2, 16], [16, 4], 2))
    sch = replay_candidate(ctx, sketch.trace, default_postprocs(ctx), decision_provider=lambda inst, d: next(it))
    assert packed_blocks(sch.mod["main"]) == []
    assert split_layout_rewrite(sch.mod)[1] == []


def test_split_kernel_with_prepacked_weight_is_exact():
    _ctx, sch = packed_candidate()
    mod, rewrites = split_layout_rewrite(sch.mod)
    assert [(r.param_index, r.function, r.shape) for r in rewrites] == [(1, "main__layout_rewrite_1",
                                                                        (2, 16, 2, 4, 16))]
    kernel = mod["main"]
    assert [int(s) for s in kernel.buffer_map[kernel.params[1]].shape] == [2, 16, 2, 4, 16]
    assert packed_blocks(kernel) == []  # the kernel does no packing
    lib = tvm.build(mod, target=HOST)
    a, b = integer_inputs(64, 64, 64)
    packed = np.empty(rewrites[0].shape, rewrites[0].dtype)
    lib[rewrites[0].function](b, packed)
    np.testing.assert_array_equal(packed.transpose(0, 2, 4, 1, 3).reshape(2, 2, 16, 64)[0, 0, :, 0], b[0, :16])
    c = np.zeros((64, 64), "float32")
    lib["main"](a, packed, c)
    np.testing.assert_array_equal(c, a @ b)


def _wrong_packing(mod: IRModule) -> IRModule:
    """The split module with a packing function that writes twice the weight."""
    text = mod.script()
    marker = "B_global[v1 // 32, v0 // 4, v1 // 16 % 2, v0 % 4, v1 % 16] = B[v0, v1]"
    assert marker in text
    return from_source(text.replace(marker, marker.replace("= B[v0, v1]", "= B[v0, v1] * T.float32(2.0)")))


def test_runner_packs_once_outside_the_timed_kernel_and_checks_the_output(tmp_path):
    ctx, sch = packed_candidate()
    wrong = _wrong_packing(split_layout_rewrite(sch.mod)[0])
    with LocalBuilder(str(tmp_path / "build"), max_workers=1) as builder, \
            LocalRunner(str(tmp_path / "run"), timeout_s=30, number=2, repeat=2, min_repeat_ms=1) as runner:
        builds = builder.build([MeasureCandidate(sch.mod), MeasureCandidate(wrong)], HOST)
        assert all(b.error is None for b in builds), builds
        # the timed entry function takes the packed weight: the packing is not in it
        lib = load_module(builds[0].artifact)
        assert "main__layout_rewrite_1" in lib.function_names
        assert tuple(lib["main"].signature.params[1].shape) == (2, 16, 2, 4, 16)
        good, bad = runner.run(ctx, builds)
    assert good.error is None and len(good.run_secs) == 2 and all(s > 0 for s in good.run_secs)
    assert bad.error_kind == "wrong_output" and "output 2 differs" in bad.error


def test_compile_tir_result_with_prepacked_weights_is_exact(tmp_path):
    func = weight_gemm(64, 64, 64)
    db = search.tune_tir(func, HOST, str(tmp_path), max_trials_global=4, num_trials_per_iter=4, seed=0,
                         strategy_config={"population_size": 8, "init_min_unmeasured": 4, "genetic_num_iters": 1},
                         progress=False)
    sch = search.compile_tir(db, func, HOST)
    assert sch is not None
    mod, rewrites = search.split_layout_rewrite(sch.mod)
    lib = tvm.build(mod, target=HOST)
    a, b = integer_inputs(64, 64, 64, seed=1)
    args = [a, b, np.zeros((64, 64), "float32")]
    for rw in rewrites:
        packed = np.empty(rw.shape, rw.dtype)
        lib[rw.function](args[rw.param_index], packed)
        args[rw.param_index] = packed
    lib["main"](*args)
    np.testing.assert_array_equal(args[2], a @ b)
    # the unsplit program (packing inside) gives the same result from the original weight
    c = np.zeros((64, 64), "float32")
    tvm.build(sch.mod, target=HOST)(a, b, c)
    np.testing.assert_array_equal(c, a @ b)


def test_rewrite_layout_skips_weights_read_by_several_blocks():
    sch = Schedule(weight_gemm(16, 16, 16))
    sch.cache_read(sch.get_block("C"), 1, "global")  # now the copy reads B, the GEMM reads the copy
    sch.enter_postproc()
    RewriteLayout().apply(sch, None)
    assert packed_blocks(sch.mod["main"]) == []


def test_features_describe_the_kernel_without_its_packing():
    from search.feature import FEATURES

    _ctx, sch = packed_candidate()
    extractor = FEATURES.create("per_store")
    kernel_mod = split_layout_rewrite(sch.mod)[0]
    kernel_only = IRModule({"main": kernel_mod["main"]})
    np.testing.assert_array_equal(extractor.extract(None, [sch])[0], extractor.extract(None, [kernel_only])[0])


def _innermost_loops(asm: str):
    """(body lines) of each loop in ``asm`` whose back edge jumps to a label (x86 AT&T syntax)."""
    import re

    lines = asm.splitlines()
    labels = {line.rstrip(":"): i for i, line in enumerate(lines) if re.match(r"^\.LBB\d+_\d+:", line)}
    for i, line in enumerate(lines):
        m = re.match(r"\s+j\w+\s+(\.LBB\d+_\d+)", line)
        if m and labels.get(m.group(1), i) < i:
            yield lines[labels[m.group(1)]:i]


def test_packed_4x16_register_tile_keeps_its_accumulators_in_registers():
    # 256^3 GEMM, i: 4 x 4 x 4 x 4, j: 2 x 4 x 2 x 16, k: 4 x 64: the micro-kernel is a 4 x 16 tile (8 ymm
    # accumulators) over k1 = 64 steps reading the packed B with unit stride
    ctx = TuneContext.create(weight_gemm(256, 256, 256), HOST, intrinsics=(), seed=0, num_threads=1)
    sketch = PostOrderApply().generate_design_space(ctx)[2]
    it = iter(([4, 4, 4, 4], [2, 4, 2, 16], [4, 64], 1))
    sch = replay_candidate(ctx, sketch.trace, default_postprocs(ctx), decision_provider=lambda inst, d: next(it))
    mod, rewrites = split_layout_rewrite(sch.mod)
    assert rewrites[0].shape == (2, 4, 4, 2, 64, 16)  # j0 j1 k0 j2 k1 j3
    lib = tvm.build(mod, target=HOST)
    kernels = [body for body in _innermost_loops(lib.get_source("asm"))
               if sum("vfmadd" in line for line in body) >= 8]
    assert kernels, "no loop with the tile's 8 FMAs"
    tight = min(kernels, key=len)
    assert sum("vfmadd" in line for line in tight) == 8
    assert not any("rsp" in line for line in tight), "accumulators spilled to the stack:\n" + "\n".join(tight)
    a, b = integer_inputs(256, 256, 256)
    packed = np.empty(rewrites[0].shape, "float32")
    lib[rewrites[0].function](b, packed)
    c = np.zeros((256, 256), "float32")
    lib["main"](a, packed, c)
    np.testing.assert_array_equal(c, a @ b)
