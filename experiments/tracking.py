"""MLflow tracking of experiment runs. The default store is a local SQLite file (no server);
any tracking URI works by configuration (``tracking.uri=http://host:5000``). With a SQLite store, an
experiment the harness creates keeps its artifacts beside the database (``<folder>/mlruns/<experiment>``), not in
whatever folder the process runs in (MLflow's default, ``./mlruns``).

A run records the host and process id that own it. A process killed mid-run (``kill -9``, a lost
machine) leaves its run marked RUNNING; the next run of the same experiment marks such stale runs
KILLED: those whose process no longer exists on this host, and those that carry no owner.
"""
from __future__ import annotations

import logging
import os
import re
import socket
from pathlib import Path
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
    def run(self, run_name: str, params: Mapping[str, Any], sweep: str | None = None,
            tags: Mapping[str, str] | None = None) -> Iterator["Tracker"]:
        """An MLflow run; with ``sweep`` (an id shared by the jobs of one Hydra sweep) it is nested under the
        sweep's parent run (created by the first job of the sweep)."""
        if not self.enabled:
            yield self
            return
        os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
        import mlflow

        self._mlflow = mlflow
        mlflow.set_tracking_uri(self.uri)
        experiment = _experiment(mlflow, self.experiment_name, self.uri)
        mark_stale_runs_killed(experiment.experiment_id)
        all_tags = {_HOST_TAG: socket.gethostname(), _PID_TAG: str(os.getpid()), **dict(tags or {})}
        if sweep:
            all_tags.update({SWEEP_TAG: sweep, "mlflow.parentRunId": sweep_parent(experiment.experiment_id, sweep)})
        with mlflow.start_run(run_name=run_name, tags=all_tags) as active:
            self.run_id = active.info.run_id
            mlflow.log_params({k: str(v)[:500] for k, v in params.items()})
            log.info("MLflow run %s in experiment %r at %s", self.run_id, self.experiment_name, self.uri)
            yield self

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        """Log metrics to the current run (no-op when tracking is off)."""
        if self._mlflow is not None:
            self._mlflow.log_metrics({k: float(v) for k, v in metrics.items()}, step=step)

    def log_series(self, series: Mapping[str, list], first_step: int = 1) -> None:
        """Per-step metrics in one batch: ``{name: [value at step first_step, ...]}`` (None values skipped)."""
        if self._mlflow is None:
            return
        import time

        from mlflow.entities import Metric
        from mlflow.tracking import MlflowClient

        now = int(time.time() * 1000)
        metrics = [Metric(name, float(v), now, step) for name, values in series.items()
                   for step, v in enumerate(values, start=first_step) if v is not None]
        client = MlflowClient()
        for i in range(0, len(metrics), 900):  # MLflow takes at most 1000 metrics per batch
            client.log_batch(self.run_id, metrics=metrics[i:i + 900])

    def log_text(self, text: str, artifact_file: str) -> None:
        """Store ``text`` as the artifact ``artifact_file`` (no-op when tracking is off)."""
        if self._mlflow is not None:
            self._mlflow.log_text(text, artifact_file)

    def log_artifact(self, path: str) -> None:
        """Store the file ``path`` as an artifact (no-op when tracking is off)."""
        if self._mlflow is not None:
            self._mlflow.log_artifact(path)

    def set_tags(self, tags: Mapping[str, str]) -> None:
        """Tag the current run (no-op when tracking is off)."""
        if self._mlflow is not None:
            self._mlflow.set_tags(dict(tags))


_HOST_TAG, _PID_TAG = "tensorize.host", "tensorize.pid"


def artifact_root(uri: str, experiment_name: str) -> str | None:
    """Where a new experiment's artifacts go for the tracking ``uri``: beside a SQLite database, under
    ``mlruns/<experiment name>``; None (MLflow's choice) for another store.

    Parameters
    ----------
    uri : str
        The tracking URI.
    experiment_name : str
        The experiment.

    Returns
    -------
    str or None
        A ``file://`` URI.

    Examples
    --------
    >>> artifact_root("sqlite:////data/runs/mlflow.db", "dep conv")
    'file:///data/runs/mlruns/dep_conv'
    >>> artifact_root("http://host:5000", "gmm") is None
    True
    """
    if not uri.startswith("sqlite:///"):
        return None
    database = Path(os.path.abspath(uri[len("sqlite:///"):]))
    return (database.parent / "mlruns" / re.sub(r"[^A-Za-z0-9_.-]", "_", experiment_name)).as_uri()


def _experiment(mlflow, name: str, uri: str):
    """``mlflow.set_experiment(name)``, creating it first with its artifacts at ``artifact_root`` when missing."""
    location = artifact_root(uri, name)
    if location is not None and mlflow.get_experiment_by_name(name) is None:
        try:
            mlflow.create_experiment(name, artifact_location=location)
        except mlflow.exceptions.MlflowException:  # another job of the sweep created it first
            pass
    return mlflow.set_experiment(name)
SWEEP_TAG, KIND_TAG = "tensorize.sweep", "tensorize.kind"


def sweep_parent(experiment_id: str, sweep: str) -> str:
    """The run id of sweep ``sweep``'s parent run in the experiment, created (and closed) if missing.

    Parameters
    ----------
    experiment_id : str
        The MLflow experiment (of the current tracking URI).
    sweep : str
        The sweep's id (Hydra's sweep folder).

    Returns
    -------
    str
        The parent's run id; the jobs' runs carry it in ``mlflow.parentRunId`` so MLflow nests them.
    """
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    found = client.search_runs([experiment_id], filter_string=f"tags.`{KIND_TAG}` = 'sweep' and "
                               f"tags.`{SWEEP_TAG}` = '{sweep}'", max_results=1)
    if found:
        return found[0].info.run_id
    parent = client.create_run(experiment_id, run_name="sweep " + "/".join(sweep.rstrip("/").split("/")[-2:]),
                               tags={KIND_TAG: "sweep", SWEEP_TAG: sweep, _HOST_TAG: socket.gethostname()})
    client.set_terminated(parent.info.run_id, status="FINISHED")
    return parent.info.run_id


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def mark_stale_runs_killed(experiment_id: str) -> list[str]:
    """Mark the experiment's RUNNING runs whose process is gone as KILLED; returns their run ids.

    Parameters
    ----------
    experiment_id : str
        The MLflow experiment (of the current tracking URI).

    Returns
    -------
    list of str
        The runs marked KILLED: those owned by a process of this host that no longer exists, and those
        without an owner tag. Runs of live processes and of other hosts are left alone.
    """
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    host = socket.gethostname()
    killed = []
    for run in client.search_runs([experiment_id], filter_string="attributes.status = 'RUNNING'", max_results=1000):
        tags = run.data.tags
        owner_host, owner_pid = tags.get(_HOST_TAG), tags.get(_PID_TAG)
        if owner_host is not None and owner_host != host:
            continue
        if owner_pid is not None and owner_pid.isdigit() and int(owner_pid) != os.getpid() \
                and _process_alive(int(owner_pid)):
            continue
        client.set_terminated(run.info.run_id, status="KILLED")
        killed.append(run.info.run_id)
    if killed:
        log.warning("marked %d stale RUNNING run(s) of experiment %s as KILLED: %s", len(killed), experiment_id,
                    ", ".join(killed))
    return killed
