"""The baselines an experiment names (``experiment.baselines``), each checked against the numpy
reference and timed with the same method as our kernels (``time_callable``: warm-up, then the median
of ``repeat`` rounds of ``number`` calls); an experiment times them and its kernels in alternating
blocks (``time_side_by_side``, ``runner.rounds`` of them).

Names: ``numpy``; ``torch`` (PyTorch CPU, channels-last, oneDNN where PyTorch uses it); ``torch_nchw``;
``onnxruntime``; ``tvm`` (Apache TVM MetaSchedule with the same trial budget, when installed). A baseline
that is not installed or has no form for the workload is skipped with a log line.

>>> sorted(BASELINES)
['numpy', 'onnxruntime', 'torch', 'torch_nchw', 'tvm']
"""
from __future__ import annotations

import logging
from typing import Callable, Sequence

import numpy as np

from .baselines import numpy_baseline, time_callable, torch_baseline, torch_output_nhwc
from .framework_baselines import onnxruntime_baseline, torch_suite_baseline

log = logging.getLogger(__name__)

BASELINES = ("numpy", "torch", "torch_nchw", "onnxruntime", "tvm")

__all__ = ["BASELINES", "baseline_timers", "time_side_by_side"]


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


def baseline_timers(workload, inputs: Sequence[np.ndarray], expected: np.ndarray, names: Sequence[str],
                    number: int, repeat: int, threads: int | None = None, tvm_options: dict | None = None,
                    min_repeat_ms: float = 0.0) -> dict[str, Callable[[], float]]:
    """Each named baseline that can run, checked against ``expected``, as a timer: a call times one block
    (``repeat`` rounds of ``number`` calls) and returns its median in milliseconds, so a caller can time
    the baselines and its own kernels in alternating blocks. Apache TVM's figure is measured once,
    after its tuning (its timer returns that figure).

    Raises ``AssertionError`` when a baseline disagrees with the numpy reference (the workload or the
    baseline's layout conversion is wrong), ``KeyError`` for an unknown name.
    """
    result: dict[str, Callable[[], float]] = {}
    for name in names:
        if name == "tvm":
            from .tvm_baseline import tvm_metaschedule_ms

            ms = tvm_metaschedule_ms(workload, inputs, expected, number=number, repeat=repeat, **(tvm_options or {}))
            if ms is not None:
                result["tvm"] = lambda ms=ms: ms
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
        result[name] = lambda run=run, calls=calls: 1e3 * float(np.median(time_callable(
            run, number=calls, repeat=repeat, min_repeat_ms=min_repeat_ms)))
    return result


def time_side_by_side(timers: dict, rounds: int = 3, once: Sequence = ()) -> dict:
    """The median over ``rounds`` of each timer's result, the timers called in turn in every round (ours
    and the baselines alike, so a slow spell of the machine or a baseline's allocator falls on all of
    them); the timers named in ``once`` (numpy, the slow reference) only in the first round.

    Parameters
    ----------
    timers : dict
        Key -> callable returning one block's time.
    rounds : int
        How many rounds (at least 1).
    once : sequence
        Keys timed in the first round only.

    Returns
    -------
    dict
        Key -> median time.

    Examples
    --------
    >>> times = iter([3.0, 1.0, 2.0])
    >>> time_side_by_side({"a": lambda: next(times), "b": lambda: 5.0}, rounds=3)
    {'a': 2.0, 'b': 5.0}
    """
    results: dict = {key: [] for key in timers}
    for r in range(max(1, int(rounds))):
        for key, timer in timers.items():
            if r == 0 or key not in once:
                results[key].append(timer())
    return {key: float(np.median(values)) for key, values in results.items()}
