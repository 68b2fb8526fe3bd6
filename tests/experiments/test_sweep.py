"""A Hydra multirun of two cost models x two seeds: four MLflow runs under one parent run with per-trial
metrics, and the comparison table lists all four."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = ["workload.shape=small", "experiment.baselines=[numpy,torch]", "search.trials=4", "search.trials_per_iter=4",
         "search.strategy.population_size=8", "search.strategy.init_min_unmeasured=4",
         "search.strategy.genetic_num_iters=1", "runner.number=2", "runner.repeat=2", "runner.progress=false"]


def _run(args, cwd):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, os.path.join(ROOT, "run.py"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_a_sweep_of_two_cost_models_and_two_seeds_is_tracked_and_compared(tmp_path):
    mlflow = pytest.importorskip("mlflow")
    done = _run(["-m", "+experiment=gmm", "cost_model=lgbm_rank,random", "seed=0,1", *SMALL,
                 f"hydra.sweep.dir={tmp_path}/multirun"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["gmm"])
    jobs = runs[runs["tags.tensorize.kind"] == "job"]
    parents = runs[runs["tags.tensorize.kind"] == "sweep"]
    assert len(jobs) == 4 and len(parents) == 1
    assert set(jobs["tags.mlflow.parentRunId"]) == {parents.iloc[0]["run_id"]}
    assert sorted(zip(jobs["tags.cost_model"], jobs["tags.seed"])) == [
        ("lgbm_rank", "0"), ("lgbm_rank", "1"), ("random", "0"), ("random", "1")]
    client = mlflow.tracking.MlflowClient()
    for run_id in jobs["run_id"]:
        steps = [m.step for m in client.get_metric_history(run_id, "best_gflops")]
        assert steps and max(steps) <= 4 and min(steps) >= 1

    done = _run(["mode=compare", "+experiment=gmm"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    table = (tmp_path / "results" / "gmm.md").read_text()
    assert "| tensorize tuned (lgbm_rank) | 2 |" in table and "| tensorize tuned (random) | 2 |" in table
    assert "Geomean speedup" in table and "× vs torch" in table
    assert (tmp_path / "results" / "gmm.png").stat().st_size > 0


def test_a_config_error_names_the_key_and_the_choices(tmp_path):
    done = _run(["+experiment=gmm", "target=avx9000"], tmp_path)
    assert done.returncode != 0
    assert "target/avx9000" in done.stderr and "x86_vnni" in done.stderr and "cuda_sm90" in done.stderr
