"""The entry points: ``tune_tir`` searches schedules of a program and records every measurement in
a database; ``compile_tir`` replays the best one.

>>> import search                                                               # doctest: +SKIP
>>> db = search.tune_tir(mod, "llvm -mcpu=native", "work", max_trials_global=64)  # doctest: +SKIP
>>> sch = search.compile_tir(db, mod, "llvm -mcpu=native")                      # doctest: +SKIP
>>> lib = tvm.build(sch.mod, target="llvm -mcpu=native")                        # doctest: +SKIP

A tuning round: the strategy proposes ``num_trials_per_iter`` programs never measured; the builder
compiles them in worker processes; the runner times them in a separate process and checks their
output against the untransformed program's; every result (failures with their error) is appended
to the database; the cost model retrains. A run killed at any moment resumes from the database:
what was measured counts towards the budget and is not measured again.
"""
from __future__ import annotations

import json
import logging
import math
import os
import time
from dataclasses import asdict, dataclass, field

from tensorize.schedule import Schedule
from tensorize.schedule.trace import Trace
from tensorize.ir.structural import structural_hash
from tensorize.target import Target

from .context import TuneContext, as_module, check_intrinsics
from .database import Database, TuningRecord, target_key, trace_key
from .feature import FEATURES
from .flops import estimate_flops
from .measure import BUILDERS, RUNNERS, MeasureCandidate
from .postproc import default_postprocs
from .progress import TuningProgress
from .space_generator import PostOrderApply, replay_candidate
from .strategy import STRATEGIES, SearchSpace

logger = logging.getLogger(__name__)

__all__ = ["tune_tir", "compile_tir", "TuningReport"]


@dataclass
class TuningReport:
    """What a ``tune_tir`` run did: trials, the best time, the tuning curve and where the wall time went."""

    workload: str
    target: str
    flops: float
    trials: int = 0
    valid: int = 0
    failed: dict = field(default_factory=dict)        # error kind -> count (build, run, wrong_output, ...)
    invalid_samples: dict = field(default_factory=dict)  # reason -> count (dropped before measurement)
    best_secs: float = math.inf
    curve: list = field(default_factory=list)          # per trial: best seconds so far
    remeasured: list = field(default_factory=list)     # (trace index in curve order, seconds) of the top few
    seconds: dict = field(default_factory=lambda: {"search": 0.0, "build": 0.0, "run": 0.0, "total": 0.0})
    resumed_trials: int = 0

    @property
    def best_gflops(self) -> float:
        """The throughput of the best candidate (0 when none ran)."""
        return self.flops / self.best_secs / 1e9 if math.isfinite(self.best_secs) and self.best_secs > 0 else 0.0

    def trial_reaching(self, fraction: float = 0.9) -> int | None:
        """The first trial (1-based) whose best-so-far throughput reached ``fraction`` of the final one."""
        if not self.curve or not math.isfinite(self.best_secs):
            return None
        for i, secs in enumerate(self.curve):
            if math.isfinite(secs) and self.best_secs / secs >= fraction:
                return i + 1
        return None

    def as_json(self) -> dict:
        """The report as a JSON-ready dict."""
        out = asdict(self)
        out["best_gflops"] = self.best_gflops
        out["trial_reaching_90"] = self.trial_reaching(0.9)
        return json.loads(json.dumps(out, default=str).replace("Infinity", "null"))


def _components(ctx, strategy, cost_model, feature_extractor, builder, runner, space, strategy_config,
                builder_config, runner_config, work_dir):
    if getattr(ctx.target.kind, "name", "") in ("cuda", "nvptx"):  # CUDA C is built and timed by the GPU pair
        builder, runner = ("cuda" if builder == "local" else builder), ("cuda" if runner == "local" else runner)
    strategy = STRATEGIES.create(strategy, **(strategy_config or {}))
    model = None
    if cost_model is not None:
        from .cost_model import COST_MODELS, CostModel

        # an instance is used as it is: shared with other tasks, or loaded with an earlier run's records
        model = cost_model if isinstance(cost_model, CostModel) else COST_MODELS.create(cost_model)
    features = FEATURES.create(feature_extractor) if feature_extractor is not None else None
    builder = BUILDERS.create(builder, **{"work_dir": work_dir, **({"timeout_s": 30.0} if builder == "local" else {}),
                                          **(builder_config or {})})
    runner = RUNNERS.create(runner, **{"work_dir": work_dir, **(runner_config or {})})
    space = space if space is not None else PostOrderApply()
    return strategy, model, features, builder, runner, space


_SAMPLING_KEYS = ("two_level_share",)


def _sampling(space_config: dict | None) -> dict:
    """The checked ``space_config`` (``resample_provider``'s keywords)."""
    config = dict(space_config or {})
    unknown = sorted(set(config) - set(_SAMPLING_KEYS))
    if unknown:
        raise ValueError(f"unknown space_config key(s) {unknown}; known: {', '.join(_SAMPLING_KEYS)}")
    share = config.get("two_level_share")
    if share is not None and not 0 <= float(share) <= 1:
        raise ValueError(f"space_config two_level_share must be in [0, 1], got {share}")
    return config


def _mutators(ctx, strategy) -> dict:
    """The default mutators with their probabilities (only strategies that mutate need them)."""
    if not getattr(strategy, "uses_mutators", False):
        return {}
    from .mutator import default_mutators

    return default_mutators(ctx)


def _resume(ctx, db, workload, target, model, features, report):
    """(key, mean seconds, trace) of every program the database already holds for this task; retrain the model."""
    done = []
    for rec in db.records_of(workload, target):
        try:
            trace = rec.trace()
            sch = Schedule(ctx.mod)
            trace.apply_to_schedule(sch)
        except Exception as err:  # noqa: BLE001 - a record that no longer replays is skipped, not fatal
            logger.warning("skipping a database record that does not replay: %s", err)
            continue
        done.append((structural_hash(sch.mod), rec.mean_run_secs, sch.trace, sch))
    # a shared model (tune_graph's next round of this task) already holds them: nothing to featurise again;
    # a loaded model may hold other records of this workload: the database's are the truth
    if done and model is not None and features is not None and model.records_of(ctx) != len(done):
        model.forget(ctx)
        model.update(ctx, features.extract(ctx, [d[3] for d in done]), [d[1] for d in done])
    for _, secs, _, _ in done:
        report.trials += 1
        report.valid += math.isfinite(secs)
        report.best_secs = min(report.best_secs, secs)
        report.curve.append(report.best_secs)
    report.resumed_trials = len(done)
    return [(k, s, t) for k, s, t, _ in done]


def tune_tir(mod, target, work_dir: str, max_trials_global: int = 64, num_trials_per_iter: int = 16, *,
             cost_model: str | None = "lgbm_rank", strategy: str = "evolutionary", seed: int = 0,
             builder: str = "local", runner: str = "local", feature_extractor: str | None = "per_store",
             space=None, strategy_config: dict | None = None, builder_config: dict | None = None,
             runner_config: dict | None = None, num_threads: int | None = None, remeasure_top_k: int = 3,
             task_name: str = "main", progress: bool = True, database: Database | None = None,
             on_trial=None, baselines=(), intrinsics=None, space_config: dict | None = None,
             save_cost_model: bool = True) -> Database:
    """Search schedules of ``mod`` for ``target``; return the database of every measurement.

    Parameters
    ----------
    mod : IRModule or PrimFunc
        The program to tune (a single-function module).
    target : str or Target
        Where it runs, e.g. ``"llvm -mcpu=native"``.
    work_dir : str
        Folder for the database (``database.jsonl``), build artefacts, the reference outputs and
        ``tuning_report.json``. Running again with the same folder resumes.
    max_trials_global : int
        Programs to measure in all (including those a resumed database already holds).
    num_trials_per_iter : int
        Programs measured per round (the cost model retrains after each round).
    cost_model, strategy, builder, runner, feature_extractor : str
        Component names (``search.cost_model.COST_MODELS``, ``search.strategy.STRATEGIES``, ...); for a
        CUDA target ``"local"`` builder and runner mean the ``"cuda"`` ones. ``cost_model`` may also be a
        ``CostModel`` instance, which keeps its records of other workloads and learns this one's too: one model
        shared by several tasks (``tune_graph``), or an earlier run's (``search.cost_model.load_cost_model``).
    seed : int
        The random seed: the same seed and the same measured times give the same programs.
    strategy_config, builder_config, runner_config : dict
        Keyword arguments of the components (e.g. ``{"population_size": 128}``).
    space_config : dict, optional
        How fresh samples of the space are drawn: ``two_level_share``, the share of CPU draws that keep only the
        outermost and register tile levels of a block with a short reduction (default
        ``space_generator.cpu_tiles.TWO_LEVEL_SHARE``; 0 draws every tiling uniformly).
    remeasure_top_k : int
        The best few programs are measured again at the end; their second times are recorded too.
    save_cost_model : bool
        Write the cost model, with its records, to ``<work_dir>/cost_model.npz`` at the end (a later search can
        start from it).
    on_trial : callable
        ``on_trial(trial_index, best_seconds_so_far, record)`` after each measured program (for
        experiment trackers).
    baselines : sequence of Schedule
        Schedules of ``mod`` made some other way (e.g. a graph's default schedule), measured first as
        trials (once: a resumed database that holds their traces skips them), so the database's best
        is never worse than they are.
    intrinsics : sequence of str, optional
        The tensor intrinsics the space may use (default: every exact one the target supports,
        ``search.context.available_intrinsics``); a list restricts the space, or admits an intrinsic that is
        exact only for part of the input range (the ``_sat`` int8 dots, exact while int16 pair sums do not
        saturate) when the inputs are known to stay in it. The runner checks every candidate's outputs on the
        workload's inputs either way.

    Returns
    -------
    Database
        With ``db.tuning_report`` (a ``TuningReport``) attached.
    """
    start_all = time.perf_counter()
    target = target if isinstance(target, Target) else Target(target)
    os.makedirs(work_dir, exist_ok=True)
    mod = as_module(mod)
    ctx = TuneContext.create(mod, target, seed=seed, num_threads=num_threads, task_name=task_name,
                             intrinsics=None if intrinsics is None else check_intrinsics(intrinsics, target))
    db = database if database is not None else Database(os.path.join(work_dir, "database.jsonl"))
    workload = db.commit_workload(mod)
    tkey = target_key(target)
    strat, model, features, bld, run, space_gen = _components(
        ctx, strategy, cost_model, feature_extractor, builder, runner, space, strategy_config, builder_config,
        runner_config, work_dir)
    report = TuningReport(workload.key, tkey, estimate_flops(mod))

    t0 = time.perf_counter()
    sketches = space_gen.generate_design_space(ctx)
    space = SearchSpace(sketches, default_postprocs(ctx), _mutators(ctx, strat), replay_candidate,
                        sampling=_sampling(space_config))
    measured = _resume(ctx, db, workload, target, model, features, report)
    strat.pre_tuning(ctx, space, model, features, measured)
    report.seconds["search"] += time.perf_counter() - t0
    logger.info("task %s: %d sketches, %d trials already in the database", task_name, len(sketches), len(measured))

    try:
        seeds = _measure_baselines(ctx, target, db, workload, tkey, bld, run, report, baselines, max_trials_global,
                                   model, features)
        _tune_loop(ctx, target, db, workload, tkey, strat, model, features, bld, run, report, max_trials_global,
                   num_trials_per_iter, remeasure_top_k, progress, on_trial, task_name, seeds)
    finally:
        strat.close()
        for executor in (bld, run):
            close = getattr(executor, "close", None)
            if close is not None:
                close()
    if save_cost_model and model is not None:
        model.save(os.path.join(work_dir, "cost_model.npz"))
    report.seconds["total"] = time.perf_counter() - start_all
    report.invalid_samples = strat.invalid_counts
    with open(os.path.join(work_dir, "tuning_report.json"), "w") as f:
        json.dump(report.as_json(), f, indent=1)
    db.tuning_report = report
    logger.info("task %s: %d trials (%d valid), best %.4f ms = %.1f GFLOPS; wall %.1f s (search %.1f, build %.1f, "
                "run %.1f)", task_name, report.trials, report.valid, report.best_secs * 1e3, report.best_gflops,
                report.seconds["total"], report.seconds["search"], report.seconds["build"], report.seconds["run"])
    return db


def _build_run_record(ctx, target, db, workload, tkey, bld, run, report, mods_traces, on_trial=None) -> list:
    """Build and run ``(mod, trace_json)`` pairs, commit each result as a record and count it in ``report``
    (trials, valid, failures by kind, best so far, curve); returns ``(record, build)`` per pair."""
    t0 = time.perf_counter()
    builds = bld.build([MeasureCandidate(mod, trace) for mod, trace in mods_traces], target)
    report.seconds["build"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    results = run.run(ctx, builds)
    report.seconds["run"] += time.perf_counter() - t0
    out = []
    for (_, trace), res, build in zip(mods_traces, results, builds):
        record = TuningRecord(trace, workload, res.run_secs, str(target), target_key=tkey, error=res.error,
                              error_kind=res.error_kind)
        db.commit_tuning_record(record)
        report.trials += 1
        if math.isfinite(record.mean_run_secs):
            report.valid += 1
        else:
            report.failed[res.error_kind or "error"] = report.failed.get(res.error_kind or "error", 0) + 1
        report.best_secs = min(report.best_secs, record.mean_run_secs)
        report.curve.append(report.best_secs)
        if on_trial is not None:
            on_trial(report.trials, report.best_secs, record)
        out.append((record, build))
    return out


def _measure_baselines(ctx, target, db, workload, tkey, bld, run, report, baselines, max_trials_global,
                       model=None, features=None) -> list:
    """Measure the ``baselines`` schedules whose traces the database does not hold yet, as trials (the cost
    model learns from them too); returns ``(seconds, schedule, build)`` of the valid ones, which the final
    re-measurement ranks with the search's."""
    held = {r.trace_key for r in db.records_of(workload, target)}
    todo = [sch for sch in baselines if trace_key(sch.trace.as_json()) not in held]
    todo = todo[:max(0, max_trials_global - report.trials)]
    if todo:
        measured = _build_run_record(ctx, target, db, workload, tkey, bld, run, report,
                                     [(sch.mod, sch.trace.as_json()) for sch in todo])
        for record, _ in measured:
            logger.info("baseline schedule of %s: %.4f ms", workload.key[:8], record.mean_run_secs * 1e3)
        if model is not None and features is not None:
            model.update(ctx, features.extract(ctx, todo), [record.mean_run_secs for record, _ in measured])
        return [(record.mean_run_secs, sch, build) for sch, (record, build) in zip(todo, measured)
                if math.isfinite(record.mean_run_secs)]
    return []


def _tune_loop(ctx, target, db, workload, tkey, strat, model, features, bld, run, report, max_trials_global,
               num_trials_per_iter, remeasure_top_k, progress, on_trial, task_name, seeds=()) -> None:
    """The rounds: propose, build, run, record, learn; then re-measure the best few (``seeds``, the measured
    baselines, among them: the report's best is then what the database's best program reliably takes)."""
    bar = TuningProgress(max_trials_global, report, enabled=progress)
    measured_cands = list(seeds)
    while report.trials < max_trials_global:
        t0 = time.perf_counter()
        want = min(num_trials_per_iter, max_trials_global - report.trials)
        cands = strat.generate_measure_candidates(want)
        report.seconds["search"] += time.perf_counter() - t0
        if not cands:
            logger.warning("the search space of %s is exhausted after %d trials", task_name, report.trials)
            break
        measured = _build_run_record(ctx, target, db, workload, tkey, bld, run, report,
                                     [(c.sch.mod, c.trace.as_json()) for c in cands], on_trial)
        secs = [record.mean_run_secs for record, _ in measured]
        measured_cands += [(record.mean_run_secs, cand, build) for cand, (record, build) in zip(cands, measured)
                           if math.isfinite(record.mean_run_secs)]
        t0 = time.perf_counter()
        strat.notify_runner_results(cands, secs)
        if model is not None and features is not None:
            feats = [c.features for c in cands]
            if any(f is None for f in feats):
                feats = features.extract(ctx, [c.sch for c in cands])
            model.update(ctx, feats, secs)
        report.seconds["search"] += time.perf_counter() - t0
        report.invalid_samples = strat.invalid_counts
        bar.update_round()
    bar.close()

    _remeasure(ctx, target, run, db, workload, tkey, measured_cands, remeasure_top_k, report)


def _remeasure(ctx, target, runner, db, workload, tkey, measured, k, report) -> None:
    """Measure the best ``k`` programs of this run again and record the second times; the best is
    reported from the re-measurement (one lucky timing does not decide)."""
    if k <= 0 or not measured:
        return
    top = sorted(measured, key=lambda t: t[0])[:k]
    t0 = time.perf_counter()
    results = runner.run(ctx, [b for _, _, b in top])
    report.seconds["run"] += time.perf_counter() - t0
    best = math.inf
    for (first, cand, _), res in zip(top, results):
        record = TuningRecord(cand.trace.as_json(), workload, res.run_secs, str(target), target_key=tkey,
                              error=res.error, error_kind=res.error_kind)
        db.commit_tuning_record(record)
        # The slower of the two measurements counts: a program is as fast as it reliably is.
        secs = max(first, record.mean_run_secs)
        report.remeasured.append((first, record.mean_run_secs))
        best = min(best, secs)
    if math.isfinite(best):
        report.best_secs = best


def compile_tir(db: Database, mod, target) -> Schedule | None:
    """The best measured schedule of ``mod`` for ``target`` in ``db``, replayed; ``None`` when the
    database holds no valid measurement of it for that target.

    Records tuned for another target (another CPU or other features) are never used.
    """
    best = compile_tir_top_k(db, mod, target, 1)
    return best[0] if best else None


def compile_tir_top_k(db: Database, mod, target, k: int) -> list[Schedule]:
    """The ``k`` fastest distinct programs of ``mod`` for ``target`` in ``db``, replayed, fastest first
    (a program measured more than once counts once, at its median record: ``Database.get_top_k``); what a
    caller times again in its own process before it picks one (the experiments' ``search.final_candidates``).

    Records tuned for another target (another CPU or other features) are never used.
    """
    target = target if isinstance(target, Target) else Target(target)
    mod = as_module(mod)
    if k <= 0 or not db.has_workload(mod):
        return []
    workload = db.commit_workload(mod)
    schedules = []
    for trace_json in [record.trace_json for record in db.get_top_k(workload, k, target=target)]:
        sch = Schedule(mod)
        Trace.from_json(trace_json).apply_to_schedule(sch)
        schedules.append(sch)
    return schedules
