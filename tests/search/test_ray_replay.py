"""Sketch sampling and evolutionary scoring as Ray tasks: the Ray replay pool gives the local pool's results,
and a search whose replays run on Ray proposes the same programs as one whose replays run in forked processes."""
import json
import os

import numpy as np
import pytest

# Loopback-only Ray: read when ray is imported, so set before.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
ray = pytest.importorskip("ray")

import search  # noqa: E402
from search.context import TuneContext  # noqa: E402
from search.feature import FEATURES  # noqa: E402
from search.measure.process import project_root  # noqa: E402
from search.postproc import default_postprocs  # noqa: E402
from search.space_generator import PostOrderApply, replay_candidate  # noqa: E402
from search.strategy import EvolutionarySearch, SearchSpace  # noqa: E402
from search.strategy.parallel import RayReplayPool, ReplayPool, make_replay_pool  # noqa: E402
from tensorize.target import Target  # noqa: E402
from tests.search.test_tune import HOST, SMALL, _keys, gemm_func  # noqa: E402


@pytest.fixture(scope="module")
def embedded_ray():
    path = os.pathsep.join(filter(None, [project_root(), os.environ.get("PYTHONPATH", "")]))
    # "local": never join a cluster another test process started on this machine (ray.init would by default)
    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             runtime_env={"env_vars": {"PYTHONPATH": path}}, log_to_driver=False)
    yield
    ray.shutdown()


def _space(ctx):
    return SearchSpace(PostOrderApply().generate_design_space(ctx), default_postprocs(ctx), {}, replay_candidate)


def test_ray_pool_replays_as_the_forked_pool(embedded_ray):
    ctx = TuneContext.create(gemm_func(64), Target(HOST), seed=0)
    space, features = _space(ctx), FEATURES.create("per_store")
    jobs = [(space.sketches[i % len(space.sketches)].trace, True, 1000 + i) for i in range(12)]
    jobs.append((jobs[0][0].as_json(), False, 5))  # a kept trace (the sketch itself, unsampled: invalid or not)
    local = ReplayPool(ctx, space, features, workers=2)
    remote = make_replay_pool(ctx, space, features, workers=3, backend="ray")
    try:
        assert isinstance(remote, RayReplayPool) and remote.workers == 3
        got_local, got_ray = local.run(jobs), remote.run(jobs)
    finally:
        local.close()
        remote.close()
    assert len(got_ray) == len(jobs) and all(sch is None for _, sch in got_ray)
    valid = 0
    for (a, _), (b, _) in zip(got_local, got_ray):
        assert (a.key, a.reason) == (b.key, b.reason)
        assert json.dumps(a.trace_json) == json.dumps(b.trace_json)
        if a.features is not None:
            valid += 1
            np.testing.assert_array_equal(a.features, b.features)
    assert valid >= 6  # most samples of a GEMM are valid programs
    assert len({r.key for r, _ in got_ray if r.key is not None}) > 1  # the seeds gave different programs
    with pytest.raises(RuntimeError, match="closed"):
        remote.run(jobs[:1])


def test_unknown_backend_names_the_choices():
    with pytest.raises(ValueError, match="unknown replay backend 'dask'; choose one of: local, ray"):
        make_replay_pool(None, None, backend="dask")


@pytest.mark.slow
def test_search_on_ray_proposes_what_the_local_search_proposes(embedded_ray, tmp_path):
    """The first run replays in forked workers and measures; the second replays as Ray tasks and is given the
    first run's times (the "replay" runner): the same programs, in the same order."""
    func = gemm_func(64)
    first = search.tune_tir(func, HOST, str(tmp_path / "a"), max_trials_global=8, num_trials_per_iter=4,
                            strategy=EvolutionarySearch(**SMALL, num_workers=2), seed=11, progress=False,
                            remeasure_top_k=0)
    on_ray = EvolutionarySearch(**SMALL, num_workers=2)
    on_ray.replay_backend = "ray"
    second = search.tune_tir(func, HOST, str(tmp_path / "b"), max_trials_global=8, num_trials_per_iter=4,
                             strategy=on_ray, seed=11, progress=False, remeasure_top_k=0, builder="replay",
                             runner="replay", runner_config={"database": first.path},
                             builder_config={"database": first.path})
    assert isinstance(on_ray.sampler.pool, RayReplayPool)
    assert len(_keys(first)) == 8 and _keys(first) == _keys(second)
