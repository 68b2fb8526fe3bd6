"""The main job: ``python run.py +experiment=dep_conv`` (Hydra; sweeps with ``-m``).

Embedded defaults: the host CPU target, a local MLflow store (``sqlite:///mlflow.db``), results
under ``results/``. Override anything on the command line, e.g.
``python run.py +experiment=dep_conv target=avx512 tracking=off``.
"""
import logging
import os

import hydra
from omegaconf import DictConfig, OmegaConf

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
log = logging.getLogger("run")


@hydra.main(version_base="1.3", config_path="configs", config_name="config")
def main(cfg: DictConfig) -> None:
    from experiments.driver import run_experiment

    if "experiment" not in cfg or cfg.experiment is None:
        raise SystemExit("choose an experiment: python run.py +experiment=dep_conv (see configs/experiment/)")
    log.info("running experiment %s on %s", cfg.experiment.name, cfg.target.target)
    if cfg.experiment.get("kind") == "model":  # a whole model (configs/experiment/resnet50.yaml, ...)
        from experiments.e2e import run_model_experiment as run_experiment
    rows = run_experiment(OmegaConf.to_container(cfg, resolve=True), hydra.utils.get_original_cwd())
    for row in rows:
        log.info("%s", {k: row[k] for k in ("schedule", "latency_ms", "gflops") if k in row}
                 | {k: v for k, v in row.items() if k.startswith("speedup")})


if __name__ == "__main__":
    main()
