"""The ``tuned`` schedule of an experiment: run the search (``search.tune_tir``) on the workload and
replay the best program it measured (with the experiment's inputs: the fastest of its best few and the
seeds, timed again in this process, ``experiments.final_pick``).

The Hydra groups ``search/`` (strategy, trial budget) and ``cost_model/`` choose the components; the
database, artefacts and report go to ``<tuning_dir>/<experiment>/<target>/<search>-<cost model>-seed<N>``
so a run killed midway resumes where it stopped.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Mapping

from tensorize.graph.build import default_schedule_variants

from .final_pick import DEFAULT_FINAL_CANDIDATES, fastest_here

log = logging.getLogger(__name__)

__all__ = ["search_settings", "search_group_file", "tune_workload", "tuning_work_dir"]

_CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs")


def search_settings(cfg: Mapping[str, Any]) -> dict:
    """The composed config's search choices as ``search.tune_tir`` keywords: ``strategy`` (the ``search/``
    group's name), ``strategy_config`` (its parameters), ``space_config`` (the group's ``space``: how fresh
    samples are drawn), ``cost_model`` and ``seed``. With ``cost_model.warm_start`` (the ``cost_model.npz`` an
    earlier run left in its tuning folder) ``cost_model`` is that saved model, which must be of the group's kind."""
    srch, cm = cfg.get("search", {}) or {}, cfg.get("cost_model", {}) or {}
    cost_model = cm.get("name", "lgbm_rank")
    if cm.get("warm_start"):
        from search.cost_model import load_cost_model

        model = load_cost_model(cm["warm_start"])
        if model.registered_name != cost_model:
            raise ValueError(f"cost_model.warm_start {cm['warm_start']} holds a {model.registered_name} model but "
                             f"the cost_model group is {cost_model}; choose cost_model={model.registered_name}")
        cost_model = model
    return {"strategy": srch.get("name", "evolutionary"), "strategy_config": dict(srch.get("strategy", {}) or {}),
            "space_config": dict(srch.get("space", {}) or {}), "cost_model": cost_model,
            "seed": int(cfg.get("seed", 0))}


def search_group_file(name: str = "evolutionary") -> dict:
    """The ``strategy`` parameters of ``configs/search/<name>.yaml``, for scripts that run without Hydra."""
    import yaml

    with open(os.path.join(_CONFIGS, "search", f"{name}.yaml")) as f:
        return dict(yaml.safe_load(f)["strategy"] or {})


def tuning_work_dir(cfg: Mapping[str, Any], cwd: str) -> str:
    """Where the tuning run of this configuration keeps its database and artefacts."""
    exp, tgt = cfg["experiment"], cfg["target"]
    srch, cm = cfg.get("search", {}), cfg.get("cost_model", {})
    name = f"{srch.get('name', 'evolutionary')}-{cm.get('name', 'lgbm_rank')}-seed{int(cfg.get('seed', 0))}"
    return os.path.join(cwd, cfg.get("tuning_dir", "tuning"), exp["name"], tgt.get("name", "target"), name)


def tune_workload(mod, target, cfg: Mapping[str, Any], cwd: str, on_trial=None, progress: bool = True,
                  final_check: tuple | None = None):
    """Tune ``mod`` for ``target`` as ``cfg`` says; return ``(schedule, report, work_dir)``.

    On a CPU target the search first measures the graph layer's default schedules of the workload
    (``tensorize.graph.build.default_schedule_variants``), so its result is never worse than the untuned
    kernel a model would run; ``+search.seed_default_schedules=false`` leaves them out. With
    ``final_check`` (``(inputs, expected output)``) the search's best ``search.final_candidates`` programs
    (default 4; 1 keeps the search's best as it is) and the seeds are timed again side by side in this
    process and the fastest is returned (``experiments.final_pick``).

    Raises ``RuntimeError`` when no measured program was valid (the error counts say why).
    """
    import search
    from search.database import trace_key
    from search.strategy import STRATEGIES

    srch, settings = dict(cfg.get("search", {})), search_settings(cfg)
    work_dir = tuning_work_dir(cfg, cwd)
    runner = dict(cfg.get("runner", {}))
    measure = runner.get("measure", "local")
    runner_config = dict(runner.get("measure_config", {}) or {})
    builder_config = {}
    strategy = STRATEGIES.create(settings["strategy"], **settings["strategy_config"])
    ray_options = {"address": runner.get("address"), "num_cpus": int(runner.get("num_cpus", 2))}
    if measure == "ray":  # runner=ray: builds and runs as Ray tasks, on runner.address or an embedded Ray
        runner_config.update(ray_options)
        builder_config.update(ray_options)
        if runner.get("emulation"):  # how arm64 nodes that are not ARM machines run AArch64 code (qemu)
            runner_config["emulation"] = dict(runner["emulation"])
    if runner.get("replay", "local") == "ray":  # sketch sampling and scoring's replays as Ray tasks too
        strategy.replay_backend, strategy.replay_options = "ray", ray_options
    baselines = default_schedule_variants(mod, target) if srch.get("seed_default_schedules", True) else []
    db = search.tune_tir(
        mod, target, work_dir, baselines=baselines,
        max_trials_global=int(srch.get("trials", 64)),
        num_trials_per_iter=int(srch.get("trials_per_iter", 16)),
        strategy=strategy,
        cost_model=settings["cost_model"], seed=settings["seed"], space_config=settings["space_config"],
        builder=measure if measure == "ray" else "local", builder_config=builder_config or None,
        runner=measure, runner_config=runner_config,
        progress=progress, on_trial=on_trial)
    report = db.tuning_report
    sch = search.compile_tir(db, mod, target)
    if sch is None:
        raise RuntimeError(f"the search measured no valid program in {report.trials} trials (failures: "
                           f"{report.failed}, invalid samples: {report.invalid_samples}); see {work_dir}")
    k = int(srch.get("final_candidates", DEFAULT_FINAL_CANDIDATES))
    if final_check is not None and k > 1:
        contenders = search.compile_tir_top_k(db, mod, target, k)
        known = {trace_key(c.trace.as_json()) for c in contenders}
        # the seeds compete too: one the runner timed a few percent slow may be the fastest here
        contenders += [b for b in baselines if trace_key(b.trace.as_json()) not in known]
        if len(contenders) > 1:
            best, _ = fastest_here(contenders, *final_check, target, number=int(runner.get("number", 10)),
                                   repeat=int(runner.get("repeat", 5)),
                                   min_repeat_ms=float(runner.get("min_repeat_ms", 0)))
            sch = contenders[best]
    log.info("tuned: %d trials, best %.4f ms, wall %.1f s (search %.1f s, build %.1f s, run %.1f s)", report.trials,
             report.best_secs * 1e3, report.seconds["total"], report.seconds["search"], report.seconds["build"],
             report.seconds["run"])
    return sch, report, work_dir
