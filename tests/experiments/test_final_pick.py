"""The experiments' final pick (the search's best few timed again in one process, the fastest kept,
a wrong one dropped) and the side-by-side timing of kernels and baselines."""
import numpy as np

import tensorize as tvm
from experiments.final_pick import fastest_here
from experiments.workloads.gemm import gemm
from tensorize import te

HOST = tvm.target.Target("llvm -mcpu=native")


def _gemm_schedules(n=96):
    func = te.create_prim_func(list(gemm(n, n, n)))
    naive = tvm.tir.Schedule(func)
    tiled = tvm.tir.Schedule(func)
    block = tiled.get_block("C")
    i, j, k = tiled.get_loops(block)
    j0, j1 = tiled.split(j, [None, 16])
    tiled.reorder(i, j0, k, j1)
    tiled.vectorize(j1)
    return func, naive, tiled


def test_the_faster_program_is_picked_and_a_wrong_one_dropped():
    func, naive, tiled = _gemm_schedules()
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((96, 96)).astype("float32"), rng.standard_normal((96, 96)).astype("float32")
    best, medians = fastest_here([naive, tiled], [a, b], a @ b, HOST, number=3, repeat=3, rounds=2)
    assert best == 1 and medians[1] < medians[0]
    best, medians = fastest_here([naive, tiled], [a, b], a @ b + 1, HOST, number=1, repeat=1, rounds=1)
    assert medians == [float("inf"), float("inf")]


def test_kernels_and_baselines_are_timed_in_turns():
    from experiments.baseline_set import time_side_by_side

    calls = []
    timers = {name: (lambda name=name: calls.append(name) or float(len(calls))) for name in ("ours", "torch", "numpy")}
    medians = time_side_by_side(timers, rounds=3, once=["numpy"])
    assert calls == ["ours", "torch", "numpy", "ours", "torch", "ours", "torch"]
    assert medians == {"ours": 4.0, "torch": 5.0, "numpy": 3.0}
