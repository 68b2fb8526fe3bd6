"""Isolated build and measurement: real builds in worker processes, real runs in a child process."""
import math
import os

import numpy as np
import pytest

from search.context import TuneContext
from search.measure import (BUILDERS, RUNNERS, BuildResult, LocalBuilder, LocalRunner, MeasureCandidate, RunResult)
from search.measure.inputs import load_arrays, random_arguments, tolerances, written_params
from tensorize.ir.function import IRModule
from tensorize.schedule import Schedule
from tensorize.script import from_source
from tensorize.script import tir as T
from tensorize.target import host_cpu
from tests.workloads import int8_gemm

# An explicit CPU, so the AVX-512 candidate below aborts LLVM on every machine; the code runs where AVX2 does.
TARGET = "llvm -mcpu=haswell"
pytestmark = pytest.mark.skipif("avx2" not in host_cpu()[1], reason="the measured code targets haswell (AVX2)")


@T.prim_func
def gemm(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    T.func_attr({"tir.noalias": True})
    for i, j, k in T.grid(64, 64, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def llvm_abort(A: T.Buffer((64,), "int8"), B: T.Buffer((64,), "int8"), C: T.Buffer((16,), "int32")):
    # AMD's SSE4A on an Intel target (haswell): the feature check before LLVM has no entry for SSE4A, so LLVM
    # itself meets it and aborts the process ("Cannot select: X86ISD::EXTRQI"), the kind of abort the
    # builder must survive.
    with T.block("root"):
        C[T.ramp(0, 1, 4)] = T.reinterpret(T.call_llvm_pure_intrin(
            "int64x2", "llvm.x86.sse4a.extrqi", T.reinterpret(C.vload([0], "int32x4"), dtype="int64x2"),
            T.uint8(4), T.uint8(2)), dtype="int32x4")


@T.prim_func
def endless(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    # Same signature as gemm; 2^60 float additions never finish.
    for i, j in T.grid(1 << 30, 1 << 30):
        with T.block("C"):
            vi, vj = T.axis.remap("RR", [i, j])
            C[0, 0] = C[0, 0] + A[0, 0]


@T.prim_func
def segfault(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    # Writes far outside C: the process dies with SIGSEGV.
    C_far = T.decl_buffer((1 << 40,), "float32", data=C.data)
    for i in range(64):
        with T.block("C"):
            vi = T.axis.spatial(64, i)
            C_far[T.int64(1 << 38) * T.Cast("int64", vi + 1)] = T.float32(1)


def tiled(tile_i: int, tile_j: int, parallel: bool) -> IRModule:
    sch = Schedule(gemm)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, tile_i])
    j0, j1 = sch.split(j, [None, tile_j])
    sch.reorder(i0, j0, k, i1, j1)
    if parallel:
        sch.parallel(i0)
    sch.vectorize(j1)
    return sch.mod


def wrong() -> IRModule:
    """A scheduled GEMM whose initial value was altered (0 -> 0.5): every output is off by 0.5."""
    text = tiled(8, 8, False).script()
    assert "T.float32(0.0)" in text
    return from_source(text.replace("T.float32(0.0)", "T.float32(0.5)"))


@pytest.fixture(scope="module")
def builder(tmp_path_factory):
    with LocalBuilder(str(tmp_path_factory.mktemp("build")), max_workers=2) as b:
        yield b


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    with LocalRunner(str(tmp_path_factory.mktemp("run")), timeout_s=5, number=2, repeat=3, min_repeat_ms=5) as r:
        yield r


@pytest.fixture(scope="module")
def ctx():
    return TuneContext.create(gemm, TARGET)


def test_correct_candidates_pass_and_a_wrong_one_is_caught(builder, runner, ctx):
    mods = [tiled(8, 8, False), tiled(16, 32, True), wrong()]
    builds = builder.build([MeasureCandidate(m) for m in mods], ctx.target)
    assert all(b.ok and os.path.exists(b.artifact) and b.build_secs > 0 for b in builds), builds
    results = runner.run(ctx, builds)
    for result in results[:2]:
        assert result.ok and result.error_kind is None and len(result.run_secs) == 3
        assert all(0 < s < 0.5 for s in result.run_secs) and math.isfinite(result.mean_secs)
    bad = results[2]
    assert bad.run_secs is None and bad.error_kind == "wrong_output" and bad.mean_secs == math.inf
    assert "differs from the reference" in bad.error and "4096 of 4096 values differ" in bad.error


def test_an_llvm_abort_fails_only_its_candidate(builder, runner, ctx):
    candidates = [MeasureCandidate(tiled(8, 8, False)), MeasureCandidate(IRModule({"main": llvm_abort})),
                  MeasureCandidate(tiled(4, 16, False)), MeasureCandidate(tiled(16, 8, True))]
    builds = builder.build(candidates, ctx.target)
    assert [b.ok for b in builds] == [True, False, True, True]
    assert builds[1].artifact is None
    assert "crashed" in builds[1].error and "SIGABRT" in builds[1].error and "LLVM ERROR" in builds[1].error
    results = runner.run(ctx, builds)
    assert [r.ok for r in results] == [True, False, True, True]
    assert results[1].error_kind == "build" and "LLVM ERROR" in results[1].error


def test_a_compile_error_is_reported(builder, ctx):
    @T.prim_func
    def clashing_calls(A: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("A"):
                vi = T.axis.spatial(4, i)
                A[vi] = T.call_extern("float32", "helper", A[vi]) + T.Cast(
                    "float32", T.call_extern("int32", "helper", A[vi]))

    (result,) = builder.build([MeasureCandidate(IRModule({"main": clashing_calls}))], ctx.target)
    assert not result.ok and result.artifact is None
    assert result.error.startswith("build failed:") and "used with two different types" in result.error


def test_an_endless_candidate_times_out_and_the_runner_goes_on(builder, runner, ctx):
    builds = builder.build([MeasureCandidate(IRModule({"main": endless})), MeasureCandidate(tiled(8, 8, False))],
                           ctx.target)
    assert all(b.ok for b in builds)
    restarts = runner.restarts
    results = runner.run(ctx, builds)
    assert results[0].error_kind == "timeout" and results[0].run_secs is None and "5 s" in results[0].error
    assert results[1].ok
    assert runner.restarts == restarts + 1


def test_a_segfault_is_a_crash_and_the_runner_goes_on(builder, runner, ctx):
    builds = builder.build([MeasureCandidate(IRModule({"main": segfault})), MeasureCandidate(tiled(8, 8, True))],
                           ctx.target)
    assert all(b.ok for b in builds), builds
    results = runner.run(ctx, builds)
    assert results[0].error_kind == "crash" and "SIGSEGV" in results[0].error
    assert results[1].ok


def test_inputs_and_reference_are_reused_and_reloaded(tmp_path, builder, ctx):
    calls = []

    def counting(runner):
        real = runner._reference

        def spy(*args):
            calls.append(args)
            return real(*args)

        runner._reference = spy
        return runner

    builds = builder.build([MeasureCandidate(tiled(8, 8, False))], ctx.target)
    with counting(LocalRunner(str(tmp_path), timeout_s=10, repeat=1, min_repeat_ms=1)) as first:
        assert first.run(ctx, builds)[0].ok
        data = first.workload(ctx)
        stamps = {p: os.stat(p).st_mtime_ns for p in (data.inputs_path, data.reference_path)}
        assert first.run(ctx, builds)[0].ok  # second batch: nothing regenerated
        assert len(calls) == 1
    with counting(LocalRunner(str(tmp_path), timeout_s=10, repeat=1, min_repeat_ms=1)) as second:
        assert second.run(ctx, builds)[0].ok  # a new runner reloads them from the work folder
        assert len(calls) == 1
        assert second.workload(ctx).inputs_path == data.inputs_path
    assert {p: os.stat(p).st_mtime_ns for p in stamps} == stamps
    args = load_arrays(data.inputs_path)
    np.testing.assert_array_equal(args[0], random_arguments(gemm, seed=0)[0])
    (reference,) = load_arrays(data.reference_path)
    np.testing.assert_allclose(reference, args[0] @ args[1], rtol=1e-5, atol=1e-5)


def test_integer_workloads_are_checked_exactly(builder, tmp_path):
    workload = int8_gemm(32, 32, 32)
    ctx = TuneContext.create(workload, TARGET)
    sch = Schedule(workload)
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.reorder(k, i, j)
    builds = builder.build([MeasureCandidate(sch.mod)], ctx.target)
    with LocalRunner(str(tmp_path), timeout_s=10, repeat=1, min_repeat_ms=1) as runner:
        assert runner.run(ctx, builds)[0].ok
        data = runner.workload(ctx)
        assert data.outputs == [2] and data.tolerances == [(0.0, 0.0)]
        a, b, c = data.arguments
        assert a.min() >= 0 and a.max() < 16 and b.min() >= -8 and b.max() < 8 and b.min() < 0 and not c.any()
        np.testing.assert_array_equal(data.reference[0], a.astype("int32") @ b.astype("int32").T)


def test_failed_builds_are_not_run(runner, ctx):
    results = runner.run(ctx, [BuildResult(None, "build failed: boom", 0.1)])
    assert results == [RunResult(None, "build failed: boom", "build")]


def test_helpers_and_registries():
    assert written_params(gemm) == [2]
    assert tolerances(gemm, [2]) == [(1e-3, pytest.approx(65e-6))]
    assert isinstance(BUILDERS.create("local", max_workers=1), LocalBuilder)
    runner = RUNNERS.create({"name": "local", "timeout_s": 3})
    assert isinstance(runner, LocalRunner) and runner.timeout_s == 3
    runner.close()
    with pytest.raises(ValueError, match="unknown error kind"):
        RunResult(None, "x", "exploded")


def test_a_module_can_travel_as_tvmscript(tmp_path):
    """The fallback for IR that does not pickle: the worker parses the text and builds the same program."""
    import tensorize
    from search.measure.worker import _ArrayCache, handle

    path = str(tmp_path / "from_text.so")
    secs = handle("build_script", (tiled(8, 8, False).script(), TARGET, path), _ArrayCache())
    assert secs > 0
    rng = np.random.default_rng(1)
    a, b = (rng.uniform(-1, 1, (64, 64)).astype("float32") for _ in range(2))
    c = np.zeros((64, 64), "float32")
    tensorize.runtime.load_module(path)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
