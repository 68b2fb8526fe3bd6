"""Ray on a loopback cluster (a head and two added nodes): the search's trials through Ray builders and
runners are all recorded, tasks land on the node whose resources they ask for, and a worker or a node
that dies mid-measurement loses no record (its candidate is recorded as failed, with the reason), also when a
worker is SIGKILLed in the middle of a tuning run."""
import os
import signal
import threading
import time

import psutil
import pytest

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
ray = pytest.importorskip("ray")

from ray.cluster_utils import Cluster  # noqa: E402

import search  # noqa: E402
from search.context import TuneContext  # noqa: E402
from search.measure import MeasureCandidate, RayBuilder, RayRunner  # noqa: E402
from search.measure.process import project_root  # noqa: E402
from tensorize.ir import IRModule  # noqa: E402
from tensorize.target import host_cpu  # noqa: E402
from tests.search.test_measure import TARGET, endless, gemm, segfault, tiled  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif("avx2" not in host_cpu()[1], reason="the measured code targets haswell (AVX2)")]
X86 = {"resources": {"x86": 1}}


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "node_ip_address": "127.0.0.1",
                                                            "include_dashboard": False})
    x86 = cluster.add_node(num_cpus=1, resources={"x86": 1}, node_ip_address="127.0.0.1")
    cluster.add_node(num_cpus=1, resources={"arm64": 1}, node_ip_address="127.0.0.1")
    path = os.pathsep.join(filter(None, [project_root(), os.environ.get("PYTHONPATH", "")]))
    ray.init(address=cluster.address, _node_ip_address="127.0.0.1", runtime_env={"env_vars": {"PYTHONPATH": path}},
             log_to_driver=False)
    yield cluster, x86
    ray.shutdown()
    cluster.shutdown()


def test_tuning_through_ray_records_every_trial(cluster, tmp_path):
    db = search.tune_tir(gemm, TARGET, str(tmp_path), max_trials_global=4, num_trials_per_iter=4,
                         cost_model="random", strategy="random", seed=0, builder="ray", runner="ray",
                         builder_config={"address": cluster[0].address, "resources": X86},
                         runner_config={"address": cluster[0].address, "resources": X86, "repeat": 2,
                                        "min_repeat_ms": 2},
                         progress=False)
    records = db.get_all_tuning_records()
    assert len(records) >= 4
    assert db.tuning_report.valid >= 1 and search.compile_tir(db, gemm, TARGET) is not None


def _kill_first_measurement(stop: threading.Event, killed: list) -> None:
    """SIGKILL the first Ray worker seen measuring a candidate (its process title is ``ray::_run_task``) among
    the processes of this test's cluster (descendants of this process)."""
    while not stop.is_set() and not killed:
        for proc in psutil.Process().children(recursive=True):
            try:
                cmdline = proc.cmdline()
            except psutil.Error:
                continue
            if cmdline and cmdline[0].startswith("ray::_run_task"):
                try:
                    os.kill(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                killed.append(proc.pid)
                return
        time.sleep(0.05)


def test_a_worker_killed_mid_measurement_is_recorded_with_the_reason(cluster, tmp_path):
    """Tuning through Ray while the worker measuring the first candidate is SIGKILLed: every trial is in the
    database, the killed one as a failure whose error says the worker crashed, and the rest are measured."""
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_first_measurement, args=(stop, killed))
    killer.start()
    try:
        # each measurement lasts at least 2 x 1.5 s, so the killer finds it running
        db = search.tune_tir(gemm, TARGET, str(tmp_path), max_trials_global=3, num_trials_per_iter=3,
                             cost_model="random", strategy="random", seed=1, builder="ray", runner="ray",
                             builder_config={"address": cluster[0].address, "resources": X86},
                             runner_config={"address": cluster[0].address, "resources": X86, "repeat": 2,
                                            "min_repeat_ms": 1500, "timeout_s": 60},
                             progress=False, remeasure_top_k=0)
    finally:
        stop.set()
        killer.join()
    assert len(killed) == 1
    records = db.get_all_tuning_records()
    assert len(records) == 3
    crashed = [r for r in records if r.error_kind == "crash"]
    assert len(crashed) == 1 and crashed[0].run_secs is None
    error = crashed[0].error
    assert error.startswith("the candidate crashed") and "worker" in error.lower(), error
    assert all(r.run_secs and min(r.run_secs) > 0 for r in records if r.error_kind is None)
    assert db.tuning_report.failed == {"crash": 1} and db.tuning_report.valid == 2


def test_a_dead_worker_and_a_dead_node_lose_no_record(cluster, tmp_path):
    ctx = TuneContext.create(gemm, TARGET)
    candidates = [MeasureCandidate(tiled(8, 8, False)), MeasureCandidate(IRModule({"main": segfault})),
                  MeasureCandidate(tiled(16, 8, False))]
    with RayBuilder(str(tmp_path / "b"), address=cluster[0].address, resources=X86) as builder, \
            RayRunner(str(tmp_path / "r"), timeout_s=60, repeat=2, min_repeat_ms=2, resources=X86) as runner:
        builds = builder.build(candidates, ctx.target)
        assert builder.placements == [cluster[1].node_id] * 3
        results = runner.run(ctx, builds)
        # the segfault kills its worker mid-measurement: a record with the reason, and the next one runs
        assert [r.error_kind for r in results] == [None, "crash", None]
        assert "crash" in results[1].error

        (endless_build,) = builder.build([MeasureCandidate(IRModule({"main": endless}))], ctx.target)
        got = []
        thread = threading.Thread(target=lambda: got.extend(runner.run(ctx, [endless_build])))
        thread.start()
        time.sleep(5)  # the endless candidate is being measured on the x86 node: the node goes away
        cluster[0].remove_node(cluster[1])
        thread.join(120)
        assert not thread.is_alive() and len(got) == 1
        assert got[0].run_secs is None and got[0].error_kind in ("crash", "run", "timeout") and got[0].error

