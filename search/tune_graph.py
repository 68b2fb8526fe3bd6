"""``tune_graph``: tune every task of a model with one trial budget, spent where it gains most.

The tasks are ``tensorize.graph.build.graph_tasks(graph, target)`` (distinct fused kernels, each weighted by
how often the model runs it). A task scheduler in the manner of Ansor's: every task first gets one
round (largest first); then each round goes to the task with the largest expected gain in the
model's latency ``sum(weight * best_secs)``:

    gain_i = weight_i * (alpha * recent_i + (1 - alpha) * best_i / trials_i)

where ``recent_i`` is how much the task's best time fell per trial in its last round (the
backward gradient) and ``best_i / trials_i`` an optimistic forward estimate (a task that is slow
and little tuned is worth more trials). Each round is a ``tune_tir`` call on the shared database,
so a killed run resumes: what the database holds counts towards the budget.

>>> db = tune_graph(graph, "llvm -mcpu=native", "work", max_trials_global=256)        # doctest: +SKIP
>>> lib = tensorize.graph.build(graph, "llvm -mcpu=native", database=db)              # doctest: +SKIP
"""
from __future__ import annotations

import json
import logging
import math
import os
import time

from tensorize.graph.build import default_schedule_variants, graph_tasks
from tensorize.target import Target

from .database import Database, target_key
from .flops import estimate_flops
from .tune import tune_tir

logger = logging.getLogger(__name__)

__all__ = ["tune_graph", "TaskState", "graph_working_set_bytes", "last_level_cache_bytes"]


class TaskState:
    """What the scheduler knows of one task: trials so far, best time, the best before the last round."""

    def __init__(self, task, index: int):
        self.task, self.index = task, index
        self.trials, self.best, self.previous_best, self.last_round = 0, math.inf, math.inf, 0
        self._defaults = None

    def default_schedules(self, target) -> list:
        """The graph's default schedules of the task (``default_schedule_variants``), made once: its first round
        measures them and the confirmation times its pick next to them."""
        if self._defaults is None:
            self._defaults = default_schedule_variants(self.task.mod, target)
        return self._defaults

    def gain(self, alpha: float) -> float:
        """The expected benefit of giving this task the next round, weighted by how often the graph runs it.

        A mix of the recent improvement per trial (weight ``alpha``) and the best time per trial;
        infinite for a task not tried yet, 0 for one with no valid program yet.

        Parameters
        ----------
        alpha : float
            The weight of the recent improvement (0 to 1).

        Returns
        -------
        float
            The task's priority: the highest goes next.
        """
        if self.trials == 0:
            return math.inf
        if not math.isfinite(self.best):
            return 0.0  # nothing valid yet after a round: other tasks first
        recent = 0.0
        if math.isfinite(self.previous_best) and self.last_round:
            recent = max(0.0, self.previous_best - self.best) / self.last_round
        return self.task.weight * (alpha * recent + (1 - alpha) * self.best / self.trials)

    def as_json(self) -> dict:
        """The task's state for ``graph_tuning.json``.

        Returns
        -------
        dict
            ``task``, ``weight``, ``trials`` and ``best_secs`` (None when nothing valid was measured).
        """
        return {"task": self.task.name, "weight": self.task.weight, "trials": self.trials,
                "best_secs": self.best if math.isfinite(self.best) else None}


def last_level_cache_bytes() -> int | None:
    """This host's largest CPU cache in bytes (Linux sysfs), or None where it cannot be read.

    >>> size = last_level_cache_bytes()
    >>> size is None or size >= 1 << 16
    True
    """
    root = "/sys/devices/system/cpu/cpu0/cache"
    best = None
    try:
        for index in (name for name in os.listdir(root) if name.startswith("index")):
            with open(os.path.join(root, index, "size")) as f:
                text = f.read().strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            size = int(text.rstrip("KMG")) * scale
            best = size if best is None else max(best, size)
    except (OSError, ValueError):
        return None
    return best


def graph_working_set_bytes(graph) -> int:
    """What one run of ``graph`` touches, about: its weights and inputs, and twice its largest value (a
    kernel's input and output live together; the executor's arena reuses the rest)."""
    import numpy as np

    def nbytes(name):
        shape, dtype = graph.types[name]
        return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize

    weights = sum(int(v.nbytes) for v in graph.constants.values()) + sum(nbytes(n) for n in graph.inputs)
    return weights + 2 * max((nbytes(n.output) for n in graph.nodes), default=0)


def _flush_caches(graph, target, cache_flush: bool | None) -> bool:
    """``tune_graph``'s ``cache_flush`` decided: None flushes on a CPU target unless the graph's working set
    fits the host's last-level cache (then every kernel of the model finds its weights there)."""
    if cache_flush is not None or target.kind.name != "llvm":
        return bool(cache_flush)
    cache, working_set = last_level_cache_bytes(), graph_working_set_bytes(graph)
    fits = cache is not None and working_set <= cache
    logger.info("graph working set %.1f MiB, last-level cache %s: candidates timed %s", working_set / 2**20,
                f"{cache / 2**20:.0f} MiB" if cache else "unknown",
                "warm" if fits else "cold but for their first argument")
    return not fits


def _measured(db: Database, mod, target) -> tuple[int, float]:
    """The task's measurements on ``target`` so far and the time of its pick (``Database.get_top_k``'s)."""
    if not db.has_workload(mod):
        return 0, math.inf
    workload = db.commit_workload(mod)
    top = db.get_top_k(workload, 1, target=target)
    return len(db.records_of(workload, target)), top[0].mean_run_secs if top else math.inf


def _task_dir(work_dir: str, st) -> str:
    """The task's folder: its builds and the inputs and reference outputs its runner computed."""
    return os.path.join(work_dir, f"task_{st.index:03d}")


def _confirm_picks(states, db: Database, target, tkey: str, work_dir: str, runner_config: dict, rounds: int,
                   max_passes: int = 3) -> int:
    """Time each task's pick again, ``rounds`` times side by side with the graph's default schedules (which
    the database then ranks by the median of each program's measurements); a pick measured only once is the
    luckiest of its task's single measurements and often slower than the default. Repeats (up to
    ``max_passes``) while a task's pick is a program measured fewer than ``rounds + 1`` times. Returns the
    number of tasks whose pick changed."""
    from .context import TuneContext
    from .database import TuningRecord, trace_key
    from .measure import BUILDERS, RUNNERS, MeasureCandidate

    folder = os.path.join(work_dir, "confirm")
    bld = BUILDERS.create("local", work_dir=folder, timeout_s=30.0)
    run = RUNNERS.create("local", work_dir=folder, **runner_config)
    changed = 0
    try:
        for st in states:
            if not db.has_workload(st.task.mod):
                continue
            workload = db.commit_workload(st.task.mod)
            defaults = st.default_schedules(target)
            default_keys = {trace_key(d.trace.as_json()) for d in defaults}
            first = db.get_top_k(workload, 1, target=target)
            ctx = TuneContext.create(st.task.mod, target, seed=0, task_name=st.task.name)
            run.work_dir = _task_dir(work_dir, st)  # the inputs and reference its tuning rounds computed
            for _ in range(max_passes):
                top = db.get_top_k(workload, 1, target=target)
                if not top or top[0].trace_key in default_keys:
                    break
                pick = top[0]
                times = sum(r.is_valid and r.trace_key == pick.trace_key for r in db.records_of(workload, target))
                if times > rounds:
                    break
                pairs = [(pick.replay().mod, pick.trace_json)] + [(d.mod, d.trace.as_json()) for d in defaults]
                builds = bld.build([MeasureCandidate(mod, trace) for mod, trace in pairs], target)
                for _ in range(rounds):
                    for (_, trace), res in zip(pairs, run.run(ctx, builds)):
                        db.commit_tuning_record(TuningRecord(trace, workload, res.run_secs, str(target),
                                                             target_key=tkey, error=res.error,
                                                             error_kind=res.error_kind))
            last = db.get_top_k(workload, 1, target=target)
            if first and last and first[0].trace_key != last[0].trace_key:
                changed += 1
                logger.info("task %s: the pick changed after timing it again next to the default schedule",
                            st.task.name)
            st.best = _measured(db, st.task.mod, target)[1]
    finally:
        for executor in (bld, run):
            close = getattr(executor, "close", None)
            if close is not None:
                close()
    return changed


def tune_graph(graph, target, work_dir: str, max_trials_global: int = 256, num_trials_per_iter: int = 16, *,
               alpha: float = 0.2, max_tasks: int | None = None, on_round=None, winograd: bool | None = None,
               cache_flush: bool | None = None, cost_model="lgbm_rank", share_cost_model: bool = True,
               confirm_rounds: int = 2, **tune_kwargs) -> Database:
    """Tune the tasks of ``graph`` for ``target`` within ``max_trials_global`` measured programs in all.

    Parameters
    ----------
    graph : tensorize.graph.Graph
    target : str or Target
    work_dir : str
        The database (``database.jsonl``), one folder per task and ``graph_tuning.json``; running
        again with the same folder resumes.
    max_trials_global : int
        Programs measured across all tasks (what the database already holds counts).
    num_trials_per_iter : int
        Trials of one round of one task.
    alpha : float
        Weight of the backward gradient against the forward estimate in the expected gain.
    max_tasks : int, optional
        Tune only the ``max_tasks`` tasks with the most work (flops x calls); the others
        keep the default schedule.
    on_round : callable, optional
        ``on_round(task_state, round_seconds)`` after each round (for experiment trackers).
    winograd : bool, optional
        As ``tensorize.graph.build``'s (the graph's tasks are those ``build`` compiles, ``graph_tasks``).
    cache_flush : bool, optional
        Time each candidate cold but for its first argument (the runner's ``enable_cpu_cache_flush``), as
        a kernel runs in a model too large for the caches: its input just written, its weights and output
        buffer from memory. None: on for CPU targets unless the graph's working set
        (``graph_working_set_bytes``) fits this host's last-level cache, where the weights of every kernel
        stay in cache between runs (MobileNet-V2, about 24 MiB in a 32 MiB L3: tuned warm, the model ran
        2-3% faster than tuned cold and than untuned; ResNet-50's 100 MiB of weights come from memory).
    cost_model : str or CostModel or None
        A ``search.cost_model.COST_MODELS`` name, or a model (e.g. ``load_cost_model`` of an earlier run's
        ``cost_model.npz``, whose records it keeps learning from); None: no model.
    share_cost_model : bool
        One model learns from every task's measurements and ranks every task's candidates (Ansor's task
        scheduler; a task's own few trials teach a model little: on six ResNet convolutions, a model trained on
        the other five ranked a task's fresh samples better than one trained on its own 64 programs). It is
        written to ``<work_dir>/cost_model.npz`` after each round. False: a fresh model per round, trained on
        the task's own records only.
    confirm_rounds : int
        At the end, each task's pick is timed this many more times side by side with the graph's default
        schedules, and the database ranks programs by the median of their measurements (0: no confirmation).
        Without it the pick is the luckiest single measurement (re-timed next to the default schedule, 10 of 13
        MobileNet-V2 picks were slower). CPU targets with the local runner only.
    **tune_kwargs
        Passed to ``tune_tir`` (``strategy``, ``seed``, ``runner_config``, ...).

    Returns
    -------
    Database
        With ``db.graph_report``: per task its weight, trials and best time, the estimated tuned
        latency ``sum(weight * best)`` of the tuned tasks and the wall time.
    """
    start = time.perf_counter()
    target = target if isinstance(target, Target) else Target(target)
    os.makedirs(work_dir, exist_ok=True)
    db = Database(os.path.join(work_dir, "database.jsonl"))
    tkey = target_key(target)
    tasks = graph_tasks(graph, target, winograd=winograd)
    work = {t.name: estimate_flops(t.mod) * t.weight for t in tasks}
    if max_tasks is not None:
        tasks = sorted(tasks, key=lambda t: -work[t.name])[:max_tasks]
    states = [TaskState(t, i) for i, t in enumerate(tasks)]
    for st in states:
        st.trials, st.best = _measured(db, st.task.mod, target)
    model = cost_model
    if share_cost_model and isinstance(cost_model, str):
        from .cost_model import COST_MODELS

        model = COST_MODELS.create(cost_model)
    tune_kwargs.update(cost_model=model, save_cost_model=False)
    tune_kwargs.setdefault("remeasure_top_k", 0)
    if _flush_caches(graph, target, cache_flush):
        tune_kwargs["runner_config"] = {"enable_cpu_cache_flush": True, **(tune_kwargs.get("runner_config") or {})}
    tune_kwargs.setdefault("progress", False)
    order = sorted(states, key=lambda s: -work[s.task.name])
    active = list(states)
    while active and sum(s.trials for s in states) < max_trials_global:
        left = max_trials_global - sum(s.trials for s in states)
        fresh = [s for s in order if s.trials == 0 and s in active]
        st = fresh[0] if fresh else max(active, key=lambda s: (s.gain(alpha), -s.index))
        size = min(num_trials_per_iter, left)
        t0 = time.perf_counter()
        before = st.trials
        # the graph's default (CPU) schedules are measured first: the database's best is never worse
        baselines = st.default_schedules(target) if before == 0 else []
        tune_tir(st.task.mod, target, _task_dir(work_dir, st),
                 max_trials_global=st.trials + size, num_trials_per_iter=num_trials_per_iter,
                 task_name=st.task.name, database=db, baselines=baselines, **tune_kwargs)
        if share_cost_model and model is not None:
            model.save(os.path.join(work_dir, "cost_model.npz"))
        st.previous_best = st.best
        st.trials, st.best = _measured(db, st.task.mod, target)
        st.last_round = st.trials - before
        logger.info("task %s (x%d): %d trials, best %.4f ms", st.task.name, st.task.weight, st.trials, st.best * 1e3)
        if on_round is not None:
            on_round(st, time.perf_counter() - t0)
        if st.last_round == 0:  # the space of this task is exhausted: stop giving it rounds
            active.remove(st)
    confirmed = 0
    if confirm_rounds > 0 and target.kind.name == "llvm" and tune_kwargs.get("runner", "local") == "local":
        confirmed = _confirm_picks(states, db, target, tkey, work_dir, dict(tune_kwargs.get("runner_config") or {}),
                                   confirm_rounds)
    report = {"tasks": [s.as_json() for s in sorted(states, key=lambda s: s.index)],
              "picks_changed_by_confirmation": confirmed,
              "estimated_secs": sum(s.task.weight * s.best for s in states if math.isfinite(s.best)),
              "trials": sum(s.trials for s in states), "seconds": time.perf_counter() - start}
    with open(os.path.join(work_dir, "graph_tuning.json"), "w") as f:
        json.dump(report, f, indent=1)
    db.graph_report = report
    return db
