"""The experiment driver: build a workload, apply each configured schedule, check the output against
numpy, time it next to the baselines in the same process, record the job in MLflow (one run per
experiment, workload, target, cost model and seed, nested under its sweep's parent run), and append a
row per schedule to the results table.

Example (``cfg`` composed by Hydra from ``configs/``)::

    from experiments.driver import run_experiment
    run_experiment(cfg)
"""
from __future__ import annotations

import datetime as _dt
import logging
import os
import time
from typing import Any, Mapping

import numpy as np
from tqdm import tqdm

import tensorize as tvm
from tensorize import te

from .baseline_set import baseline_timers, time_side_by_side
from .final_pick import kernel_timer, run_and_check
from .isolated_build import build_isolated
from .job_record import log_job
from .report import append_results
from .schedules import apply_schedule
from .targets import resolve_target
from .tuning import tune_workload
from .tracking import Tracker
from .workloads import get_workload
from search import split_layout_rewrite

log = logging.getLogger(__name__)


def _target_vector_lanes(target) -> int:
    """fp32 lanes of the target's widest vector unit (16 with AVX-512, 8 with AVX2, 4 with NEON)."""
    has = getattr(target, "has_feature", None)
    if has is not None:
        if has("avx512f"):
            return 16
        if has("avx2") or has("avx"):
            return 8
    return 4


def workload_choice(cfg: Mapping[str, Any]) -> tuple[str, str | None, str]:
    """``(name, shape, dtype)``: the ``workload/`` group when one is chosen, else the experiment's own keys."""
    exp, wl = cfg["experiment"], cfg.get("workload") or {}
    if wl.get("name"):
        return wl["name"], None if wl.get("shape") is None else str(wl["shape"]), wl.get("dtype", "float32")
    return exp["workload"], exp.get("shape"), exp.get("dtype", "float32")


def run_experiment(cfg: Mapping[str, Any], original_cwd: str | None = None, sweep: str | None = None
                   ) -> list[dict[str, Any]]:
    """Run one experiment as configured; return one result row per schedule.

    ``sweep`` (an id shared by the jobs of one Hydra sweep) nests the job's MLflow run under the sweep's
    parent run.
    """
    exp, tgt, trk, run = cfg["experiment"], cfg["target"], cfg["tracking"], cfg["runner"]
    cwd = original_cwd or os.getcwd()
    rng = np.random.default_rng(int(run.get("seed", 0)))

    wl_name, shape, dtype = workload_choice(cfg)
    workload = get_workload(wl_name, shape, dtype)
    target = resolve_target(tgt)
    func = te.create_prim_func(workload.args)
    if workload.weight_indices():  # constant weights: a schedule may pre-pack them once (timed without)
        func = func.with_attr("layout_free_buffers", workload.weight_indices())
    mod = tvm.IRModule({"main": func})
    inputs = workload.random_inputs(rng)
    expected = workload.reference(*inputs)

    # Baselines, checked once; timed below in alternating rounds with the schedules.
    number, repeat = int(run.get("number", 10)), int(run.get("repeat", 5))
    min_repeat_ms = float(run.get("min_repeat_ms", 0))
    tuning_root = os.path.join(cwd, cfg.get("tuning_dir", "tuning"))
    baselines = baseline_timers(
        workload, inputs, expected, list(exp.get("baselines", ["numpy", "torch"])), number, repeat,
        threads=run.get("threads"), min_repeat_ms=min_repeat_ms,
        tvm_options={"trials": int(cfg.get("search", {}).get("trials", 64)), "mcpu": target.mcpu or "native",
                     "work_dir": os.path.join(tuning_root, "tvm", exp["name"], f"{workload.name}-{workload.shape_name}")})

    uri = trk.get("uri", "sqlite:///mlflow.db")
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        uri = "sqlite:///" + os.path.join(cwd, uri[len("sqlite:///"):])
    tracker = Tracker(bool(trk.get("enabled", True)), uri, trk.get("experiment_name", exp["name"]))

    rows, programs, built = [], {}, {}
    schedules = list(exp.get("schedules", ["default"]))
    progress = tqdm(schedules, desc=f"{exp['name']} [{tgt['name']}]", unit="schedule", disable=not run.get("progress", True))
    for schedule_name in progress:
        progress.set_postfix_str(f"{schedule_name}: schedule")
        tuning, tuning_dir = None, None
        if schedule_name == "tuned":
            progress.set_postfix_str("tuned: search")
            sch, tuning, tuning_dir = tune_workload(mod, target, cfg, cwd, progress=run.get("progress", True),
                                                    final_check=(inputs, expected))
        else:
            sch = tvm.tir.Schedule(mod)
            apply_schedule(workload.name, schedule_name, sch, vector_lanes=_target_vector_lanes(target))

        progress.set_postfix_str(f"{schedule_name}: build")
        start = time.perf_counter()
        # the weights' packing (a schedule's layout rewrite of a constant) moves out of the timed kernel and
        # runs once here, as the search's runner does
        kernel_mod, _ = split_layout_rewrite(sch.mod)
        rt_mod, llvm_ir, assembly = build_isolated(kernel_mod, target, os.path.join(tuning_root, "builds", exp["name"]),
                                                   with_assembly=True)
        compile_s = time.perf_counter() - start

        progress.set_postfix_str(f"{schedule_name}: check")
        ok, max_err = run_and_check(rt_mod, inputs, expected)
        if not ok:
            raise AssertionError(f"schedule {schedule_name!r} gives a wrong result (max abs error {max_err:g})")

        timer = kernel_timer(rt_mod, inputs, expected, number, repeat, min_repeat_ms)  # fresh arrays per block
        built[schedule_name] = {"sch": sch, "tuning": tuning, "tuning_dir": tuning_dir, "compile_s": compile_s,
                                "max_err": max_err, "llvm_ir": llvm_ir, "assembly": assembly,
                                "timer": lambda timer=timer: 1e3 * timer()}

    # Our kernels and the baselines in alternating rounds: a slow spell of the machine falls on all alike.
    progress.set_postfix_str("timing side by side")
    timers = {**{("baseline", n): t for n, t in baselines.items()},
              **{("schedule", n): b["timer"] for n, b in built.items()}}
    medians = time_side_by_side(timers, rounds=int(run.get("rounds", 3)), once=[("baseline", "numpy"),
                                                                              ("baseline", "tvm")])
    baseline_ms = {n: medians[("baseline", n)] for n in baselines}
    for schedule_name, b in built.items():
        tuning, compile_s, max_err = b["tuning"], b["compile_s"], b["max_err"]
        latency_ms = medians[("schedule", schedule_name)]
        gflops = workload.flops / (latency_ms * 1e-3) / 1e9

        row = {
            "time": _dt.datetime.now().isoformat(timespec="seconds"),
            "experiment": exp["name"], "workload": workload.name, "shape": workload.shape_name,
            "dtype": dtype, "schedule": schedule_name, "target": str(target),
            "latency_ms": round(latency_ms, 4), "gflops": float(f"{gflops:.4g}"), "compile_s": round(compile_s, 3),
            "max_abs_err": max_err,
        }
        if tgt.get("peak_gflops"):
            row["pct_peak"] = round(100.0 * gflops / float(tgt["peak_gflops"]), 2)
        if tuning is not None:
            row.update({"trials": tuning.trials, "valid_trials": tuning.valid,
                        "tuning_s": round(tuning.seconds["total"], 1),
                        "search_s": round(tuning.seconds["search"], 1), "build_s": round(tuning.seconds["build"], 1),
                        "run_s": round(tuning.seconds["run"], 1), "trial_reaching_90": tuning.trial_reaching(0.9)})
        for name, ms in baseline_ms.items():
            row[f"{name}_ms"] = round(ms, 4)
            row[f"speedup_vs_{name}"] = round(ms / latency_ms, 3)
        rows.append(row)
        programs[schedule_name] = {key: b[key] for key in ("sch", "llvm_ir", "assembly", "tuning", "tuning_dir")}
        log.info("%s/%s: %.3f ms, %.1f GFLOPS, %s", exp["name"], schedule_name, latency_ms, gflops,
                 ", ".join(f"{row[f'speedup_vs_{n}']:.2f}x vs {n}" for n in baseline_ms))

    run_id = log_job(tracker, cfg, workload, rows, programs, sweep)
    for row in rows:
        row["mlflow_run_id"] = run_id or ""
    results_dir = os.path.join(cwd, cfg.get("results_dir", "results"))
    table = append_results(results_dir, exp["name"], rows)
    log.info("results appended to %s", table)
    return rows
