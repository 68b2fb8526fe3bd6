"""Cost models: they learn a known order, save and load exactly, and are deterministic."""
import math

import numpy as np
import pytest

from search.context import TuneContext
from search.cost_model import COST_MODELS, normalised_throughput, workload_key
from tensorize.script import tir as T


def workload(n):
    @T.prim_func
    def fill(A: T.Buffer((n,), "float32")):
        for i in range(n):
            with T.block("A"):
                vi = T.axis.spatial(n, i)
                A[vi] = T.float32(0)

    return fill


def ctx_of(n=4, seed=0):
    return TuneContext.create(workload(n), "llvm -mcpu=haswell", seed=seed, task_name=f"fill{n}")


def synthetic(n, seed, d=12):
    """Features with a known order: run time falls with x0 + 0.5 x1 (the other columns are noise);
    one in ten candidates failed (inf)."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)).astype(np.float32)
    secs = np.exp(-(3 * X[:, 0] + 1.5 * X[:, 1])) * 1e-3
    secs[rng.random(n) < 0.1] = np.inf
    return X, secs


def pairwise_accuracy(scores, secs):
    thr = np.where(np.isfinite(secs), 1 / np.where(np.isfinite(secs), secs, 1), 0)
    t = np.sign(thr[:, None] - thr[None, :])
    p = np.sign(scores[:, None] - scores[None, :])
    mask = np.triu(t != 0, 1)
    return (t[mask] == p[mask]).mean()


@pytest.mark.parametrize("name", ["lgbm_rank", "lgbm_reg"])
def test_models_rank_a_known_order_better_than_random(name):
    X, secs = synthetic(600, seed=1)
    accs = {}
    for model_name in (name, "random"):
        model, ctx = COST_MODELS.create(model_name), ctx_of()
        model.update(ctx, list(X[:400]), list(secs[:400]))
        accs[model_name] = pairwise_accuracy(model.predict(ctx, list(X[400:])), secs[400:])
    assert accs[name] > 0.75 and accs["random"] < 0.6, accs


def test_lgbm_learns_across_two_workloads_with_different_scales():
    model = COST_MODELS.create("lgbm_rank", seed=0)
    for n, scale in ((4, 1.0), (8, 100.0)):
        X, secs = synthetic(300, seed=n)
        model.update(ctx_of(n), list(X), list(secs * scale))
    assert sorted(len(v) for v in model.records.secs.values()) == [300, 300]
    # labels are normalised per workload: the 100x slower workload still has its top bins
    assert model._labels(np.asarray(model.records.secs[workload_key(ctx_of(8))])).max() == 15
    X, secs = synthetic(200, seed=99)
    assert pairwise_accuracy(model.predict(ctx_of(4), list(X)), secs) > 0.78


@pytest.mark.parametrize("name", ["lgbm_rank", "lgbm_reg", "random"])
def test_save_load_round_trip(name, tmp_path):
    X, secs = synthetic(200, seed=2)
    model = COST_MODELS.create(name)
    model.update(ctx_of(seed=5), list(X[:150]), list(secs[:150]))
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = COST_MODELS.create(name)
    loaded.load(path)
    np.testing.assert_array_equal(model.predict(ctx_of(seed=3), list(X[150:])),
                                  loaded.predict(ctx_of(seed=3), list(X[150:])))
    if name != "random":   # the records came back too: both retrain to the same model
        model.update(ctx_of(seed=7), list(X[150:]), list(secs[150:]))
        loaded.update(ctx_of(seed=7), list(X[150:]), list(secs[150:]))
        np.testing.assert_array_equal(model.predict(ctx_of(), list(X)), loaded.predict(ctx_of(), list(X)))


def test_loading_another_kind_of_model_says_so(tmp_path):
    X, secs = synthetic(50, seed=2)
    reg = COST_MODELS.create("lgbm_reg")
    reg.update(ctx_of(), list(X), list(secs))
    reg.save(tmp_path / "reg")
    with pytest.raises(ValueError, match="holds a lgbm_reg cost model; load it with that model"):
        COST_MODELS.create("lgbm_rank").load(tmp_path / "reg")


def test_random_model_is_seed_deterministic():
    model = COST_MODELS.create("random")
    feats = [np.zeros(3, np.float32)] * 20
    a, b = model.predict(ctx_of(seed=1), feats), model.predict(ctx_of(seed=1), feats)
    c = model.predict(ctx_of(seed=2), feats)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c) and ((a >= 0) & (a < 1)).all()


def test_lgbm_is_deterministic_given_the_seed():
    X, secs = synthetic(300, seed=4)
    preds = []
    for _ in range(2):
        model = COST_MODELS.create("lgbm_rank")
        model.update(ctx_of(seed=11), list(X), list(secs))
        preds.append(model.predict(ctx_of(), list(X)))
    np.testing.assert_array_equal(*preds)


def test_untrained_models_score_zero_and_bad_updates_are_refused():
    X, secs = synthetic(5, seed=0)
    model = COST_MODELS.create("lgbm_reg")
    model.update(ctx_of(), list(X), list(secs))          # below min_records: no training yet
    assert model.booster is None and (model.predict(ctx_of(), list(X)) == 0).all()
    with pytest.raises(ValueError, match="2 feature vectors but 1 run times"):
        model.update(ctx_of(), list(X[:2]), [1.0])


def test_labels_normalise_throughput_per_workload():
    np.testing.assert_allclose(normalised_throughput([2e-3, 1e-3, math.inf, 4e-3]), [0.5, 1, 0, 0.25])
    rank = COST_MODELS.create("lgbm_rank", bins=16)
    np.testing.assert_array_equal(rank._labels(np.array([1e-3, 1.5e-3, math.inf, 1e3])), [15, 10, 0, 0])
    assert workload_key(ctx_of(4)) != workload_key(ctx_of(8)) and workload_key(ctx_of(4)).startswith("fill4:")


def test_retraining_on_2000_records_is_fast():
    X, secs = synthetic(2000, seed=5, d=150)
    model = COST_MODELS.create("lgbm_rank")
    model.update(ctx_of(), list(X[:10]), list(secs[:10]))   # imports LightGBM
    model.update(ctx_of(), list(X[10:]), list(secs[10:]))
    assert model.last_fit_secs < 10, "the target is < 1 s on an idle machine (see the benchmark)"
