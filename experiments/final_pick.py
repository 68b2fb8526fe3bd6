"""The tuned program an experiment reports: the search's few best, timed again side by side in the
experiment's own process, the fastest kept.

The search times each program once in its runner process, where a few percent separate the best ones
and where a kernel's speed also depends on where its pages happen to land; the experiment then times
its pick next to the baselines in another process. Timing the best ``search.final_candidates``
programs (default 4) and the seeds again here, in alternating rounds, each round on freshly allocated
arrays (``kernel_timer``), picks the one that is fastest where it is reported. The report's own timing
is a fresh measurement after the pick, made the same way.
"""
from __future__ import annotations

import logging

import numpy as np

import tensorize as tvm
from search import split_layout_rewrite
from search.measure.tasks import pack_weights

log = logging.getLogger(__name__)

DEFAULT_FINAL_CANDIDATES = 4


def run_and_check(rt_mod, inputs: list[np.ndarray], expected: np.ndarray) -> tuple[bool, float]:
    """Run ``rt_mod`` once on ``inputs`` (its weights packed) and compare with ``expected``:
    ``(within rtol/atol 1e-4, max abs error)``.

    Parameters
    ----------
    rt_mod : Module
        The built kernel.
    inputs : list of numpy.ndarray
        The workload's inputs.
    expected : numpy.ndarray
        The reference output.

    Returns
    -------
    tuple of (bool, float)
    """
    args = pack_weights(rt_mod, [tvm.nd.array(x) for x in inputs])  # packed ones come back as numpy
    out = tvm.nd.array(np.zeros(expected.shape, expected.dtype))
    rt_mod(*args, out)
    got = out.numpy()
    return bool(np.allclose(got, expected, rtol=1e-4, atol=1e-4)), float(np.max(np.abs(got - expected)))


def kernel_timer(rt_mod, inputs: list[np.ndarray], expected: np.ndarray, number: int, repeat: int,
                 min_repeat_ms: float = 0.0):
    """A timer of ``rt_mod``: each call times one block (``time_evaluator``'s median, in seconds) on
    arrays allocated afresh for it, so the blocks sample several placements of the data in physical
    memory (this machine's L2 is physically indexed: one placement can be 30% slower than another).

    Parameters
    ----------
    rt_mod : Module
        The built kernel (weights packed by ``pack_weights``).
    inputs : list of numpy.ndarray
        The workload's inputs.
    expected : numpy.ndarray
        The reference output (its shape and dtype).
    number, repeat : int
        Each block's timing, as ``time_evaluator`` takes them.
    min_repeat_ms : float
        ``time_evaluator``'s minimum repeat duration.

    Returns
    -------
    callable
        ``timer() -> float`` seconds per call.
    """
    dev = tvm.cpu(0)
    evaluator = rt_mod.time_evaluator(rt_mod.entry_name, dev, number=number, repeat=repeat,
                                      min_repeat_ms=min_repeat_ms)

    def timer() -> float:
        args = pack_weights(rt_mod, [tvm.nd.array(x, dev) for x in inputs])
        out = tvm.nd.array(np.zeros(expected.shape, expected.dtype), dev)
        return float(evaluator(*args, out).median)

    return timer


def fastest_here(schedules: list, inputs: list[np.ndarray], expected: np.ndarray, target, number: int,
                 repeat: int, rounds: int = 3, min_repeat_ms: float = 0.0) -> tuple[int, list[float]]:
    """``(index of the fastest schedule, median seconds of each)`` over ``rounds`` alternating rounds.

    Each schedule is built and its output checked against ``expected``; a schedule that fails to build or
    gives a wrong result times ``inf`` (and is logged). Every block runs on freshly allocated arrays
    (``kernel_timer``).

    Parameters
    ----------
    schedules : list of Schedule
        The contenders (the search's best first).
    inputs : list of numpy.ndarray
        The workload's inputs.
    expected : numpy.ndarray
        The reference output.
    target : Target
        The target.
    number, repeat : int
        Each round's timing, as ``time_evaluator`` takes them.
    rounds : int
        How many times each schedule is timed, in turns.
    min_repeat_ms : float
        ``time_evaluator``'s minimum repeat duration.

    Returns
    -------
    tuple of (int, list of float)
    """
    prepared = []
    for i, sch in enumerate(schedules):
        try:
            kernel_mod, _ = split_layout_rewrite(sch.mod)
            rt_mod = tvm.build(kernel_mod, target=target)
            ok, _ = run_and_check(rt_mod, inputs, expected)
        except Exception as err:  # noqa: BLE001 - a contender that fails is dropped, the others compete
            log.warning("final candidate %d failed to build or run: %s", i, err)
            prepared.append(None)
            continue
        if not ok:
            log.warning("final candidate %d gives a wrong result; dropped", i)
            prepared.append(None)
            continue
        prepared.append(kernel_timer(rt_mod, inputs, expected, number, repeat, min_repeat_ms))
    times: list[list[float]] = [[] for _ in schedules]
    for _ in range(rounds):
        for i, timer in enumerate(prepared):
            if timer is not None:
                times[i].append(timer())
    medians = [float(np.median(t)) if t else float("inf") for t in times]
    best = int(np.argmin(medians))
    log.info("final pick: candidate %d of %d (%s ms)", best, len(schedules),
             ", ".join(f"{m * 1e3:.4g}" for m in medians))
    return best, medians
