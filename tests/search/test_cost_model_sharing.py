"""One cost model across workloads: records kept per workload, a resumed search replaces its own records,
tune_graph shares one model among its tasks and saves it, and a saved model starts a later search."""
import numpy as np
import pytest

import search
from experiments.tuning import search_settings
from search.context import TuneContext
from search.cost_model import COST_MODELS, load_cost_model, workload_key
from search.cost_model.base import RecordStore
from tests.search.test_tune import HOST, gemm_func
from tests.search.test_tune_graph import _mlp


def _ctx(n, name="main"):
    return TuneContext.create(gemm_func(n), HOST, seed=0, task_name=name)


def test_record_store_counts_and_drops_one_workload():
    store = RecordStore()
    store.add("a", [np.zeros(3)] * 2, [1.0, 2.0])
    store.add("b", [np.ones(3)], [float("nan")])
    assert (store.count("a"), store.count("b"), store.count("c"), len(store)) == (2, 1, 0, 3)
    store.drop("a")
    store.drop("c")  # nothing to drop: no error
    assert [key for key, _, _ in store.groups()] == ["b"] and len(store) == 1
    with pytest.raises(ValueError, match="another feature extractor"):  # a saved model of another feature set
        store.add("d", [np.ones(5)], [1.0])
    assert len(store) == 1  # refused whole


def test_forget_keeps_the_other_workloads():
    model = COST_MODELS.create("lgbm_reg", seed=0)
    a, b = _ctx(16), _ctx(32)
    model.update(a, [np.array([i, 0], np.float32) for i in range(10)], [1.0 + i for i in range(10)])
    model.update(b, [np.array([0, i], np.float32) for i in range(12)], [1.0 + i for i in range(12)])
    assert (model.records_of(a), model.records_of(b)) == (10, 12)
    model.forget(a)
    assert (model.records_of(a), model.records_of(b)) == (0, 12)
    assert COST_MODELS.create("random").records_of(a) == 0  # keeps no records


def test_load_cost_model_round_trip_and_errors(tmp_path):
    model = COST_MODELS.create("lgbm_rank", seed=0)
    ctx = _ctx(16)
    X = [np.array([i, i % 3], np.float32) for i in range(30)]
    model.update(ctx, X, [1.0 + i for i in range(30)])
    model.save(tmp_path / "m.npz")
    loaded = load_cost_model(tmp_path / "m")
    assert type(loaded).__name__ == "LGBMRank" and loaded.records_of(ctx) == 30
    np.testing.assert_allclose(loaded.predict(ctx, X), model.predict(ctx, X))
    with pytest.raises(FileNotFoundError, match="no saved cost model"):
        load_cost_model(tmp_path / "missing.npz")
    np.savez(tmp_path / "odd.npz", kind=np.array("xgboost"))
    with pytest.raises(ValueError, match="no known cost model"):
        load_cost_model(tmp_path / "odd.npz")


def test_a_model_instance_learns_two_workloads_and_a_resume_does_not_double_records(tmp_path):
    model = COST_MODELS.create("lgbm_rank", seed=0)
    kw = dict(num_trials_per_iter=4, strategy="random", seed=0, progress=False, remeasure_top_k=0)
    search.tune_tir(gemm_func(32), HOST, str(tmp_path / "a"), max_trials_global=4, cost_model=model, **kw)
    search.tune_tir(gemm_func(48), HOST, str(tmp_path / "b"), max_trials_global=4, cost_model=model, **kw)
    a, b = _ctx(32), _ctx(48)
    assert (model.records_of(a), model.records_of(b)) == (4, 4)
    # resumed with the same model: the database's 4 records replace the model's, then 4 more are measured
    db = search.tune_tir(gemm_func(48), HOST, str(tmp_path / "b"), max_trials_global=8, cost_model=model, **kw)
    assert len(db) == 8 and (model.records_of(a), model.records_of(b)) == (4, 8)
    saved = load_cost_model(tmp_path / "b" / "cost_model.npz")  # every run leaves its model in its folder
    assert (saved.records_of(a), saved.records_of(b)) == (4, 8)


def test_tune_graph_shares_one_model_among_its_tasks(tmp_path):
    db = search.tune_graph(_mlp(), HOST, str(tmp_path), max_trials_global=6, num_trials_per_iter=3,
                           strategy="random", cost_model="lgbm_rank", seed=0)
    saved = load_cost_model(tmp_path / "cost_model.npz")
    sizes = sorted(saved.records.count(key) for key, _, _ in saved.records.groups())
    assert sizes == [3, 3] and db.graph_report["trials"] == 6  # both tasks' records in the one model


def test_hydra_warm_start_loads_the_saved_model(tmp_path):
    model = COST_MODELS.create("lgbm_reg", seed=0)
    model.update(_ctx(16), [np.array([i], np.float32) for i in range(10)], [1.0 + i for i in range(10)])
    model.save(tmp_path / "cost_model.npz")
    path = str(tmp_path / "cost_model.npz")
    settings = search_settings({"cost_model": {"name": "lgbm_reg", "warm_start": path}})
    assert settings["cost_model"].records_of(_ctx(16)) == 10
    assert search_settings({"cost_model": {"name": "lgbm_reg", "warm_start": None}})["cost_model"] == "lgbm_reg"
    with pytest.raises(ValueError, match="choose cost_model=lgbm_reg"):
        search_settings({"cost_model": {"name": "lgbm_rank", "warm_start": path}})
    assert workload_key(_ctx(16)) != workload_key(_ctx(32))
