"""A run killed at any moment leaves no RUNNING MLflow run after the next start and no truncated
results table."""
import multiprocessing
import os
import signal
import time

import pandas as pd
import pytest

from experiments.report import append_results, write_atomically
from experiments.tracking import Tracker


def _run_forever(uri):
    tracker = Tracker(True, uri, "killed")
    with tracker.run("doomed", {"a": 1}):
        tracker.log_metrics({"x": 1.0})
        while True:
            time.sleep(0.1)


def test_a_killed_run_is_marked_killed_at_the_next_start(tmp_path):
    mlflow = pytest.importorskip("mlflow")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("killed")  # create the store here: two processes migrating one new file collide
    client = mlflow.tracking.MlflowClient()
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_run_forever, args=(uri,))
    proc.start()
    deadline = time.time() + 60
    running = []
    while time.time() < deadline and not running:
        experiment = client.get_experiment_by_name("killed")
        if experiment is not None:
            running = client.search_runs([experiment.experiment_id], "attributes.status = 'RUNNING'")
        time.sleep(0.2)
    assert running, "the child never started its run"
    assert proc.is_alive()
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(10)
    tracker = Tracker(True, uri, "killed")
    with tracker.run("next", {"a": 2}):
        pass
    runs = {r.info.run_name: r.info.status for r in client.search_runs([experiment.experiment_id])}
    assert runs == {"doomed": "KILLED", "next": "FINISHED"}


def test_a_live_run_of_another_process_is_left_running(tmp_path):
    mlflow = pytest.importorskip("mlflow")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    experiment_id = mlflow.set_experiment("live").experiment_id
    client = mlflow.tracking.MlflowClient()
    live = client.create_run(experiment_id, tags={"tensorize.host": os.uname().nodename,
                                                  "tensorize.pid": str(os.getppid())}, run_name="live")
    with Tracker(True, uri, "live").run("mine", {}):
        pass
    assert client.get_run(live.info.run_id).info.status == "RUNNING"


def test_results_are_written_atomically(tmp_path):
    results = str(tmp_path / "results")
    append_results(results, "exp", [{"a": 1, "b": 2.0}])
    append_results(results, "exp", [{"a": 3, "b": 4.0}])
    assert pd.read_csv(os.path.join(results, "exp.csv"))["a"].tolist() == [1, 3]
    assert sorted(os.listdir(results)) == ["exp.csv", "exp.md"], "no temporary files are left behind"
    assert oct(os.stat(os.path.join(results, "exp.csv")).st_mode & 0o777) == "0o644"


def test_a_truncated_table_from_an_older_version_is_moved_aside(tmp_path, caplog):
    results = tmp_path / "results"
    results.mkdir()
    (results / "exp.csv").write_bytes(b'a,b\n1,2\n3,"unterminated')
    append_results(str(results), "exp", [{"a": 5, "b": 6}])
    assert pd.read_csv(results / "exp.csv")["a"].tolist() == [5]
    assert (results / "exp.csv.unreadable").exists() and "could not be read" in caplog.text


def _write_forever(path):
    i = 0
    while True:
        write_atomically(path, ("row\n" * 20000) + f"end {i}\n")
        i += 1


def test_a_writer_killed_mid_write_leaves_a_whole_file(tmp_path):
    path = str(tmp_path / "table.csv")
    write_atomically(path, "row\n" * 20000 + "end -1\n")
    ctx = multiprocessing.get_context("fork")
    for delay in (0.02, 0.07, 0.15):
        proc = ctx.Process(target=_write_forever, args=(path,))
        proc.start()
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(10)
        lines = open(path).read().splitlines()
        assert len(lines) == 20001 and lines[-1].startswith("end ")


def test_artifacts_go_beside_the_sqlite_store_not_into_the_working_folder(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    store, elsewhere = tmp_path / "store", tmp_path / "elsewhere"
    store.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    tracker = Tracker(True, f"sqlite:///{store / 'mlflow.db'}", "where artifacts go")
    with tracker.run("one", {"a": 1}):
        tracker.log_text("kernel", "kernel.ll")
    assert list((store / "mlruns" / "where_artifacts_go").glob("*/artifacts/kernel.ll"))
    assert not list(elsewhere.iterdir())
