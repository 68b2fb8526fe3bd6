"""The measurement child process: a request's timeout counts its own work, not the process's start."""
import time

from search.measure.process import WorkerProcess


def test_slow_start_does_not_count_against_a_request_timeout(tmp_path):
    # sitecustomize runs at interpreter start, before the worker's imports: a start slower than the timeout
    (tmp_path / "sitecustomize.py").write_text("import time\ntime.sleep(3)\n")
    with WorkerProcess("slow", env={"PYTHONPATH": str(tmp_path)}) as worker:
        start = time.perf_counter()
        assert worker.call("ping", None, timeout=1) == ("ok", "pong")
        assert time.perf_counter() - start >= 3
        # once ready, the timeout holds for the request itself
        assert worker.call("ping", None, timeout=1) == ("ok", "pong")


def test_a_restarted_worker_is_waited_for_again(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("import time\ntime.sleep(2)\n")
    with WorkerProcess("restart", env={"PYTHONPATH": str(tmp_path)}) as worker:
        assert worker.call("ping", None, timeout=1)[0] == "ok"
        worker.restart()
        assert worker.call("ping", None, timeout=1) == ("ok", "pong")


def test_a_worker_that_cannot_start_is_reported_dead(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("import os\nos._exit(7)\n")
    with WorkerProcess("broken", env={"PYTHONPATH": str(tmp_path)}) as worker:
        reply = worker.call("ping", None, timeout=5)
    assert reply[0] == "dead" and "exited with code 7" in reply[1]


def test_builder_workers_run_on_the_cpus_they_are_given(tmp_path):
    """``LocalBuilder(cpus=...)``: a caller pinned to a few cores for timing gives its builders other CPUs."""
    import os

    import pytest

    from search.measure.builder import LocalBuilder

    mine = sorted(os.sched_getaffinity(0))
    with LocalBuilder(str(tmp_path), max_workers=1, cpus=mine[-1:]) as builder:
        assert builder._workers[0].call("cpus", None, timeout=60) == ("ok", mine[-1:])
    with LocalBuilder(str(tmp_path), max_workers=1) as builder:  # default: this process's CPUs
        assert builder._workers[0].call("cpus", None, timeout=60) == ("ok", mine)
    with pytest.raises(ValueError, match="at least one CPU"):
        LocalBuilder(str(tmp_path), cpus=[])
