"""The AMX and VNNI benchmarks: on a CPU without the instructions they say so and exit 0 (after checking the
AMX assembly); the C reference kernels compile with the system's gcc."""
import json
import os
import subprocess
import sys

import pytest

from tensorize.target import host_cpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FEATURES = host_cpu()[1]


def _run(script, *args):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", script), *args], capture_output=True,
                          text=True, env=env, timeout=300)


@pytest.mark.skipif("amx-tile" in FEATURES, reason="the host has AMX: the benchmark measures")
def test_amx_benchmark_says_no_amx_and_exits_0():
    result = _run("amx_gemm_cpu.py")
    assert result.returncode == 0, result.stderr
    assert "assembly for llvm -mcpu=sapphirerapids" in result.stdout
    assert "no AMX on this CPU" in result.stdout


@pytest.mark.skipif("avx512vnni" in FEATURES, reason="the host has VNNI: the benchmark measures")
def test_vnni_benchmark_says_no_vnni_and_exits_0():
    result = _run("int8_gemm_cpu.py")
    assert result.returncode == 0, result.stderr
    assert "no AVX512-VNNI on this CPU" in result.stdout


def test_c_reference_kernels_compile():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import c_peaks
    finally:
        sys.path.pop(0)
    try:
        c_peaks.vnni_peak_c()
        c_peaks.amx_peak_c()
    except c_peaks.CKernelUnavailable as err:
        pytest.skip(f"gcc cannot build the reference kernels here: {err}")


def _benchmark_module(name):
    sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]
    try:
        return __import__(name)
    finally:
        del sys.path[:2]


def test_paired_timing_alternates_ours_and_the_baseline():
    bench = _benchmark_module("amx_gemm_cpu")
    calls = []
    seconds, ops, base = bench.paired_time(lambda: calls.append("ours"), (None, None, lambda: calls.append("torch")),
                                           3, 42.0)
    assert calls == ["ours", "torch"] * 4  # a warm-up each, then 3 alternating rounds
    assert ops == 42.0 and 0 <= seconds < 1 and 0 <= base < 1
    assert bench.paired_time(lambda: None, None, 2, 1.0)[2] is None


def test_pinning_takes_one_cpu_per_core_or_leaves_the_affinity():
    code = ("import json, os, sys; sys.path[:0] = [{root!r}, {bench!r}]; import amx_gemm_cpu as m; "
            "before = sorted(os.sched_getaffinity(0)); cpus = m.pin_to_cores({n}); "
            "print(json.dumps([cpus, before, sorted(os.sched_getaffinity(0))]))")

    def pin(n):
        done = subprocess.run([sys.executable, "-c", code.format(root=ROOT, bench=os.path.join(ROOT, "benchmarks"),
                                                                 n=n)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    cpus, before, after = pin(1)
    assert cpus is None or (len(cpus) == 1 and after == cpus and set(cpus) <= set(before))
    cpus, before, after = pin(10_000)  # more threads than cores: nothing pinned
    assert cpus is None and after == before


@pytest.mark.parametrize("kind", ["int8", "bf16"])
def test_every_hand_variant_of_the_benchmark_computes_the_gemm_on_the_tile_model(kind):
    """The benchmark's hand rows (``hand_variants``: issue orders, packed A, stationary K chunks) each schedule the
    GEMM, compile for an AMX CPU with the tile instructions, and give the GEMM's result on the tile model."""
    import numpy as np

    from tensorize.codegen.python.interpreter import run_prim_func
    from tensorize.driver import lower
    from tensorize.transform import PassContext

    from intrinsics.x86_amx_model import AMXModel, bf16_to_f32
    from intrinsics.x86_amx_schedule import amx_gemm, pack_b, schedule_amx_gemm

    bench = _benchmark_module("amx_gemm_cpu")
    dtypes = ("uint8", "int8") if kind == "int8" else ("bfloat16", "bfloat16")
    M, N, K = 64, 64, 1024 if kind == "int8" else 512  # two K chunks of 8 tile steps
    rng = np.random.default_rng(3)
    if kind == "int8":
        a, b = rng.integers(0, 256, (M, K)).astype(np.uint8), rng.integers(-128, 128, (N, K)).astype(np.int8)
        ref, pack, c_dtype = a.astype(np.int64) @ b.astype(np.int64).T, 4, np.int32
    else:
        a, b = (rng.integers(0x3F00, 0x4000, (n, K)).astype(np.uint16) for n in (M, N))  # bf16 bits in [0.5, 2)
        ref, pack, c_dtype = bf16_to_f32(a).astype(np.float64) @ bf16_to_f32(b).astype(np.float64).T, 2, np.float32
    variants = bench.hand_variants(*dtypes, K, emulate=False)
    labels = [label for label, _ in variants]
    assert len(set(labels)) == len(labels) == 15 and any("grouped" in label for label in labels)
    assert sum("prefetched" in label for label in labels) == 3 and sum("tileloaddt1" in lb for lb in labels) == 2
    assert len(bench.hand_variants(*dtypes, K, emulate=True)) == 4  # the impl and pass variants need tiles
    for label, kwargs in variants:
        asm = bench.build_hand(M, N, K, dtypes, kwargs, target="llvm -mcpu=sapphirerapids").get_source("asm")
        passes_off = kwargs.get("disabled_pass", [])
        assert ("tilezero" in asm) == ("tir.FuseTileZero" not in passes_off), label
        assert ("tilerelease" in asm) == ("tir.HoistTileConfig" not in passes_off), label
        kwargs = {k: v for k, v in kwargs.items() if k != "disabled_pass"}
        sch = schedule_amx_gemm(amx_gemm(M, N, K, *dtypes), parallel=False, **kwargs)
        with PassContext(disabled_pass=passes_off):
            lowered = lower(sch.mod)
        c = np.full((M, N), 7, c_dtype)
        run_prim_func(lowered, a, pack_b(b, pack), c, externs=AMXModel().externs())
        np.testing.assert_allclose(c, ref, rtol=1e-5, err_msg=label)


def test_family_summary_counts_candidates_by_the_intrinsic_names_isa():
    from types import SimpleNamespace

    import intrinsics  # noqa: F401  (registers the AMX names)

    bench = _benchmark_module("amx_gemm_cpu")
    record = lambda trace, secs, valid=True: SimpleNamespace(is_valid=valid, trace_json=trace,  # noqa: E731
                                                             mean_run_secs=secs)
    records = [record(["tensorize", "matmul_32x32x512_u8i8s32_amx_pa"], 2e-3),
               record(["tensorize", "matmul_32x32x256_u8i8s32_amx"], 1e-3), record(["split"], 5e-3),
               record(["tensorize", "dot_16x4_u8i8s32_vnni"], 3e-3), record(["split"], 1e-4, valid=False)]
    summary = bench.family_summary(SimpleNamespace(get_all_tuning_records=lambda: records))
    assert summary == "amx 2 (best 1.00 ms), vnni 1 (best 3.00 ms), plain 1 (best 5.00 ms)", summary


def test_dry_run_of_the_hand_rows_only():
    """``--dry-run --no-search``: every hand GEMM variant this CPU can run (the descriptions in place of the tile
    instructions), checked and timed next to PyTorch where it is installed, no search."""
    result = _run("amx_gemm_cpu.py", "--dry-run", "--no-search", "--size", "64", "--repeat", "1", "--workloads",
                  "gemm_int8")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line for line in result.stdout.splitlines() if line.startswith("u8.s8->s32 GEMM, hand:")]
    assert len(rows) == 2 * 4 and "searched" not in result.stdout  # 4 variants, each printed twice


def test_dry_run_of_the_conv2d_rows():
    """``--workloads conv2d --no-search``: the im2col GEMM and the direct convolution, each checked exactly against
    numpy (on the descriptions) and timed next to PyTorch where it is installed."""
    result = _run("amx_gemm_cpu.py", "--dry-run", "--no-search", "--conv-size", "12", "--repeat", "1",
                  "--workloads", "conv2d")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "hand (im2col GEMM)" in result.stdout and "hand: direct (pixels flat" in result.stdout
