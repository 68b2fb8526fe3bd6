"""``runner=ray`` through the harness: Hydra composes the Ray group, the job builds and measures as Ray tasks and
replays the search's samples as Ray tasks on an embedded loopback Ray, and the tuned row is correct."""
import os

import pytest
from hydra import compose, initialize_config_dir

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
ray = pytest.importorskip("ray")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def no_ray_left():
    yield
    ray.shutdown()


def test_runner_ray_group_composes():
    with initialize_config_dir(config_dir=os.path.join(ROOT, "configs"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=["+experiment=gmm", "runner=ray"])
    assert cfg.runner.measure == "ray" and cfg.runner.replay == "ray" and cfg.runner.address is None
    assert cfg.runner.emulation.emulator == "auto"


@pytest.mark.slow
def test_a_suite_job_on_ray(tmp_path, no_ray_left):
    from omegaconf import OmegaConf

    from experiments.driver import run_experiment
    from search.database import Database

    with initialize_config_dir(config_dir=os.path.join(ROOT, "configs"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[
            "+experiment=gmm", "workload.shape=small", "runner=ray", "runner.number=2", "runner.repeat=2",
            "runner.progress=false", "tracking=off", "search=random", "search.trials=4", "search.trials_per_iter=4",
            "cost_model=random", "experiment.schedules=[tuned]", "experiment.baselines=[numpy]"])
    rows = run_experiment(OmegaConf.to_container(cfg, resolve=True), str(tmp_path))
    assert [r["schedule"] for r in rows] == ["tuned"]
    assert rows[0]["trials"] == 4 and rows[0]["valid_trials"] >= 1
    assert rows[0]["max_abs_err"] < 1e-3 and rows[0]["latency_ms"] > 0
    assert ray.is_initialized()  # the embedded Ray the job started (the fixture shuts it down)
    (db_path,) = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path / "tuning") for f in fs
                  if f == "database.jsonl"]
    assert len(Database(db_path).get_all_tuning_records()) >= 4
