"""How the search's own programs compare with the default schedule on a model's task: tune one task of a model
(the default schedules measured first, as ``tune_graph`` does), then time the best program the search found
that is not a default schedule next to the best default one, in interleaved rounds.

Run: ``python benchmarks/search_vs_default.py [--model mobilenet_v2] [--tasks 17,26] [--seeds 0,1,2]
[--trials 48] [--rounds 9]``

Each task is ``tensorize.graph.build.graph_tasks(model)[index]`` on this host (``llvm -mcpu=native``), tuned by
``search.tune_tir`` on one thread with a population of 48 in a fresh folder, the task's
``default_schedule_variants`` as baselines. Both programs are checked against the untransformed task and timed
``--rounds`` times in turn (``time_evaluator``, 50 calls a round; the median round of each). A ratio below 1
means the search found a program faster than the default schedule.
"""
from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import search  # noqa: E402
import tensorize as tvm  # noqa: E402
from experiments.e2e import time_alternating  # noqa: E402
from experiments.models import MODELS  # noqa: E402
from search.database import trace_key  # noqa: E402
from tensorize.frontend import from_onnx  # noqa: E402
from tensorize.graph.build import default_schedule_variants, graph_tasks  # noqa: E402

TARGET = "llvm -mcpu=native"
CALLS = 50  # kernel calls a round


def best_programs(db, mod, defaults):
    """The database's fastest default schedule and fastest other program (``Database.get_top_k``'s ranking by
    each program's median measurement)."""
    default_keys = {trace_key(d.trace.as_json()) for d in defaults}
    ranked = db.get_top_k(db.commit_workload(mod), 1 << 30, target=TARGET)
    default = next(r for r in ranked if r.trace_key in default_keys)
    searched = next((r for r in ranked if r.trace_key not in default_keys), None)
    return default.replay().mod, searched.replay().mod if searched else None


def paired(mods: dict, func, rounds: int) -> dict:
    """Median seconds per call of each module over ``rounds`` interleaved rounds of ``CALLS`` calls
    (``experiments.e2e.time_alternating``), outputs checked against ``func``'s."""
    rng = np.random.default_rng(0)
    shapes = [([int(s) for s in func.buffer_map[p].shape], func.buffer_map[p].dtype) for p in func.params]
    inputs = [rng.standard_normal(shape).astype(dtype) for shape, dtype in shapes[:-1]]
    out_shape, out_dtype = shapes[-1]
    expected = tvm.nd.array(np.zeros(out_shape, out_dtype))
    tvm.build(func, target=TARGET)(*[tvm.nd.array(x) for x in inputs], expected)
    rounds_of = {}
    for name, mod in mods.items():
        lib = tvm.build(mod, target=TARGET)
        args = [tvm.nd.array(x) for x in inputs] + [tvm.nd.array(np.zeros(out_shape, out_dtype))]
        lib(*args)
        np.testing.assert_allclose(args[-1].numpy(), expected.numpy(), rtol=1e-3, atol=1e-3)
        rounds_of[name] = functools.partial(lib.time_evaluator(lib.entry_name, tvm.cpu(), number=CALLS, repeat=1),
                                            *args)
    return {name: secs / CALLS for name, secs in time_alternating(rounds_of, repeat=rounds, min_secs=0).items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenet_v2", choices=sorted(MODELS))
    parser.add_argument("--tasks", default="17,26", help="indices into the model's graph_tasks")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--trials", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    tasks = graph_tasks(from_onnx(MODELS[args.model]()), TARGET)
    for index in (int(t) for t in args.tasks.split(",")):
        task = tasks[index]
        func = task.mod["main"]
        defaults = default_schedule_variants(task.mod, TARGET)
        ratios = []
        for seed in (int(s) for s in args.seeds.split(",")):
            with tempfile.TemporaryDirectory() as work_dir:
                db = search.tune_tir(task.mod, TARGET, work_dir, max_trials_global=args.trials, num_trials_per_iter=16,
                                     seed=seed, baselines=defaults, progress=False, num_threads=1,
                                     strategy_config={"population_size": 48})
                default, searched = best_programs(db, task.mod, defaults)
            if searched is None:
                print(f"{task.name} seed {seed}: every valid program was a default schedule", flush=True)
                continue
            median = paired({"default": default, "searched": searched}, func, args.rounds)
            ratios.append(median["searched"] / median["default"])
            print(f"{task.name} seed {seed}: default {median['default'] * 1e3:.4f} ms, searched "
                  f"{median['searched'] * 1e3:.4f} ms, searched / default {ratios[-1]:.2f}", flush=True)
        if ratios:
            print(f"{task.name}, {args.trials} trials: searched / default over {len(ratios)} seeds "
                  f"{np.mean(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})", flush=True)


if __name__ == "__main__":
    main()
