"""Cache eviction before measurements: ``f_preproc="cache_flush_cpu_non_first_arg"`` and the runner's
``enable_cpu_cache_flush``."""
import time

import numpy as np
import pytest

import tensorize as tvm
from tensorize.errors import TVMValueError
from tensorize.runtime import cache_flush
from tensorize.script import tir as T


@T.prim_func
def copy(a: T.Buffer((1 << 18,), "float32"), b: T.Buffer((1 << 18,), "float32")):
    for i in range(1 << 18):
        with T.block("b"):
            vi = T.axis.spatial(1 << 18, i)
            b[vi] = a[vi] + T.float32(1)


def test_flush_keeps_contents_and_takes_tensors_and_scalars():
    a = tvm.nd.array(np.arange(1000, dtype="float32"))
    b = np.full(5000, 3.0)
    cache_flush.cache_flush_cpu_non_first_arg(a, b, 7)
    cache_flush.flush_arrays([a, b, 2.5])
    assert a.numpy()[999] == 999 and float(b.sum()) == 15000.0


def test_clflush_evicts():
    if cache_flush._clflush() is None:
        pytest.skip("no clflush on this CPU: the portable eviction is used")
    a, b = np.ones(1 << 18, "float32"), np.empty(1 << 18, "float32")  # 1 MiB each

    def median(before):
        times = []
        for _ in range(60):
            before()
            start = time.perf_counter()
            np.copyto(b, a)
            times.append(time.perf_counter() - start)
        return float(np.median(times))

    warm = median(lambda: None)
    cold = median(lambda: cache_flush.flush_arrays([a, b]))
    assert cold > 1.3 * warm, (warm, cold)


def test_time_evaluator_runs_the_preprocessor_before_each_measurement(monkeypatch):
    seen = []
    monkeypatch.setitem(cache_flush.PREPROCESSORS, "cache_flush_cpu_non_first_arg", lambda *args: seen.append(args))
    mod = tvm.build(copy, target="llvm")
    a, b = tvm.nd.array(np.ones(1 << 18, "float32")), tvm.nd.empty((1 << 18,), "float32")
    result = mod.time_evaluator(mod.entry_name, tvm.cpu(), number=1, repeat=4,
                                f_preproc="cache_flush_cpu_non_first_arg")(a, b)
    assert len(result.results) == 4 and len(seen) == 4 and seen[0][0] is a and seen[0][1] is b
    assert float(b.numpy()[0]) == 2.0
    with pytest.raises(TVMValueError, match="unknown f_preproc"):
        mod.time_evaluator(mod.entry_name, tvm.cpu(), f_preproc="flush_everything")


def test_runner_timing_with_cache_flush_times_single_cold_runs(monkeypatch, tmp_path):
    from search.measure.tasks import TimingConfig, check_and_time

    calls = []
    monkeypatch.setitem(cache_flush.PREPROCESSORS, "cache_flush_cpu_non_first_arg",
                        lambda *args: calls.append(len(args)))
    path = str(tmp_path / "copy.so")
    tvm.build(copy, target="llvm").export_library(path)
    a = np.random.default_rng(0).standard_normal(1 << 18).astype("float32")
    times = check_and_time(path, [a, np.zeros_like(a)], [a + 1], [1], [(1e-6, 1e-6)],
                           TimingConfig(number=2, repeat=3, min_repeat_ms=30.0, enable_cpu_cache_flush=True))
    assert len(times) == 6 and calls == [2] * 6  # number x repeat single runs, each after a flush
