"""The experiment driver: build a workload, apply each configured schedule, check the output against
numpy, time it next to the baselines in the same process, record everything in MLflow, and append
a row per schedule to the results table.

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

from .baselines import numpy_baseline, time_callable, torch_baseline, torch_output_nhwc
from .report import append_results
from .isolated_build import build_isolated
from .schedules import apply_schedule
from .tuning import tune_workload
from .tracking import Tracker, flatten
from .workloads import get_workload

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


def run_experiment(cfg: Mapping[str, Any], original_cwd: str | None = None) -> list[dict[str, Any]]:
    """Run one experiment as configured; return one result row per schedule."""
    exp, tgt, trk, run = cfg["experiment"], cfg["target"], cfg["tracking"], cfg["runner"]
    cwd = original_cwd or os.getcwd()
    rng = np.random.default_rng(int(run.get("seed", 0)))

    workload = get_workload(exp["workload"], exp.get("shape"), exp.get("dtype", "float32"))
    func = te.create_prim_func(workload.args)
    mod = tvm.IRModule({"main": func})
    target = tvm.target.Target(tgt["target"])
    dev = tvm.cpu(0)
    inputs = workload.random_inputs(rng)
    expected = workload.reference(*inputs)

    # Baselines, measured once per experiment in this process.
    number, repeat = int(run.get("number", 10)), int(run.get("repeat", 5))
    baseline_ms: dict[str, float] = {}
    np_times = time_callable(numpy_baseline(workload, inputs), number=max(1, number // 5), repeat=repeat)
    baseline_ms["numpy"] = 1e3 * float(np.median(np_times))
    if "torch" in exp.get("baselines", ["numpy", "torch"]):
        torch_run = torch_baseline(workload, inputs, threads=run.get("threads"))
        if torch_run is not None:
            got = torch_output_nhwc(torch_run())
            if not np.allclose(got, expected, rtol=1e-3, atol=1e-3):
                raise AssertionError("the PyTorch baseline disagrees with the numpy reference: check the workload")
            baseline_ms["torch"] = 1e3 * float(np.median(time_callable(torch_run, number=number, repeat=repeat)))

    uri = trk.get("uri", "sqlite:///mlflow.db")
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        uri = "sqlite:///" + os.path.join(cwd, uri[len("sqlite:///"):])
    tracker = Tracker(bool(trk.get("enabled", True)), uri, trk.get("experiment_name", exp["name"]))

    rows = []
    schedules = list(exp.get("schedules", ["default"]))
    progress = tqdm(schedules, desc=f"{exp['name']} [{tgt['name']}]", unit="schedule", disable=not run.get("progress", True))
    for schedule_name in progress:
        progress.set_postfix_str(f"{schedule_name}: schedule")
        tuning = None
        if schedule_name == "tuned":
            progress.set_postfix_str("tuned: search")
            sch, tuning, tuning_dir = tune_workload(mod, target, cfg, cwd, progress=run.get("progress", True))
        else:
            sch = tvm.tir.Schedule(mod)
            apply_schedule(workload.name, schedule_name, sch, vector_lanes=_target_vector_lanes(target))

        progress.set_postfix_str(f"{schedule_name}: build")
        start = time.perf_counter()
        rt_mod, llvm_ir = build_isolated(sch.mod, target, os.path.join(cwd, cfg.get("tuning_dir", "tuning"),
                                                                       "builds", exp["name"]))
        compile_s = time.perf_counter() - start

        progress.set_postfix_str(f"{schedule_name}: check")
        args = [tvm.nd.array(x, dev) for x in inputs]
        out = tvm.nd.array(np.zeros(workload.output_shape(), workload.output_dtype), dev)
        rt_mod(*args, out)
        max_err = float(np.max(np.abs(out.numpy() - expected)))
        if not np.allclose(out.numpy(), expected, rtol=1e-4, atol=1e-4):
            raise AssertionError(f"schedule {schedule_name!r} gives a wrong result (max abs error {max_err:g})")

        progress.set_postfix_str(f"{schedule_name}: time")
        timer = rt_mod.time_evaluator(rt_mod.entry_name, dev, number=number, repeat=repeat)
        result = timer(*args, out)
        latency_ms = 1e3 * float(result.median)
        gflops = workload.flops / (latency_ms * 1e-3) / 1e9

        row = {
            "time": _dt.datetime.now().isoformat(timespec="seconds"),
            "experiment": exp["name"], "workload": workload.name, "shape": workload.shape_name,
            "dtype": exp.get("dtype", "float32"), "schedule": schedule_name, "target": str(target),
            "latency_ms": round(latency_ms, 4), "gflops": float(f"{gflops:.4g}"), "compile_s": round(compile_s, 3),
            "max_abs_err": max_err,
        }
        if tuning is not None:
            row.update({"trials": tuning.trials, "valid_trials": tuning.valid,
                        "tuning_s": round(tuning.seconds["total"], 1),
                        "search_s": round(tuning.seconds["search"], 1), "build_s": round(tuning.seconds["build"], 1),
                        "run_s": round(tuning.seconds["run"], 1), "trial_reaching_90": tuning.trial_reaching(0.9)})
        for name, ms in baseline_ms.items():
            row[f"{name}_ms"] = round(ms, 4)
            row[f"speedup_vs_{name}"] = round(ms / latency_ms, 3)
        rows.append(row)
        log.info("%s/%s: %.3f ms, %.1f GFLOPS, %s", exp["name"], schedule_name, latency_ms, gflops,
                 ", ".join(f"{row[f'speedup_vs_{n}']:.2f}x vs {n}" for n in baseline_ms))

        params = {**flatten({"experiment": dict(exp), "target": dict(tgt), "runner": dict(run),
                             **({"search": dict(cfg.get("search", {})), "cost_model": dict(cfg.get("cost_model", {})),
                                 "seed": cfg.get("seed", 0)} if tuning is not None else {})}),
                  "schedule": schedule_name}
        with tracker.run(f"{exp['name']}-{schedule_name}", params) as t:
            t.log_metrics({k: v for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
            t.set_tags({"workload": workload.name, "schedule": schedule_name, "target": str(target)})
            t.log_text(sch.mod.script(), "scheduled.py")
            t.log_text("\n".join(sch.trace.as_python()), "trace.py")
            t.log_text(llvm_ir, "kernel.ll")
            if tuning is not None:
                for step, best in enumerate(tuning.curve, start=1):
                    if best != float("inf"):
                        t.log_metrics({"best_latency_ms": best * 1e3,
                                       "best_gflops": workload.flops / best / 1e9}, step=step)
                t.log_text(sch.trace.as_json_str(), "best_trace.json")
                for name in ("database.jsonl", "tuning_report.json"):
                    path = os.path.join(tuning_dir, name)
                    if os.path.exists(path):
                        t.log_artifact(path)
            row["mlflow_run_id"] = t.run_id or ""

    results_dir = os.path.join(cwd, cfg.get("results_dir", "results"))
    table = append_results(results_dir, exp["name"], rows)
    log.info("results appended to %s", table)
    return rows
