"""The CUDA builder and runner: artifacts compiled by nvcc and loaded back; without a GPU the runner says so."""
from __future__ import annotations

import math
import shutil

import numpy as np
import pytest

import tensorize as tvm
from search.context import TuneContext
from search.measure import BUILDERS, RUNNERS, MeasureCandidate
from search.measure.gpu import load_artifact
from tensorize import te, tir
from tensorize.runtime.cuda_module import gpu_available

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")


def _add(n=1000, threads=128):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    func = te.create_prim_func([A, B])
    sch = tir.Schedule(func)
    bx, tx = sch.split(sch.get_loops(sch.get_block("B"))[0], [None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return func, sch


@needs_nvcc
def test_builder_compiles_with_nvcc_and_the_artifact_loads(tmp_path):
    func, sch = _add()
    builder = BUILDERS.create("cuda", work_dir=str(tmp_path))
    ok, bad = builder.build([MeasureCandidate(sch.mod), MeasureCandidate(func)], "cuda -arch=sm_90")
    assert ok.error is None and ok.artifact.endswith(".json")
    assert bad.artifact is None and "blockIdx" in bad.error  # an unbound program does not build
    mod = load_artifact(ok.artifact)
    assert [(k.grid, k.block) for k in mod.launches("main")] == [((8, 1, 1), (128, 1, 1))]
    assert "main_kernel" in mod.imported_modules[0].get_source()


@pytest.mark.skipif(gpu_available(), reason="checks the message given without a GPU")
def test_runner_without_gpu_says_so(tmp_path):
    func, sch = _add()
    ctx = TuneContext.create(func, "cuda -arch=sm_80", seed=0)
    builds = BUILDERS.create("cuda", work_dir=str(tmp_path), use_nvcc=False).build([MeasureCandidate(sch.mod)],
                                                                                   ctx.target)
    (result,) = RUNNERS.create("cuda", work_dir=str(tmp_path)).run(ctx, builds)
    assert result.run_secs is None and result.error_kind == "run" and "no CUDA GPU" in result.error


@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to cupy")
def test_runner_times_a_kernel_on_the_gpu(tmp_path):
    func, sch = _add()
    ctx = TuneContext.create(func, "cuda -arch=sm_80", seed=0)
    builds = BUILDERS.create("cuda", work_dir=str(tmp_path)).build([MeasureCandidate(sch.mod)], ctx.target)
    (result,) = RUNNERS.create("cuda", work_dir=str(tmp_path)).run(ctx, builds)
    assert result.error is None and len(result.run_secs) == 3 and all(0 < s < 1 for s in result.run_secs)


@needs_nvcc
def test_tune_tir_on_a_cuda_target(tmp_path):
    import intrinsics.cuda  # noqa: F401
    from search.tune import tune_tir

    A = te.placeholder((32, 32), "float16", name="A")
    B = te.placeholder((32, 32), "float16", name="B")
    k = te.reduce_axis((0, 32), name="k")
    C = te.compute((32, 32), lambda i, j: te.sum(A[i, k].astype("float32") * B[k, j].astype("float32"), axis=k),
                   name="C")
    db = tune_tir(te.create_prim_func([A, B, C]), "cuda -arch=sm_90", str(tmp_path), max_trials_global=2,
                  num_trials_per_iter=2, strategy="random", cost_model=None, progress=False)
    records = db.get_all_tuning_records()
    report = db.tuning_report
    # the two trials, plus the re-measurement of the valid ones (only where a GPU ran them)
    assert len(records) == 2 + len(report.remeasured)
    if gpu_available():
        assert report.valid >= 1 and report.remeasured and math.isfinite(report.best_secs)
    else:  # built by the cuda builder (nvcc), refused by the runner with the reason
        assert db.tuning_report.failed == {"run": 2}


def test_reference_program_binds_every_block_and_computes_the_same():
    """The runner's GPU reference is the untransformed program with its spatial loops bound to threads;
    emulated on the CPU it gives numpy's result (a reduction, a non-dividing extent, two blocks)."""
    from search.measure.gpu import thread_bound_program
    from tensorize.transform.gpu_emulation import emulate_gpu

    A = te.placeholder((50, 30), "float16", name="A")
    B = te.placeholder((30, 30), "float16", name="B")
    k = te.reduce_axis((0, 30), name="k")
    C = te.compute((50, 30), lambda i, j: te.sum(A[i, k].astype("float32") * B[k, j].astype("float32"), axis=k),
                   name="C")
    D = te.compute((50, 30), lambda i, j: C[i, j] * 2.0, name="D")
    bound = thread_bound_program(te.create_prim_func([A, B, D]), threads=128)
    text = bound.script()
    assert text.count('T.thread_binding(128, thread="threadIdx.x")') == 2
    assert 'T.thread_binding(12, thread="blockIdx.x")' in text  # 1500 iterations over 128 threads
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (50, 30)).astype("float16"), rng.uniform(-1, 1, (50, 30)).astype("float16")
    d = tvm.nd.array(np.zeros((50, 30), "float32"))
    tvm.build(emulate_gpu(bound), target="llvm")(tvm.nd.array(a), tvm.nd.array(b[:30]), d)
    np.testing.assert_allclose(d.numpy(), 2 * a.astype("float32") @ b[:30].astype("float32"), rtol=1e-5, atol=1e-5)


def test_reference_program_rejects_a_block_without_spatial_loops():
    from search.measure.gpu import thread_bound_program

    A = te.placeholder((64,), name="A")
    k = te.reduce_axis((0, 64), name="k")
    S = te.compute((1,), lambda _: te.sum(A[k], axis=k), name="S")
    func = te.create_prim_func([A, S])
    sch = tir.Schedule(func)
    sch.reorder(*reversed(sch.get_loops(sch.get_block("S"))))  # the reduction loop leads
    with pytest.raises(tvm.TVMError, match="no spatial loop to bind"):
        thread_bound_program(sch.mod)
