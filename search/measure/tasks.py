"""The work done in isolation (a worker process or a Ray task): build a candidate into a shared library,
compute a workload's reference outputs, and check and time one built candidate.

These functions may crash the process they run in (an LLVM abort, a segfaulting kernel): callers run
them in a child process or a Ray worker, never in the tuning process itself.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

import numpy as np

from .inputs import fresh_arguments

logger = logging.getLogger(__name__)

__all__ = ["TimingConfig", "build_artifact", "split_for_measurement", "pack_weights", "reference_outputs", "parallel_outer_loops", "check_and_time",
           "RunFailure"]


@dataclass(frozen=True)
class TimingConfig:
    """How a candidate is timed, as ``time_evaluator``: ``repeat`` measurements, each of ``number`` runs
    (grown until a measurement lasts ``min_repeat_ms``); ``cache_flush_bytes`` > 0 evicts the caches
    before each measurement. ``max_measure_secs`` caps the timing of a slow candidate: when the
    check run shows that the full timing would take longer, fewer single runs are timed (a program
    ten times slower than the best needs no precise figure, and the trial budget is wall time).
    ``enable_cpu_cache_flush`` (MetaSchedule's option) times single runs, each after evicting every
    argument but the first from the caches, as a kernel runs inside a model."""

    number: int = 3
    repeat: int = 3
    min_repeat_ms: float = 30.0
    cache_flush_bytes: int = 0
    max_measure_secs: float = 1.0
    enable_cpu_cache_flush: bool = False


class RunFailure(Exception):
    """A candidate that ran but failed: ``kind`` is ``"run"`` (an error) or ``"wrong_output"``."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def build_artifact(mod, target: str, path: str) -> float:
    """Compile the scheduled ``mod`` for ``target`` and write the shared library ``path``; returns seconds."""
    import tensorize

    start = time.perf_counter()
    tmp = f"{path}.{os.getpid()}.tmp"
    tensorize.build(split_for_measurement(mod), target=target).export_library(tmp)
    os.replace(tmp, path)
    return time.perf_counter() - start


def split_for_measurement(mod):
    """``mod`` with its entry function's marked weight packing moved into packing functions
    (``search.postproc.split_layout_rewrite``): ``check_and_time`` packs once and times the kernel only."""
    from tensorize.transform.split_layout_rewrite import split_layout_rewrite
    from .inputs import entry_function

    if not hasattr(mod, "function_names"):
        return split_layout_rewrite(mod)[0]
    func = entry_function(mod)
    name = next(n for n in mod.function_names() if mod[n] is func)
    return split_layout_rewrite(mod, name)[0]


def pack_weights(module, call: list) -> list:
    """``call`` (the entry function's arguments in the original layouts) with each weight that ``module``
    packs outside its kernel (``<entry>__layout_rewrite_<i>`` functions) replaced by its packed copy."""
    from tensorize.ir import dtype as dt
    from tensorize.runtime.ndarray import aligned_empty

    from tensorize.transform.split_layout_rewrite import parse_packing_function_name

    call = list(call)
    for name in module.function_names:
        index = parse_packing_function_name(name, module.entry_name)
        if index is None:
            continue
        func = module.get_function(name)
        packed_param = func.signature.params[1]
        packed = aligned_empty(tuple(int(s) for s in packed_param.shape), np.dtype(dt.numpy_dtype(packed_param.dtype)))
        func(call[index], packed)
        call[index] = packed
    return call


def parallel_outer_loops(mod):
    """``mod`` with the outermost loop of each top-level block made parallel where that is legal (the schedule
    checks it binds only spatial iterators), so computing a reference of a large workload is fast."""
    from tensorize.schedule import Schedule

    from .inputs import entry_function

    func = entry_function(mod)
    name = next(gv.name_hint for gv, f in mod.functions.items() if f is func)
    sch = Schedule(mod)
    try:
        blocks = sch.get_child_blocks(sch.get_block("root", func_name=name))
    except Exception:  # noqa: BLE001 - no root block: leave the program as it is
        return mod
    for block in blocks:
        loops = sch.get_loops(block)
        if not loops:
            continue
        # a batch of 1 leads an NHWC convolution: fuse the leading loops until there is work to share
        prefix, extent = 1, _extent(sch, loops[0])
        while extent < 64 and prefix < len(loops) and _extent(sch, loops[prefix]) > 0:
            extent *= _extent(sch, loops[prefix])
            prefix += 1
        for lead in ((prefix, 1) if prefix > 1 else (1,)):
            trial = sch.copy()
            try:
                outer = trial.fuse(*trial.get_loops(block)[:lead]) if lead > 1 else trial.get_loops(block)[0]
                trial.parallel(outer)
            except Exception as err:  # noqa: BLE001 - a loop that cannot be parallel stays serial
                logger.debug("reference: %s not parallel over %d loops (%s)", block, lead, err)
                continue
            sch = trial
            break
    return sch.mod


def _extent(sch, loop) -> int:
    """A loop's constant extent (0 when symbolic)."""
    ext = sch.get(loop).extent
    return int(ext.value) if hasattr(ext, "value") else 0


def reference_outputs(mod, args: list[np.ndarray], outputs: list[int]) -> list[np.ndarray]:
    """The untransformed ``mod``'s outputs on ``args`` (outputs zeroed first), built for this machine."""
    import tensorize

    runtime = tensorize.build(parallel_outer_loops(mod), target="llvm -mcpu=native")
    work = fresh_arguments(args, outputs)
    runtime(*[a.item() if a.ndim == 0 else a for a in work])
    return [np.array(work[i]) for i in outputs]


def _compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    if got.shape != want.shape:
        return f"shape {got.shape} instead of {want.shape}"
    if rtol == 0 and atol == 0:
        bad = got != want
    else:
        bad = ~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(bad.sum())} of {bad.size} values differ (first at {where}: {got[where]!r} instead of "
            f"{want[where]!r}; rtol={rtol:g}, atol={atol:g})")


def check_and_time(artifact: str, args: list[np.ndarray], reference: list[np.ndarray], outputs: list[int],
                   tols: list[tuple[float, float]], timing: TimingConfig) -> list[float]:
    """Load ``artifact``, run it once on fresh copies of ``args`` and compare its outputs with ``reference``,
    then time it; returns the seconds per run of each repeat. Raises ``RunFailure``."""
    import tensorize

    try:
        module = tensorize.runtime.load_module(artifact)
    except Exception as err:  # noqa: BLE001
        raise RunFailure("run", f"cannot load {artifact}: {err}") from None
    try:
        work = fresh_arguments(args, outputs)
        call = [a.item() if a.ndim == 0 else a for a in work]
        try:
            call = pack_weights(module, call)  # once, outside the timed region
        except Exception as err:  # noqa: BLE001
            raise RunFailure("run", f"packing the weights failed: {type(err).__name__}: {err}") from None
        start = time.perf_counter()
        try:
            module(*call)
        except Exception as err:  # noqa: BLE001 - argument mismatch or an error code from the kernel
            raise RunFailure("run", f"{type(err).__name__}: {err}") from None
        first = time.perf_counter() - start
        for position, index in enumerate(outputs):
            problem = _compare(work[index], reference[position], *tols[position])
            if problem:
                raise RunFailure("wrong_output", f"output {index} differs from the reference: {problem}")
        number, repeat, min_ms = timing.number, timing.repeat, timing.min_repeat_ms
        preproc = ""
        if timing.enable_cpu_cache_flush:  # every run cold but for its first argument: one run per measurement
            number, repeat, min_ms = 1, max(repeat, number * repeat), 0.0
            preproc = "cache_flush_cpu_non_first_arg"
        budget = timing.max_measure_secs
        if budget and budget > 0 and first * (number * repeat + 1) > budget:
            runs = int(budget / max(first, 1e-9)) - 1  # the evaluator's warm-up run counts too
            if runs < 1:
                return [first]
            number, repeat, min_ms = 1, max(1, min(runs, repeat)), 0.0
        evaluator = module.time_evaluator(module.entry_name, tensorize.cpu(), number=number,
                                          repeat=repeat, min_repeat_ms=min_ms,
                                          cache_flush_bytes=timing.cache_flush_bytes, f_preproc=preproc)
        return list(evaluator(*call).results)
    finally:
        unload = getattr(module, "unload", None)
        if unload is not None:
            unload()
