"""What the GPU benchmarks share: CUDA-event timing and a short search with the project's search settings."""
from __future__ import annotations

import os

import numpy as np


def time_gpu(cupy, fn, repeat):
    """Median seconds of ``repeat`` calls of ``fn`` (after one warm-up), timed with CUDA events."""
    fn()
    times = []
    for _ in range(repeat):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return float(np.median(times))


def tune_program(mod, target, trials, work_dir):
    """The search's best schedule of ``mod`` after ``trials`` on the GPU (the ``cuda`` builder and runner)."""
    from search.tune import compile_tir, tune_tir

    import yaml

    # the search parameters of configs/search/evolutionary.yaml, as the CPU benchmarks use them (the class
    # defaults are MetaSchedule's population of 512: minutes of Python replay per round)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    with open(os.path.join(root, "configs", "search", "evolutionary.yaml")) as f:
        strategy_config = yaml.safe_load(f)["strategy"]
    db = tune_tir(mod, target, work_dir, max_trials_global=trials, num_trials_per_iter=min(16, trials),
                  builder="cuda", runner="cuda", progress=False, strategy_config=strategy_config)
    return compile_tir(db, mod, target)


