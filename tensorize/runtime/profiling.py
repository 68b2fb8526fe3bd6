"""``Module.time_evaluator``: repeated timing of a compiled function, TVM style.

Times are wall-clock seconds per run (``time.perf_counter``); arguments are checked and converted
once before timing so the measurement covers the native call only (plus a ctypes call, about 1 us).
"""
from __future__ import annotations

import statistics
import time
from typing import Sequence

import numpy as np

from ..errors import TVMValueError
from .cache_flush import PREPROCESSORS


class BenchmarkResult:
    """Timing results in seconds: ``mean``, ``median``, ``min``, ``max``, ``std`` and raw ``results``."""

    def __init__(self, results: Sequence[float]):
        self.results = tuple(float(r) for r in results)
        self.mean = statistics.fmean(self.results)
        self.median = statistics.median(self.results)
        self.min = min(self.results)
        self.max = max(self.results)
        self.std = statistics.pstdev(self.results) if len(self.results) > 1 else 0.0

    def __repr__(self) -> str:
        return (f"BenchmarkResult(min={self.min:.6g}, mean={self.mean:.6g}, median={self.median:.6g}, "
                f"max={self.max:.6g}, std={self.std:.6g}, results={self.results})")

    def __str__(self) -> str:
        header = "Execution time summary:\n" + " {:^12} {:^12} {:^12} {:^12} {:^12}\n".format(
            "mean (ms)", "median (ms)", "max (ms)", "min (ms)", "std (ms)")
        values = " {:^12.4f} {:^12.4f} {:^12.4f} {:^12.4f} {:^12.4f}\n".format(
            self.mean * 1e3, self.median * 1e3, self.max * 1e3, self.min * 1e3, self.std * 1e3)
        return header + values


ProfileResult = BenchmarkResult


def make_time_evaluator(func, dev, number: int, repeat: int, min_repeat_ms: float, limit_zero_time_iterations: int,
                        cooldown_interval_ms: float, repeats_to_cooldown: int, cache_flush_bytes: int,
                        f_preproc: str = ""):
    """The timing function behind ``Module.time_evaluator`` for the callable ``func``.

    Parameters
    ----------
    func : PackedFunc
        The function.
    dev : Device
        The device.
    number : int
        Calls per measurement.
    repeat : int
        Measurements.
    min_repeat_ms : float
        Raise ``number`` until a measurement takes this long.
    limit_zero_time_iterations : int
        Retries of a measurement of zero time.
    cooldown_interval_ms : float
        Pause between batches.
    repeats_to_cooldown : int
        Measurements per batch.
    cache_flush_bytes : int
        Bytes written before each measurement.
    f_preproc : str
        Run before each measurement on the arguments: ``"cache_flush_cpu_non_first_arg"`` evicts all but
        the first from the caches (``tensorize.runtime.cache_flush``); "" for nothing.

    Returns
    -------
    callable
        ``f(*args) -> BenchmarkResult``.
    """
    if number < 1 or repeat < 1:
        raise TVMValueError(f"time_evaluator needs number >= 1 and repeat >= 1, got number={number}, repeat={repeat}")
    flush = np.zeros(cache_flush_bytes // 8, dtype=np.float64) if cache_flush_bytes else None
    preproc = None
    if f_preproc:
        if f_preproc not in PREPROCESSORS:
            raise TVMValueError(f"unknown f_preproc {f_preproc!r}; known: {sorted(PREPROCESSORS)}")
        preproc = PREPROCESSORS[f_preproc]

    def evaluator(*args) -> BenchmarkResult:
        run = func.prepare(*args)
        run()  # warm-up: page in code and data
        dev.sync()
        results = []
        count = number
        for index in range(repeat):
            zero_runs = 0
            while True:
                if flush is not None:
                    flush[...] += 1.0  # touch the buffer to evict the caches
                if preproc is not None:
                    preproc(*args)
                start = time.perf_counter()
                for _ in range(count):
                    run()
                dev.sync()
                elapsed = time.perf_counter() - start
                if elapsed == 0 and zero_runs < limit_zero_time_iterations:
                    zero_runs += 1
                    continue
                if elapsed * 1e3 >= min_repeat_ms or min_repeat_ms <= 0:
                    break
                # Too short to measure: grow the run count towards min_repeat_ms, as TVM does.
                count = max(int(count * min_repeat_ms / max(elapsed * 1e3, 1e-3) * 1.618), count + 1)
            results.append(elapsed / count)
            if cooldown_interval_ms > 0 and (index + 1) % repeats_to_cooldown == 0:
                time.sleep(cooldown_interval_ms / 1e3)
        return BenchmarkResult(results)

    return evaluator
