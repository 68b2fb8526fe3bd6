"""The model experiments: Hydra composes ``+experiment=<model>``; a reduced model runs, is checked
against onnxruntime and recorded in MLflow (one run for the model, one per tuned task)."""
import os

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

pytest.importorskip("onnxruntime")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _compose(overrides):
    with initialize_config_dir(config_dir=os.path.join(ROOT, "configs"), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v2", "bert_base", "vit_b16"])
def test_model_configs_compose(name):
    cfg = _compose([f"+experiment={name}"])
    assert cfg.experiment.kind == "model" and cfg.experiment.model == name
    assert cfg.search.trials > 0


def test_reduced_model_experiment_is_tracked(tmp_path):
    from experiments.e2e import run_model_experiment
    from experiments.models import TEST_CONFIGS

    cfg = OmegaConf.to_container(_compose(["+experiment=bert_base", "search.trials=2",
                                           f"tracking.uri=sqlite:///{tmp_path}/mlflow.db"]), resolve=True)
    cfg["experiment"]["config"] = {**TEST_CONFIGS["bert_base"], "layers": 1}
    cfg["experiment"]["tune"] = {"strategy": "random", "cost_model": "random", "num_trials_per_iter": 2,
                                 "max_tasks": 1}
    cfg["experiment"].update(repeat=3, block_secs=0.05)  # the timing's rounds and block length, from the config
    (row,) = run_model_experiment(cfg, str(tmp_path))
    assert row["err_untuned"] < 1e-4 and row["err_tuned"] < 1e-4
    assert row["tuned_tasks"] == 1 and row["untuned_ms"] > 0 and row["onnxruntime_ms"] > 0
    assert row["torch_ms"] > 0
    assert 0 < row["untuned_fastest_ms"] <= row["untuned_ms"] and 0 < row["tuned_fastest_ms"] <= row["tuned_ms"]

    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["bert_base"])
    names = set(runs["tags.mlflow.runName"])
    assert "bert_base" in names and any(n.startswith("bert_base/") for n in names)
    model_run = runs[runs["tags.mlflow.runName"] == "bert_base"].iloc[0]
    assert model_run["metrics.untuned_ms"] > 0
