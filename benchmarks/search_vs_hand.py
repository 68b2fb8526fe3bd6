"""How close the search gets to a hand-written schedule: tune a workload with several seeds, then time each
search's best few programs next to the hand schedule in interleaved rounds.

Run: ``python benchmarks/search_vs_hand.py [--workload dep_conv] [--shape mobilenet_112] [--seeds 0,1,2,3,4]
[--trials 64] [--top 3] [--rounds 9] [--share 0.25]``

For every seed: ``search.tune_tir`` with the experiments' search settings (``configs/search/evolutionary.yaml``)
in a fresh folder, then its ``--top`` fastest programs (``search.compile_tir_top_k``) and the hand schedule
(``experiments.schedules``, ``cpu_hand``) are built, checked against numpy and timed ``--rounds`` times in turn
(``time_evaluator``, 20 calls a round; the median round per program). Prints, per seed, the best of the top
programs over the hand schedule, and the mean over seeds. ``--share`` sets the two-level share of fresh CPU
draws (``search.tune_tir(space_config={"two_level_share": ...})``; 0 draws every tiling uniformly).
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import search  # noqa: E402
import tensorize as tvm  # noqa: E402
from experiments.schedules import apply_schedule  # noqa: E402
from experiments.tuning import search_group_file  # noqa: E402
from experiments.workloads import get_workload  # noqa: E402
from tensorize import te  # noqa: E402

TARGET = "llvm -mcpu=native"


def timer(mod, inputs, expected, output_shape, output_dtype):
    """A callable giving one round's mean seconds of ``mod`` (built, its output checked first)."""
    dev = tvm.cpu(0)
    lib = tvm.build(mod, target=TARGET)
    args = [tvm.nd.array(x, dev) for x in inputs] + [tvm.nd.array(np.zeros(output_shape, output_dtype), dev)]
    lib(*args)
    np.testing.assert_allclose(args[-1].numpy(), expected, rtol=1e-3, atol=1e-3)
    evaluator = lib.time_evaluator("main", dev, number=20, repeat=1)
    return lambda: evaluator(*args).mean


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="dep_conv")
    parser.add_argument("--shape", default="mobilenet_112")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--top", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--share", type=float, default=None, help="two-level share of fresh CPU draws")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    wl = get_workload(args.workload, args.shape)
    mod = tvm.IRModule({"main": te.create_prim_func(wl.args)})
    inputs = wl.random_inputs(np.random.default_rng(0))
    expected = wl.reference(*inputs)
    hand = tvm.tir.Schedule(mod)
    lanes = 16 if tvm.target.Target(TARGET).has_feature("avx512f") else 8
    apply_schedule(args.workload, "cpu_hand", hand, vector_lanes=lanes)
    ratios = []
    for seed in (int(s) for s in args.seeds.split(",")):
        with tempfile.TemporaryDirectory() as work_dir:
            db = search.tune_tir(mod, TARGET, work_dir, max_trials_global=args.trials, num_trials_per_iter=16,
                                 seed=seed, progress=False, strategy_config=search_group_file(),
                                 space_config={"two_level_share": args.share})
            tops = search.compile_tir_top_k(db, mod, TARGET, args.top)
        timers = {"hand": timer(hand.mod, inputs, expected, wl.output_shape(), wl.output_dtype)}
        timers.update({f"top{i}": timer(s.mod, inputs, expected, wl.output_shape(), wl.output_dtype)
                       for i, s in enumerate(tops)})
        rounds = {name: [] for name in timers}
        for _ in range(args.rounds):
            for name, fn in timers.items():
                rounds[name].append(fn())
        median = {name: float(np.median(v)) for name, v in rounds.items()}
        best = min(v for name, v in median.items() if name != "hand")
        ratios.append(best / median["hand"])
        print(f"seed {seed}: hand {median['hand'] * 1e3:.4f} ms, search's best of {len(tops)} {best * 1e3:.4f} ms, "
              f"best / hand {ratios[-1]:.2f}", flush=True)
    print(f"{args.workload} {args.shape}, {args.trials} trials: best / hand over {len(ratios)} seeds "
          f"{np.mean(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")


if __name__ == "__main__":
    main()
