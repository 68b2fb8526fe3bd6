"""The baselines an experiment names (``experiment.baselines``), each checked against the numpy
reference and timed with the same method as our kernels (``time_callable``: warm-up, then the median
of ``repeat`` rounds of ``number`` calls).

Names: ``numpy``; ``torch`` (PyTorch CPU, channels-last, oneDNN where PyTorch uses it); ``torch_nchw``;
``onnxruntime``; ``tvm`` (Apache TVM MetaSchedule with the same trial budget, when installed). A baseline
that is not installed or has no form for the workload is skipped with a log line.

>>> sorted(BASELINES)
['numpy', 'onnxruntime', 'torch', 'torch_nchw', 'tvm']
"""
from __future__ import annotations

import logging
from typing import Sequence

import numpy as np

from .baselines import numpy_baseline, time_callable, torch_baseline, torch_output_nhwc
from .framework_baselines import onnxruntime_baseline, torch_suite_baseline

log = logging.getLogger(__name__)

BASELINES = ("numpy", "torch", "torch_nchw", "onnxruntime", "tvm")

__all__ = ["BASELINES", "measure_baselines"]


def _callable(name: str, workload, inputs, threads):
    """``(run, to_nhwc)`` of baseline ``name`` or None."""
    if name == "numpy":
        return numpy_baseline(workload, inputs), np.asarray
    if name == "torch" and workload.name in ("dep_conv", "conv2d"):
        run = torch_baseline(workload, inputs, threads=threads)
        return None if run is None else (run, torch_output_nhwc)
    if name in ("torch", "torch_nchw"):
        return torch_suite_baseline(workload, inputs, channels_last=name == "torch", threads=threads)
    if name == "onnxruntime":
        return onnxruntime_baseline(workload, inputs, threads=threads)
    raise KeyError(f"unknown baseline {name!r}; choices: {list(BASELINES)}")


def measure_baselines(workload, inputs: Sequence[np.ndarray], expected: np.ndarray, names: Sequence[str],
                      number: int, repeat: int, threads: int | None = None, tvm_options: dict | None = None,
                      min_repeat_ms: float = 0.0) -> dict[str, float]:
    """Milliseconds per call of each named baseline that can run (median over ``repeat`` rounds of
    ``number`` calls, more where a round would last under ``min_repeat_ms``).

    Raises ``AssertionError`` when a baseline disagrees with the numpy reference (the workload or the
    baseline's layout conversion is wrong), ``KeyError`` for an unknown name.
    """
    result: dict[str, float] = {}
    for name in names:
        if name == "tvm":
            from .tvm_baseline import tvm_metaschedule_ms

            ms = tvm_metaschedule_ms(workload, inputs, expected, number=number, repeat=repeat, **(tvm_options or {}))
            if ms is not None:
                result["tvm"] = ms
            continue
        made = _callable(name, workload, inputs, threads)
        if made is None:
            log.info("baseline %s has no form for %s: skipped", name, workload.name)
            continue
        run, to_nhwc = made
        got = to_nhwc(run())
        if not np.allclose(got, expected, rtol=1e-3, atol=1e-3):
            raise AssertionError(f"the {name} baseline disagrees with the numpy reference on {workload.name} "
                                 f"(max abs error {float(np.max(np.abs(got - expected))):g}): check the workload")
        calls = max(1, number // 5) if name == "numpy" else number
        result[name] = 1e3 * float(np.median(time_callable(run, number=calls, repeat=repeat,
                                                           min_repeat_ms=min_repeat_ms)))
    return result
