"""InjectSoftwarePipeline: a Tensor Core GEMM whose shared fetches are pipelined computes the same numbers
(emulated on the CPU), its shared tiles get one version per stage in flight, and its CUDA uses cp.async."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import intrinsics.cuda  # noqa: F401  (registers the WMMA intrinsics)
import tensorize as tvm
from search.context import TuneContext
from search.postproc import default_postprocs
from search.postproc.gpu_verify import VerifyGPUCode
from search.postproc.rewrite_tensorize import RewriteTensorize
from search.space_generator import PostOrderApply, sample_candidate
from tensorize.ir import stmt as S
from tensorize.ir.functor import post_order_visit
from tensorize.transform.gpu_emulation import emulate_gpu
from tests.codegen.gpu_schedules import gemm

M, N, K = 64, 48, 256


def wmma_candidate(tensorize: bool, seed: int = 3, shape=(M, N, K)):
    """A sampled Tensor Core candidate of the search, its pipeline annotations removed (the tests set them)."""
    ctx = TuneContext.create(gemm(*shape), "cuda -arch=sm_80", seed=1)
    sketch = PostOrderApply().generate_design_space(ctx)[0]
    posts = default_postprocs(ctx) if tensorize else [
        p for p in default_postprocs(ctx) if not isinstance(p, (RewriteTensorize, VerifyGPUCode))]
    for s in range(seed, seed + 20):
        try:
            sch = sample_candidate(ctx, sketch, posts, seed=s)
        except Exception:  # noqa: BLE001 - a sample a postprocessor rejects
            continue
        loop = fetch_loop(sch)
        if int(sch.get(loop).extent.value) >= 3:
            for key in ("software_pipeline_stage", "software_pipeline_async_stages"):
                if key in sch.get(loop).annotations:
                    sch.unannotate(loop, key)
            return sch
    raise AssertionError("no sample with a reduction loop of 3+ iterations around the fetches")


def fetch_loop(sch):
    return sch.get_loops(sch.get_block("A_reindex_shared"))[4]


def pipelined(sch, stages, async_stages=(0,)):
    sch = sch.copy()
    loop = fetch_loop(sch)
    sch.annotate(loop, "software_pipeline_stage", list(stages))
    sch.annotate(loop, "software_pipeline_async_stages", list(async_stages))
    return sch


def run_emulated(sch, a, b):
    rt = tvm.build(emulate_gpu(sch.mod), target="llvm")
    nd = [tvm.nd.array(a), tvm.nd.array(b), tvm.nd.array(np.zeros((M, N), "float32"))]
    rt["main"](*nd)
    return nd[-1].numpy()


def calls(stmt, name):
    found = []
    post_order_visit(stmt, lambda n: found.append(n) if getattr(getattr(n, "op", None), "name", None) == name else None)
    return found


def shared_sizes(func):
    sizes = {}

    def visit(n):
        if isinstance(n, S.Allocate) and n.buffer_var.type_annotation.storage_scope.startswith("shared"):
            sizes[n.buffer_var.name] = int(n.extents[0].value)

    post_order_visit(func.body, visit)
    return sizes


@pytest.mark.parametrize("depth", [1, 2])
def test_pipelined_gemm_computes_the_same(depth):
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (M, K)).astype("float16"), rng.uniform(-1, 1, (K, N)).astype("float16")
    ref = a.astype("float32") @ b.astype("float32")
    sch = wmma_candidate(tensorize=False)
    np.testing.assert_allclose(run_emulated(pipelined(sch, [0, 0, depth]), a, b), ref, rtol=1e-4, atol=1e-4)


def test_versions_prologue_and_cp_async_bookkeeping():
    sch = wmma_candidate(tensorize=False)
    plain = tvm.lower(sch.mod)["main"]
    piped = tvm.lower(pipelined(sch, [0, 0, 2]).mod)["main"]
    before, after = shared_sizes(plain), shared_sizes(piped)
    assert after == {name: 3 * size for name, size in before.items()}  # depth 2: three tiles in flight
    extent = int(sch.get(fetch_loop(sch)).extent.value)
    assert len(calls(piped.body, "tir.ptx_commit_group")) == 3  # two prologue fetches, one per steady iteration
    waits = [int(c.args[0].value) for c in calls(piped.body, "tir.ptx_wait_group")]
    assert waits == [1, 1, 0]  # steady: one group may stay in flight; the epilogue drains them
    steady = []
    post_order_visit(piped.body, lambda n: steady.append(n) if isinstance(n, S.For)
                     and n.loop_var.name == "k_0_0" and int(n.min.value) == 2 else None)
    assert [int(loop.extent.value) for loop in steady] == [extent - 2]


def test_a_stage_list_that_does_not_match_the_body_leaves_the_loop():
    sch = wmma_candidate(tensorize=False)
    piped = tvm.lower(pipelined(sch, [0, 1]).mod)["main"]  # two stages for three statements
    assert not calls(piped.body, "tir.ptx_commit_group")
    assert shared_sizes(piped) == shared_sizes(tvm.lower(sch.mod)["main"])


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")
def test_pipelined_cuda_issues_cp_async(tmp_path):
    sch = pipelined(wmma_candidate(tensorize=True, shape=(128, 128, 256)), [0, 0, 1])
    source = tvm.build(sch.mod, target="cuda -arch=sm_80").imported_modules[0].get_source()
    assert "tz_cp_async" in source and "tz_cp_async_wait<0>()" in source
    cu = tmp_path / "k.cu"
    cu.write_text(source)
    done = subprocess.run(["nvcc", "-arch=sm_80", "--ptx", "-o", str(tmp_path / "k.ptx"), str(cu)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr[:2000]
    ptx = (tmp_path / "k.ptx").read_text()
    assert "cp.async" in ptx and "cp.async.wait_group" in ptx and "wmma.mma.sync" in ptx
