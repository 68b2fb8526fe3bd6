"""Baselines measured in the same process as our kernels: numpy and PyTorch (CPU).

Each baseline returns a callable running the workload on prepared inputs, so the driver times
everything the same way (best of several repeats after a warm-up).
"""
from __future__ import annotations

import logging
import time
from typing import Callable

import numpy as np

log = logging.getLogger(__name__)


def time_callable(fn: Callable[[], object], number: int = 10, repeat: int = 5, warmup: int = 2,
                  min_repeat_ms: float = 0.0) -> list[float]:
    """Seconds per call for each of ``repeat`` rounds of ``number`` calls (after ``warmup`` calls); with
    ``min_repeat_ms``, as many more calls per round as make a round last that long (TVM's
    ``time_evaluator`` semantics: a few calls of a 40 us kernel time the clock and the scheduler, not it).

    >>> len(time_callable(lambda: None, number=2, repeat=3, min_repeat_ms=1))
    3
    """
    for _ in range(warmup):
        fn()
    if min_repeat_ms > 0:
        start = time.perf_counter()
        fn()
        one = max(time.perf_counter() - start, 1e-7)
        number = max(number, int(min_repeat_ms * 1e-3 / one) + 1)
    results = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        results.append((time.perf_counter() - start) / number)
    return results


def numpy_baseline(workload, inputs: list[np.ndarray]) -> Callable[[], np.ndarray]:
    """The workload's numpy reference on ``inputs``."""
    return lambda: workload.reference(*inputs)


def torch_baseline(workload, inputs: list[np.ndarray], threads: int | None = None) -> Callable[[], object] | None:
    """PyTorch (CPU, channels-last) for the conv workloads; None when torch is missing or the workload has no
    torch form."""
    try:
        import torch
    except ImportError:
        log.warning("PyTorch is not installed: skipping the torch baseline (pip install torch==2.13.0)")
        return None
    if threads:
        torch.set_num_threads(threads)
    p = workload.params
    if workload.name == "dep_conv":
        data, kernel = inputs
        x = torch.from_numpy(data).permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
        w = torch.from_numpy(np.ascontiguousarray(kernel.transpose(2, 0, 1)[:, None]))  # (C, 1, KH, KW)
        w = w.contiguous(memory_format=torch.channels_last)
        conv = lambda: torch.nn.functional.conv2d(x, w, stride=p["stride"], padding=p["pad"], groups=p["C"])  # noqa: E731
    elif workload.name == "conv2d":
        data, kernel = inputs
        x = torch.from_numpy(data).permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
        w = torch.from_numpy(np.ascontiguousarray(kernel.transpose(3, 2, 0, 1))).contiguous(
            memory_format=torch.channels_last)
        conv = lambda: torch.nn.functional.conv2d(x, w, stride=p["stride"], padding=p["pad"])  # noqa: E731
    else:
        return None

    def run():
        with torch.no_grad():
            return conv()

    return run


def torch_output_nhwc(result) -> np.ndarray:
    """A PyTorch NCHW result as a numpy NHWC array."""
    return result.permute(0, 2, 3, 1).contiguous().numpy()
