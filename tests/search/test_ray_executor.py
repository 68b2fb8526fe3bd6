"""The Ray builder and runner on a loopback cluster: same verdicts as the local executor, placement by resources."""
import os

import pytest

# Loopback-only Ray: read when ray is imported, so set before.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
ray = pytest.importorskip("ray")

from ray.cluster_utils import Cluster  # noqa: E402

from search.context import TuneContext  # noqa: E402
from search.measure import (BUILDERS, RUNNERS, LocalBuilder, LocalRunner, MeasureCandidate, RayBuilder,  # noqa: E402
                            RayRunner)
from search.measure.process import project_root  # noqa: E402
from search.measure.ray_executor import placement  # noqa: E402
from tensorize.target import Target, host_cpu  # noqa: E402
from tests.search.test_measure import TARGET, gemm, tiled, wrong  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif("avx2" not in host_cpu()[1], reason="the measured code targets haswell (AVX2)")]


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "node_ip_address": "127.0.0.1",
                                                            "include_dashboard": False})
    arm = cluster.add_node(num_cpus=1, resources={"arm64": 1}, node_ip_address="127.0.0.1")
    path = os.pathsep.join(filter(None, [project_root(), os.environ.get("PYTHONPATH", "")]))
    ray.init(address=cluster.address, _node_ip_address="127.0.0.1", runtime_env={"env_vars": {"PYTHONPATH": path}},
             log_to_driver=False)
    yield cluster, arm.node_id
    ray.shutdown()
    cluster.shutdown()


def test_ray_and_local_executors_agree(cluster, tmp_path):
    ctx = TuneContext.create(gemm, TARGET)
    candidates = [MeasureCandidate(tiled(16, 32, True)), MeasureCandidate(wrong())]
    with RayBuilder(str(tmp_path / "ray_build"), address=cluster[0].address) as builder, \
            RayRunner(str(tmp_path / "ray_run"), timeout_s=20, repeat=2, min_repeat_ms=2) as runner:
        ray_builds = builder.build(candidates, ctx.target)
        assert all(b.ok and os.path.getsize(b.artifact) > 0 for b in ray_builds)
        ray_results = runner.run(ctx, ray_builds)
    with LocalBuilder(str(tmp_path / "build")) as builder, \
            LocalRunner(str(tmp_path / "run"), timeout_s=20, repeat=2, min_repeat_ms=2) as runner:
        local_results = runner.run(ctx, builder.build(candidates, ctx.target))
    assert [r.error_kind for r in ray_results] == [r.error_kind for r in local_results] == [None, "wrong_output"]
    assert len(ray_results[0].run_secs) == 2 and all(s > 0 for s in ray_results[0].run_secs)


def test_aarch64_builds_go_to_the_arm64_node(cluster, tmp_path):
    aarch64 = Target("llvm -mtriple=aarch64-linux-gnu -mattr=+neon")
    assert placement(aarch64, exclusive=True) == {"resources": {"arm64": 1}}
    assert placement(Target("llvm"), exclusive=True) == {}
    if not __import__("shutil").which("aarch64-linux-gnu-gcc"):
        pytest.skip("linking an aarch64 library needs aarch64-linux-gnu-gcc")
    builder = BUILDERS.create("ray", work_dir=str(tmp_path))
    assert isinstance(builder, RayBuilder) and isinstance(RUNNERS.create("ray"), RayRunner)
    results = builder.build([MeasureCandidate(tiled(8, 8, False))] * 2, aarch64)
    assert all(r.ok for r in results), results
    with open(results[0].artifact, "rb") as f:
        header = f.read(20)
    assert header[:4] == b"\x7fELF" and int.from_bytes(header[18:20], "little") == 183  # EM_AARCH64
    assert builder.placements == [cluster[1]] * 2


def test_the_embedded_ray_starts_its_own_instance_beside_another_cluster(cluster):
    """Without an address, ``ray.init`` joins the latest cluster started on the machine (another job's) and then
    refuses ``num_cpus``: the embedded Ray asks for a new local instance."""
    import subprocess
    import sys

    code = ("from search.measure.ray_executor import connect; connect(num_cpus=1); import ray; "
            "print(ray.get_runtime_context().gcs_address); ray.shutdown()")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [project_root(), os.environ.get("PYTHONPATH")]))}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] != cluster[0].address
