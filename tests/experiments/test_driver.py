"""The harness end to end: Hydra composes the config, the driver builds, checks, times and records."""
import os

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _compose(overrides):
    with initialize_config_dir(config_dir=os.path.join(ROOT, "configs"), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


def test_config_composes_with_embedded_defaults():
    cfg = _compose(["+experiment=dep_conv"])
    assert cfg.experiment.workload == "dep_conv"
    assert cfg.target.target == "llvm -mcpu=native"
    assert cfg.tracking.uri == "sqlite:///mlflow.db"
    assert cfg.tracking.experiment_name == "dep_conv"


def test_depthwise_workload_reference_matches_direct_loops():
    from experiments.workloads import get_workload

    w = get_workload("dep_conv", "small")
    rng = np.random.default_rng(0)
    data, kernel = w.random_inputs(rng)
    out = w.reference(data, kernel)
    p = w.params
    padded = np.pad(data, ((0, 0), (1, 1), (1, 1), (0, 0)))
    direct = np.zeros_like(out)
    for i in range(3):
        for j in range(3):
            direct += padded[:, i:i + p["H"], j:j + p["W"], :] * kernel[i, j]
    np.testing.assert_allclose(out, direct, rtol=1e-5, atol=1e-5)


def test_dep_conv_experiment_runs_and_is_tracked(tmp_path):
    from omegaconf import OmegaConf

    from experiments.driver import run_experiment

    cfg = _compose(["+experiment=dep_conv", "experiment.shape=small", "runner.number=2", "runner.repeat=2",
                    "runner.progress=false", f"tracking.uri=sqlite:///{tmp_path}/mlflow.db", "search.trials=4",
                    "search.trials_per_iter=4", "search.strategy.population_size=8",
                    "search.strategy.init_min_unmeasured=4", "search.strategy.genetic_num_iters=1"])
    rows = run_experiment(OmegaConf.to_container(cfg, resolve=True), str(tmp_path))
    assert [r["schedule"] for r in rows] == ["default", "cpu_hand", "tuned"]
    assert rows[-1]["trials"] == 4 and rows[-1]["valid_trials"] >= 1
    assert (tmp_path / "tuning" / "dep_conv").is_dir()
    for r in rows:
        assert r["latency_ms"] > 0 and r["gflops"] > 0 and r["max_abs_err"] < 1e-3
        assert r["speedup_vs_numpy"] > 0
    assert (tmp_path / "results" / "dep_conv.csv").exists()

    mlflow = pytest.importorskip("mlflow")
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["dep_conv"], filter_string="tags.`tensorize.kind` = 'job'")
    assert len(runs) == 1  # one run per (experiment, workload, target, cost model, seed)
    run = runs.iloc[0]
    assert run["params.schedule"] == "tuned" and run["tags.cost_model"] == "lgbm_rank"
    for schedule in ("default", "cpu_hand", "tuned"):
        assert run[f"metrics.{schedule}.latency_ms"] > 0
    assert run["metrics.latency_ms"] == rows[-1]["latency_ms"]
    client = mlflow.tracking.MlflowClient()
    history = client.get_metric_history(run["run_id"], "best_gflops")
    assert sorted(m.step for m in history) == list(range(1, len(history) + 1)) and len(history) >= 1
    artifacts = {a.path for a in client.list_artifacts(run["run_id"])}
    assert {"best_trace.json", "scheduled.py", "kernel.s", "tuning_curve.png", "database.jsonl"} <= artifacts
