"""One experiment job as one MLflow run: parameters from the composed config; the main schedule's final
metrics (the tuned one when the experiment tunes), each schedule's latency and GFLOPS, the baselines and
speedups; best-so-far latency and GFLOPS per trial (``step`` = trial number); the best trace, its
TVMScript, LLVM IR, assembly, the tuning-curve plot and the tuning database as artifacts.

Runs are tagged with what the comparison groups by (``experiment``, ``workload``, ``target``,
``cost_model``, ``seed``) and ``tensorize.kind=job``.

>>> job_name({"experiment": {"name": "gmm"}, "target": {"name": "host"}, "cost_model": {"name": "random"},
...           "seed": 1}, "GMM")
'gmm/GMM/host/random/seed1'
"""
from __future__ import annotations

import logging
import math
import os
import tempfile
from typing import Any, Mapping

from .plots import tuning_curve_png
from .tracking import KIND_TAG, Tracker, flatten

log = logging.getLogger(__name__)

__all__ = ["log_job", "job_name", "main_schedule"]

_FINAL = ("latency_ms", "gflops", "pct_peak", "compile_s", "max_abs_err", "trials", "valid_trials", "tuning_s",
          "search_s", "build_s", "run_s", "trial_reaching_90")


def job_name(cfg: Mapping[str, Any], workload: str) -> str:
    """``experiment/workload/target/cost_model/seedN``: the run's name."""
    return (f"{cfg['experiment']['name']}/{workload}/{cfg['target'].get('name', 'target')}/"
            f"{cfg.get('cost_model', {}).get('name', 'none')}/seed{int(cfg.get('seed', 0))}")


def main_schedule(rows) -> dict:
    """The row whose metrics are the run's headline: the tuned schedule if there is one, else the last."""
    return next((r for r in rows if r["schedule"] == "tuned"), rows[-1])


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def log_job(tracker: Tracker, cfg: Mapping[str, Any], workload, rows, programs: Mapping[str, dict],
            sweep: str | None) -> str | None:
    """Record the job in MLflow (a no-op when tracking is off); returns the run id."""
    main = main_schedule(rows)
    cfg_params = {k: v for k, v in cfg.items() if k not in ("tracking", "hydra")}
    params = {**flatten(cfg_params), "schedule": main["schedule"], "workload.shape": workload.shape_name}
    tags = {KIND_TAG: "job", "experiment": cfg["experiment"]["name"], "workload": workload.name,
            "shape": workload.shape_name, "target": cfg["target"].get("name", "target"),
            "target_string": main["target"], "cost_model": cfg.get("cost_model", {}).get("name", "none"),
            "seed": str(int(cfg.get("seed", 0))), "schedule": main["schedule"]}
    with tracker.run(job_name(cfg, workload.name), params, sweep=sweep, tags=tags) as t:
        metrics = {k: main[k] for k in _FINAL if _number(main.get(k))}
        metrics.update({k: v for k, v in main.items() if (k.endswith("_ms") or k.startswith("speedup_vs_"))
                        and _number(v)})
        for row in rows:
            metrics[f"{row['schedule']}.latency_ms"] = row["latency_ms"]
            metrics[f"{row['schedule']}.gflops"] = row["gflops"]
        t.log_metrics(metrics)
        prog = programs[main["schedule"]]
        t.log_text(prog["sch"].mod.script(), "scheduled.py")
        t.log_text("\n".join(prog["sch"].trace.as_python()), "trace.py")
        t.log_text(prog["sch"].trace.as_json_str(), "best_trace.json")
        t.log_text(prog["llvm_ir"], "kernel.ll")
        t.log_text(prog["assembly"], "kernel.s")
        tuning = prog["tuning"]
        if tuning is not None:
            _log_curve(t, tuning.curve, workload)
            for name in ("database.jsonl", "tuning_report.json"):
                path = os.path.join(prog["tuning_dir"], name)
                if os.path.exists(path):
                    t.log_artifact(path)
        return t.run_id


def _log_curve(t: Tracker, curve, workload) -> None:
    """Per-trial best-so-far latency and GFLOPS (step = trial number) and the curve's plot."""
    finite = [best if math.isfinite(best) else None for best in curve]
    t.log_series({"best_latency_ms": [None if b is None else b * 1e3 for b in finite],
                  "best_gflops": [None if b is None else workload.flops / b / 1e9 for b in finite]})
    gflops = [0.0 if b is None else workload.flops / b / 1e9 for b in finite]
    if not t.enabled or not gflops:
        return
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "tuning_curve.png")
        tuning_curve_png({"this run": [gflops]}, path, f"{workload.name} ({workload.shape_name})")
        t.log_artifact(path)
