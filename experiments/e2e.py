"""End-to-end model experiments: import, build untuned, tune with ``search.tune_graph``, build tuned,
check against onnxruntime and time next to onnxruntime and PyTorch.

``measure_model(name, config, target, trials, work_dir)`` is one model's row (what
``benchmarks/e2e_cpu.py`` prints); ``run_model_experiment(cfg, cwd)`` is the Hydra entry
(``python run.py +experiment=resnet50``): one MLflow run per model, one per tuned task.
"""
from __future__ import annotations

import logging
import os
import time

import numpy as np

import search
from tensorize import graph as tgraph
from tensorize.frontend import from_onnx

from .models import MODELS, random_inputs
from .tracking import Tracker
from .tuning import search_settings

log = logging.getLogger(__name__)

__all__ = ["measure_model", "run_model_experiment", "time_callable", "time_alternating", "time_alternating_blocks"]


def _block(fn, min_secs: float) -> float:
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        if time.perf_counter() - t0 >= min_secs:
            return (time.perf_counter() - t0) / n


def time_callable(fn, repeat: int = 5, min_secs: float = 0.5) -> float:
    """Median seconds of ``fn()`` over ``repeat`` blocks (each block at least ``min_secs`` or one call)."""
    fn()
    return float(np.median([_block(fn, min_secs) for _ in range(repeat)]))


def time_alternating_blocks(fns: dict, repeat: int = 5, min_secs: float = 0.5) -> dict:
    """Seconds per call of each of ``fns`` (name -> callable) in each of ``repeat`` rounds, each round one
    block of every program in turn: a machine whose speed drifts (other tenants, clocks) shifts all of them
    alike, where timing one program after the other put the drift into their ratio.

    >>> blocks = time_alternating_blocks({"a": lambda: None, "b": lambda: None}, repeat=3, min_secs=0.001)
    >>> sorted(blocks), len(blocks["a"])
    (['a', 'b'], 3)
    """
    for fn in fns.values():
        fn()
    blocks: dict = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            blocks[name].append(_block(fn, min_secs))
    return blocks


def time_alternating(fns: dict, repeat: int = 5, min_secs: float = 0.5) -> dict:
    """Median seconds per call of each of ``fns`` over ``repeat`` alternating rounds
    (``time_alternating_blocks``).

    >>> sorted(time_alternating({"a": lambda: None, "b": lambda: None}, repeat=2, min_secs=0.001))
    ['a', 'b']
    """
    return {name: float(np.median(times)) for name, times in time_alternating_blocks(fns, repeat, min_secs).items()}


def _onnxruntime(model, spinning: bool = True, threads: int | None = None):
    """An onnxruntime session; ``spinning=False`` for the reference session, whose idle thread pool
    would otherwise spin and slow down the kernels timed while it is alive."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    if not spinning:
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads:
        opts.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _torch_fn(model, inputs, threads: int | None = None):
    """PyTorch running the same ONNX graph (``experiments.torch_onnx``), or None without torch."""
    try:
        import torch
    except ImportError:
        log.warning("torch is not installed: the PyTorch column stays empty (pip install -e '.[baselines]')")
        return None
    from .torch_onnx import torch_runner

    if threads:
        torch.set_num_threads(threads)
    runner = torch_runner(model)
    tensors = [torch.from_numpy(np.ascontiguousarray(inputs[n])) for n in runner.input_names]
    return lambda: runner.torch_call(*tensors)


def _rel_err(out, ref) -> float:
    return float(np.abs(out - ref).max() / max(float(np.abs(ref).max()), 1e-30))


def measure_model(name: str, config: dict | None, target: str, trials: int, work_dir: str, *, repeat: int = 15,
                  tune_kwargs: dict | None = None, tracker: Tracker | None = None, threads: int | None = None,
                  block_secs: float = 0.2) -> dict:
    """One model: latencies (ms) untuned / tuned / onnxruntime / torch, tuning seconds, errors vs onnxruntime.

    ``threads`` (default: all cores) applies to all three: ``TVM_NUM_THREADS`` for the kernels built
    here, onnxruntime's intra-op threads, ``torch.set_num_threads``. The programs are timed in ``repeat``
    alternating rounds of ``block_secs`` blocks: ``<program>_ms`` is the median block, ``<program>_fastest_ms``
    the fastest. Other tenants of a shared machine only ever slow a block down, so where they come and go
    within seconds (the medians of identical programs then differ by 10% or more) the fastest of many short
    blocks is the steadier figure of a program's own speed.
    """
    if threads:
        os.environ["TVM_NUM_THREADS"] = str(threads)
    model = MODELS[name](**(config or {}))
    inputs = random_inputs(model)
    ref = _onnxruntime(model, spinning=False).run(None, inputs)[0]
    row = {"model": name, "trials": trials, "threads": threads or os.cpu_count()}
    t0 = time.perf_counter()
    g = from_onnx(model)
    lib = tgraph.build(g, target)
    row.update(tasks=len(lib.tasks), kernels=sum(t.weight for t in lib.tasks), build_s=time.perf_counter() - t0)
    row["err_untuned"] = _rel_err(lib.run(**inputs)[0], ref)
    programs = {"untuned_ms": lambda: lib.run(**inputs)}
    if trials > 0:
        t0 = time.perf_counter()

        def on_round(state, secs):
            if tracker is not None:
                tracker.log_metrics({f"best_ms.{state.task.name}": state.best * 1e3}, step=state.trials)

        db = search.tune_graph(g, target, work_dir, max_trials_global=trials, on_round=on_round, **(tune_kwargs or {}))
        row["tune_s"] = time.perf_counter() - t0
        row["task_report"] = db.graph_report["tasks"]
        tuned = tgraph.build(g, target, database=db)
        row["tuned_tasks"] = sum(v == "tuned" for v in tuned.how.values())
        row["err_tuned"] = _rel_err(tuned.run(**inputs)[0], ref)
        programs["tuned_ms"] = lambda: tuned.run(**inputs)
    sess = _onnxruntime(model, threads=threads)
    programs["onnxruntime_ms"] = lambda: sess.run(None, inputs)
    torch_fn = _torch_fn(model, inputs, threads)
    if torch_fn is not None:
        programs["torch_ms"] = torch_fn
    for program, times in time_alternating_blocks(programs, repeat, block_secs).items():
        row[program] = float(np.median(times)) * 1e3
        row[program.replace("_ms", "_fastest_ms")] = float(np.min(times)) * 1e3
    row.setdefault("torch_ms", None)
    del sess
    ours = "tuned" if "tuned_ms" in row else "untuned"
    row["speedup_vs_onnxruntime"] = row["onnxruntime_ms"] / row[f"{ours}_ms"]
    row["speedup_vs_onnxruntime_fastest"] = row["onnxruntime_fastest_ms"] / row[f"{ours}_fastest_ms"]
    return row


def run_model_experiment(cfg: dict, cwd: str) -> list:
    """The Hydra entry for ``experiment.kind: model`` configs (configs/experiment/resnet50.yaml, ...)."""
    exp = cfg["experiment"]
    target = cfg["target"]["target"]
    trk = cfg.get("tracking", {}) or {}
    uri = trk.get("uri", "sqlite:///mlflow.db")
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        uri = "sqlite:///" + os.path.join(cwd, uri[len("sqlite:///"):])
    tracker = Tracker(bool(trk.get("enabled", True)), uri, trk.get("experiment_name", exp["name"]))
    work_dir = os.path.join(cwd, cfg.get("tuning_dir", "tuning"), exp["name"])
    trials = int((cfg.get("search") or {}).get("trials", exp.get("trials", 0)))
    # the composed search and cost-model groups, as the operator experiments' ``tuned`` schedule uses them
    tune = dict(exp.get("tune") or {})
    tune_kwargs = {**search_settings(cfg), **tune}
    if "strategy" in tune and "strategy_config" not in tune:  # the group's parameters fit only its strategy
        del tune_kwargs["strategy_config"]
    with tracker.run(exp["name"], {"model": exp["model"], "target": target, "trials": trials,
                                   **{f"config.{k}": v for k, v in (exp.get("config") or {}).items()}}):
        row = measure_model(exp["model"], exp.get("config"), target, trials, work_dir, tune_kwargs=tune_kwargs,
                            tracker=tracker, repeat=exp.get("repeat", 15), block_secs=exp.get("block_secs", 0.2))
        tracker.log_metrics({k: v for k, v in row.items() if isinstance(v, (int, float)) and v is not None})
    for task in row.get("task_report", []):  # one run per task
        with tracker.run(f"{exp['name']}/{task['task']}", {"model": exp["model"], "task": task["task"],
                                                           "weight": task["weight"]}):
            tracker.log_metrics({"trials": task["trials"], **({"best_ms": task["best_secs"] * 1e3}
                                                              if task["best_secs"] else {})})
    row["schedule"] = "tuned" if trials > 0 else "default"
    row["latency_ms"] = row.get("tuned_ms", row["untuned_ms"])
    return [row]
