"""MLflow tracking of experiment runs. The default store is a local SQLite file (no server);
any tracking URI works by configuration (``tracking.uri=http://host:5000``)."""
from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

log = logging.getLogger(__name__)


def flatten(cfg: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists joined as text), for MLflow params."""
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        elif isinstance(value, (list, tuple)):
            out[name] = ",".join(str(v) for v in value)
        else:
            out[name] = value
    return out


class Tracker:
    """Logs params, metrics and text artifacts of one run; a no-op tracker when disabled."""

    def __init__(self, enabled: bool, uri: str, experiment_name: str):
        self.enabled = enabled
        self.uri, self.experiment_name = uri, experiment_name
        self._mlflow = None
        self.run_id: str | None = None

    @contextmanager
    def run(self, run_name: str, params: Mapping[str, Any]) -> Iterator["Tracker"]:
        if not self.enabled:
            yield self
            return
        os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
        import mlflow

        self._mlflow = mlflow
        mlflow.set_tracking_uri(self.uri)
        mlflow.set_experiment(self.experiment_name)
        with mlflow.start_run(run_name=run_name) as active:
            self.run_id = active.info.run_id
            mlflow.log_params({k: str(v)[:500] for k, v in params.items()})
            log.info("MLflow run %s in experiment %r at %s", self.run_id, self.experiment_name, self.uri)
            yield self

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        if self._mlflow is not None:
            self._mlflow.log_metrics({k: float(v) for k, v in metrics.items()}, step=step)

    def log_text(self, text: str, artifact_file: str) -> None:
        if self._mlflow is not None:
            self._mlflow.log_text(text, artifact_file)

    def log_artifact(self, path: str) -> None:
        if self._mlflow is not None:
            self._mlflow.log_artifact(path)

    def set_tags(self, tags: Mapping[str, str]) -> None:
        if self._mlflow is not None:
            self._mlflow.set_tags(dict(tags))
