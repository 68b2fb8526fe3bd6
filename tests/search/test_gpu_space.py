"""The search's CUDA space: GPU rules and postprocs picked by target kind, every sampled candidate valid,
its CUDA compiling with nvcc, and its numerics (the intrinsics' descriptions, thread loops serial)
matching numpy on the CPU."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import intrinsics.cuda  # noqa: F401  (registers the WMMA / mma intrinsics)
import tensorize as tvm
from search.context import TuneContext
from search.postproc import default_postprocs
from search.postproc.gpu_verify import VerifyGPUCode
from search.postproc.rewrite_tensorize import RewriteTensorize
from search.schedule_rule import default_rules
from search.schedule_rule.analysis import AUTO_TENSORIZE
from search.space_generator import PostOrderApply, replay_candidate
from tensorize import te
from tensorize.schedule import Schedule, ScheduleError
from tensorize.schedule.trace import RESAMPLE
from tensorize.transform.gpu_emulation import emulate_gpu

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")


def gemm(M, N, K, in_dtype="float16", out_dtype="float32"):
    A = te.placeholder((M, K), in_dtype, name="A")
    B = te.placeholder((K, N), in_dtype, name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k].astype(out_dtype) * B[k, j].astype(out_dtype), axis=k),
                   name="C")
    return te.create_prim_func([A, B, C])


def candidates(ctx, per_sketch=2, postprocs=None, tries=24):
    """``per_sketch`` valid samples of each sketch, drawn as the search draws them (GPU tilings jointly);
    the postprocessors reject the rest (e.g. a block over the register file)."""
    from search.space_generator import sample_candidate

    space = PostOrderApply().generate_design_space(ctx)
    posts = postprocs if postprocs is not None else default_postprocs(ctx)
    out = []
    for i, sketch in enumerate(space):
        found = 0
        for seed in range(tries):
            try:
                out.append((i, sample_candidate(ctx, sketch, posts, seed=seed)))
            except Exception:  # noqa: BLE001 - a sample a postprocessor rejects
                continue
            found += 1
            if found == per_sketch:
                break
        assert found == per_sketch, f"sketch {i}: {found} valid samples of {tries}"
    return space, out


def nvcc_ok(source, arch, tmp_path, name):
    cu = tmp_path / f"{name}.cu"
    cu.write_text(source)
    done = subprocess.run(["nvcc", f"-arch={arch}", "--ptx", "-o", str(tmp_path / f"{name}.ptx"), str(cu)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[:3000]
    return (tmp_path / f"{name}.ptx").read_text()


def test_rules_and_postprocs_follow_the_target_kind():
    cuda = TuneContext.create(gemm(32, 32, 32), "cuda -arch=sm_90", seed=0)
    cpu = TuneContext.create(gemm(32, 32, 32, "float32", "float32"), "llvm -mcpu=haswell", seed=0)
    assert [type(r).__name__ for r in default_rules(cuda)] == [
        "AutoInline", "MultiLevelTilingTensorCore", "MultiLevelTilingGPU", "AutoBind"]
    assert [type(p).__name__ for p in default_postprocs(cuda)] == [
        "RewriteCooperativeFetch", "RewriteUnboundBlock", "RewriteReductionBlock", "RewriteTensorize", "VerifyGPUCode"]
    assert "MultiLevelTilingGPU" not in [type(r).__name__ for r in default_rules(cpu)]
    old = TuneContext.create(gemm(32, 32, 32), "cuda -arch=sm_61", seed=0)  # Pascal: no Tensor Cores
    assert "MultiLevelTilingTensorCore" not in [type(r).__name__ for r in default_rules(old)]


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("case", [(128, 128, 64, "float16", "float32"), (48, 40, 72, "int8", "int32")])
def test_every_sampled_cuda_candidate_compiles(arch, case, tmp_path):
    ctx = TuneContext.create(gemm(*case), f"cuda -arch={arch}", seed=0)
    space, cands = candidates(ctx)
    assert len(space) == 2  # Tensor Core (WMMA) and CUDA-core tilings
    tensorized = 0
    for n, (i, sch) in enumerate(cands):
        source = tvm.build(sch.mod, target=f"cuda -arch={arch}").imported_modules[0].get_source()
        ptx = nvcc_ok(source, arch, tmp_path, f"c{n}")
        if "wmma.mma.sync" in ptx:
            tensorized += 1
            assert "__shared__" in source and "threadIdx.y" in source
    assert tensorized == 2


def _emulated(sch, arrays):
    rt = tvm.build(emulate_gpu(sch.mod), target="llvm")
    nd = [tvm.nd.array(a) for a in arrays]
    rt["main"](*nd)
    return nd[-1].numpy()


@pytest.mark.parametrize("case", [(64, 64, 32, "float16", "float32"), (40, 24, 40, "float16", "float32"),
                                  (32, 48, 40, "int8", "int32")])
def test_sampled_candidates_compute_the_gemm(case):
    M, N, K, dt, ot = case
    ctx = TuneContext.create(gemm(*case), "cuda -arch=sm_80", seed=1)
    # the CPU runs the intrinsics' descriptions: every postproc but rewrite_tensorize
    posts = [p for p in default_postprocs(ctx) if not isinstance(p, (RewriteTensorize, VerifyGPUCode))]
    _, cands = candidates(ctx, per_sketch=1, postprocs=posts)
    rng = np.random.default_rng(0)
    if dt == "int8":
        a, b = rng.integers(-128, 128, (M, K)).astype(dt), rng.integers(-128, 128, (K, N)).astype(dt)
    else:
        a, b = rng.uniform(-1, 1, (M, K)).astype(dt), rng.uniform(-1, 1, (K, N)).astype(dt)
    marked = 0
    for _, sch in cands:
        marked += AUTO_TENSORIZE in sch.mod.script()
        c = _emulated(sch, [a, b, np.zeros((M, N), ot)])
        np.testing.assert_allclose(c, a.astype(ot) @ b.astype(ot), rtol=1e-3, atol=1e-3)
    assert marked == 1


def test_elementwise_blocks_are_bound():
    A = te.placeholder((1000,), name="A")
    B = te.compute((1000,), lambda i: A[i] * 2.0, name="B")
    ctx = TuneContext.create(te.create_prim_func([A, B]), "cuda -arch=sm_80", seed=0)
    space, cands = candidates(ctx, per_sketch=3)
    assert len(space) == 1
    for _, sch in cands:
        rt = tvm.build(sch.mod, target="cuda -arch=sm_80")
        (launch,) = rt.launches("main")
        assert launch.block[0] in (32, 64, 128, 256, 512, 1024)
        x = np.random.default_rng(0).uniform(size=1000).astype("float32")
        np.testing.assert_allclose(_emulated(sch, [x, np.zeros(1000, "float32")]), x * 2)


def _bound(threads):
    A = te.placeholder((4096,), name="A")
    B = te.compute((4096,), lambda i: A[i] + 1.0, name="B")
    sch = Schedule(te.create_prim_func([A, B]))
    bx, tx = sch.split(sch.get_loops(sch.get_block("B"))[0], [None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return sch


def test_verify_gpu_code_checks_the_targets_limits():
    ctx = TuneContext.create(_bound(64).mod, "cuda -arch=sm_80", seed=0)
    VerifyGPUCode().apply(_bound(64), ctx)
    with pytest.raises(ScheduleError, match="2048 threads per block"):
        VerifyGPUCode().apply(_bound(2048), ctx)
    small = TuneContext.create(gemm(64, 64, 64), "cuda -arch=sm_80 -max_shared_memory_per_block=1024", seed=0)
    _, cands = candidates(small, per_sketch=1, postprocs=[p for p in default_postprocs(small)
                                                          if not isinstance(p, VerifyGPUCode)])
    rejected = 0
    for _, sch in cands:
        try:
            VerifyGPUCode().apply(sch, small)
        except ScheduleError as err:
            assert "shared memory" in str(err)
            rejected += 1
    assert rejected >= 1


@needs_nvcc
@pytest.mark.parametrize("name", ["GMM", "C2D", "T2D"])
def test_operator_suite_gets_tensor_core_candidates(name, tmp_path):
    from experiments.workloads import get_workload

    w = get_workload(name, "small", dtype="float16")
    ctx = TuneContext.create(te.create_prim_func(w.args), "cuda -arch=sm_80", seed=0)
    space = PostOrderApply().generate_design_space(ctx)
    # (T2D is computed by phases: a contraction batched over the two phase iterators)
    assert sum(AUTO_TENSORIZE in s.mod.script() for s in space) == 1
    posts = default_postprocs(ctx)
    emulate_posts = [p for p in posts if not isinstance(p, (RewriteTensorize, VerifyGPUCode))]
    inputs = w.random_inputs(np.random.default_rng(0))
    expect = w.reference(*[x.astype("float32") for x in inputs])
    for i, sketch in enumerate(space):
        sch = replay_candidate(ctx, sketch.trace, posts, decision_provider=lambda inst, d: RESAMPLE, seed=0)
        nvcc_ok(tvm.build(sch.mod, target="cuda -arch=sm_80").imported_modules[0].get_source(), "sm_80", tmp_path,
                f"s{i}")
        cpu = replay_candidate(ctx, sketch.trace, emulate_posts, decision_provider=lambda inst, d: RESAMPLE, seed=0)
        got = _emulated(cpu, inputs + [np.zeros(w.output_shape(), "float16")])
        np.testing.assert_allclose(got.astype("float32"), expect, rtol=2e-2, atol=2e-2 * float(np.abs(expect).max()))


def _cuda_core_sketch(ctx):
    return next(s for s in PostOrderApply().generate_design_space(ctx)
                if not any(AUTO_TENSORIZE in r[0].block.annotations for r in s._index("main").blocks.values()))


def test_gpu_tilings_are_drawn_together_within_the_block_limits():
    """Fresh CUDA candidates draw their spatial tilings jointly (threads per block <= 1024, a thread's tile
    <= 256 elements): most samples of a 1024^3 GEMM pass verify_gpu_code (drawn one split at a time, half
    did), and a mutated trace over the limits is recognised without replaying it."""
    from search.space_generator import sample_candidate
    from search.space_generator.gpu_tiles import tilings_fit

    ctx = TuneContext.create(gemm(1024, 1024, 1024, "float32", "float32"), "cuda -arch=sm_90", seed=0)
    sketch = _cuda_core_sketch(ctx)
    valid = []
    for seed in range(12):
        try:
            valid.append(sample_candidate(ctx, sketch, default_postprocs(ctx), seed=seed))
        except Exception:  # noqa: BLE001 - a sample a postprocessor rejects
            pass
    assert len(valid) >= 8, f"only {len(valid)} of 12 samples are valid"
    assert all(tilings_fit(sch.trace) for sch in valid)
    tiles = [inst for inst in sketch.trace.insts if inst.kind == "sample_perfect_tile" and len(inst.decision) == 5]
    wide = sketch.trace.with_decision(tiles[0], [1, 1, 1024, 1, 1])
    wide = wide.with_decision(next(i for i in wide.insts if i.kind == "sample_perfect_tile"
                                   and len(i.decision) == 5 and i is not wide.insts[sketch.trace.insts.index(tiles[0])]),
                              [1, 1, 2, 512, 1])
    assert not tilings_fit(wide)
