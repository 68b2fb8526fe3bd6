"""The AMX and VNNI benchmarks: on a CPU without the instructions they say so and exit 0 (after checking the
AMX assembly); the C reference kernels compile with the system's gcc."""
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
