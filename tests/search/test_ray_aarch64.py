"""AArch64 measurement through Ray: on a loopback cluster whose added node declares ``{"arm64": 1}`` (an x86
machine, so it emulates), a tiny GEMM is tuned for an AArch64 target; builds and runs land on that node, the
candidates run under qemu-user against the reference, and the records hold their times."""
import math
import os

import numpy as np
import pytest

# Loopback-only Ray: read when ray is imported, so set before.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
ray = pytest.importorskip("ray")

from ray.cluster_utils import Cluster  # noqa: E402

import search  # noqa: E402
import tensorize as tvm  # noqa: E402
from search.context import TuneContext  # noqa: E402
from search.database import target_key  # noqa: E402
from search.measure import MeasureCandidate, RayBuilder, RayRunner  # noqa: E402
from search.measure.cross import emulated_module, read_sidecars  # noqa: E402
from search.measure.process import project_root  # noqa: E402
from tensorize.runtime.aarch64 import INSTALL_HINT, host_is_aarch64, run_aarch64, tools_available  # noqa: E402
from tensorize.target import Target  # noqa: E402
from tests.search.test_tune import gemm_func  # noqa: E402

ARM = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon"
pytestmark = [pytest.mark.qemu,
              pytest.mark.skipif(not tools_available(), reason=f"needs qemu and an aarch64 cross compiler: "
                                                               f"{INSTALL_HINT}"),
              pytest.mark.skipif(host_is_aarch64(), reason="checks emulation, on a machine that is not AArch64")]


@pytest.fixture(scope="module")
def arm_cluster():
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "node_ip_address": "127.0.0.1",
                                                            "include_dashboard": False})
    arm = cluster.add_node(num_cpus=1, resources={"arm64": 1}, node_ip_address="127.0.0.1")
    path = os.pathsep.join(filter(None, [project_root(), os.environ.get("PYTHONPATH", "")]))
    ray.init(address=cluster.address, _node_ip_address="127.0.0.1", runtime_env={"env_vars": {"PYTHONPATH": path}},
             log_to_driver=False)
    yield cluster, arm.node_id
    ray.shutdown()
    cluster.shutdown()


def test_an_emulated_candidate_is_checked_and_a_wrong_one_caught(arm_cluster, tmp_path):
    func = gemm_func(16)
    ctx = TuneContext.create(func, Target(ARM))
    sch = tvm.tir.Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.reorder(i, k, j)
    with RayBuilder(str(tmp_path / "b"), address=arm_cluster[0].address) as builder, \
            RayRunner(str(tmp_path / "r"), timeout_s=60, repeat=2, min_repeat_ms=1) as runner:
        (built,) = builder.build([MeasureCandidate(sch.mod)], ctx.target)
        assert built.ok and builder.placements == [arm_cluster[1]]
        object_code, metadata = read_sidecars(built.artifact)
        assert object_code[:4] == b"\x7fELF" and emulated_module(object_code, metadata).entry_name == "main"
        (result,) = runner.run(ctx, [built])
        assert result.error is None and len(result.run_secs) == 2 and all(s > 0 for s in result.run_secs)
        # a program computing something else in place of the candidate: the check against the reference catches it
        (wrong,) = builder.build([MeasureCandidate(_doubled())], ctx.target)
        (bad,) = runner.run(ctx, [wrong])
        assert bad.error_kind == "wrong_output" and "differs from the reference" in bad.error


def _doubled():
    """A 16^3 GEMM whose output is doubled: a wrong candidate of ``gemm_func(16)``."""
    from tensorize import te

    a = te.placeholder((16, 16), "float32", name="A")
    b = te.placeholder((16, 16), "float32", name="B")
    k = te.reduce_axis((0, 16), name="k")
    c = te.compute((16, 16), lambda i, j: te.sum(a[i, k] * b[k, j] * 2.0, axis=k), name="C")
    return te.create_prim_func([a, b, c])


@pytest.mark.slow
def test_tuning_a_gemm_for_aarch64_through_ray_on_an_arm64_node(arm_cluster, tmp_path):
    func = gemm_func(32)
    builder = RayBuilder(str(tmp_path / "build"), address=arm_cluster[0].address)
    db = search.tune_tir(func, ARM, str(tmp_path), max_trials_global=4, num_trials_per_iter=4, strategy="random",
                         cost_model="random", seed=0, builder=builder, runner="ray",
                         runner_config={"address": arm_cluster[0].address, "repeat": 2, "min_repeat_ms": 1,
                                        "timeout_s": 60},
                         progress=False, remeasure_top_k=1)
    builder.close()
    assert set(builder.placements) == {arm_cluster[1]}  # every build on the node declaring arm64
    records = db.get_all_tuning_records()
    assert len(records) == 5  # four trials and the best one measured again
    assert {r.target_key for r in records} == {target_key(Target(ARM))}
    valid = [r for r in records if r.error is None]
    assert len(valid) >= 3, [r.error for r in records]
    assert all(len(r.run_secs) == 2 and min(r.run_secs) > 0 for r in valid)
    assert math.isfinite(db.tuning_report.best_secs) and db.tuning_report.valid >= 3
    # the best record replays into a program that, built for AArch64 and run under qemu, equals numpy
    sch = search.compile_tir(db, func, ARM)
    assert sch is not None
    rt = tvm.build(sch.mod, target=ARM)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((32, 32)).astype("float32") for _ in range(2))
    c = np.zeros((32, 32), "float32")
    run_aarch64(rt, "main", a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
