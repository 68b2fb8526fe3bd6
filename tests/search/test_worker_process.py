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
