"""LightGBM cost models: ``"lgbm_rank"`` (lambdarank, one query group per workload) and ``"lgbm_reg"``
(regression on the workload-normalised throughput ``min_run_secs / run_secs``, failed = 0).

Both keep every record, retrain from scratch on each ``update`` (small, fast boosters pinned to two
threads) and predict with the booster; before the first training they score everything 0.
"""
from __future__ import annotations

import json
import logging
import time

import numpy as np

from .base import CostModel, RecordStore, normalised_throughput, workload_key

__all__ = ["LGBMModel", "LGBMRank", "LGBMReg"]

logger = logging.getLogger(__name__)

_QUERY = 128   # a workload's records are shuffled and cut into lambdarank queries of this many


class LGBMModel(CostModel):
    """Shared machinery; subclasses say how records become labels and which estimator fits them.

    Parameters
    ----------
    n_estimators, num_leaves, learning_rate, min_child_samples : LightGBM settings (few, small trees).
    max_bin : int
        Histogram bins per feature (63 rather than LightGBM's 255: fits twice as fast, same ranking).
    n_jobs : int
        Threads LightGBM may use, pinned. 1 by default: with 2 threads on 2 busy cores LightGBM's
        spinning OpenMP workers made a 2,000-record fit take 18 s instead of 0.8 s.
    min_records : int
        No training below this many records (predictions stay 0).
    seed : int or None
        LightGBM's seed; None draws one from ``ctx.rng`` at each retraining.
    """

    kind = "lgbm"

    def __init__(self, n_estimators: int = 50, num_leaves: int = 31, learning_rate: float = 0.1,
                 min_child_samples: int = 5, max_bin: int = 63, n_jobs: int = 1, min_records: int = 8,
                 seed: int | None = None):
        self.params = dict(n_estimators=n_estimators, num_leaves=num_leaves, learning_rate=learning_rate,
                           min_child_samples=min_child_samples, max_bin=max_bin, n_jobs=n_jobs, subsample=1.0,
                           colsample_bytree=1.0, deterministic=True, force_row_wise=True, verbose=-1)
        self.min_records = min_records
        self.seed = seed
        self.records = RecordStore()
        self.booster = None
        self.last_fit_secs = 0.0

    # -- subclasses ------------------------------------------------------------------------------
    def _fit(self, X, y, group_sizes, seed):
        raise NotImplementedError

    def _labels(self, secs: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # -- API -------------------------------------------------------------------------------------
    def update(self, ctx, features, run_secs) -> None:
        """Add records of ``ctx``'s workload and retrain on all records."""
        self.records.add(workload_key(ctx), features, run_secs)
        seed = self.seed if self.seed is not None else ctx.rng.randrange(1 << 31)
        self.retrain(seed)

    def records_of(self, ctx) -> int:
        """See ``CostModel.records_of``."""
        return self.records.count(workload_key(ctx))

    def forget(self, ctx) -> None:
        """See ``CostModel.forget``."""
        self.records.drop(workload_key(ctx))

    def retrain(self, seed: int = 0) -> None:
        """Fit a new booster on every record (skipped below ``min_records`` or with one distinct label)."""
        xs, ys, sizes = [], [], []
        for _key, X, secs in self.records.groups():
            xs.append(X)
            ys.append(self._labels(secs))
            sizes.append(len(secs))
        if not xs or sum(sizes) < self.min_records:
            return
        X, y = np.concatenate(xs), np.concatenate(ys)
        if np.unique(y).size < 2:
            logger.debug("all %d records have the same label; keeping the previous model", len(y))
            return
        start = time.perf_counter()
        self.booster = self._fit(X, y, sizes, seed)
        self.last_fit_secs = time.perf_counter() - start
        logger.debug("%s retrained on %d records in %.3f s", self.registered_name, len(y), self.last_fit_secs)

    def predict(self, ctx, features) -> np.ndarray:
        """See ``CostModel.predict``: the gradient-boosted model's scores (random before the first training)."""
        if len(features) == 0:
            return np.zeros(0)
        if self.booster is None:
            return np.zeros(len(features))
        X = np.stack([np.asarray(f, np.float32) for f in features])
        return np.asarray(self.booster.predict(X, num_threads=self.params["n_jobs"]), np.float64)

    def save(self, path) -> None:
        """One ``.npz``: the booster's text model, the records and the settings."""
        model_text = self.booster.model_to_string() if self.booster is not None else ""
        np.savez(self._npz_path(path), kind=np.array(self.registered_name), model_text=np.array(model_text),
                 settings=np.array(json.dumps({"params": self.params, "min_records": self.min_records,
                                               "seed": self.seed})),
                 **self.records.to_arrays())

    def load(self, path) -> None:
        """See ``CostModel.load``."""
        import lightgbm as lgb

        with np.load(self._npz_path(path), allow_pickle=False) as data:
            if str(data["kind"]) != self.registered_name:
                raise ValueError(f"{path} holds a {data['kind']} cost model; load it with that model, "
                                 f"not {self.registered_name}")
            settings = json.loads(str(data["settings"]))
            self.params, self.min_records, self.seed = settings["params"], settings["min_records"], settings["seed"]
            text = str(data["model_text"])
            self.booster = lgb.Booster(model_str=text) if text else None
            self.records.load_arrays(data)


class LGBMRank(LGBMModel):
    """LambdaRank over query groups of one workload; relevance = normalised throughput in ``bins`` bins."""

    def __init__(self, bins: int = 16, query_size: int = _QUERY, **kwargs):
        super().__init__(**kwargs)
        self.bins = bins
        self.query_size = query_size

    def _labels(self, secs):
        return np.minimum(self.bins - 1, np.floor(normalised_throughput(secs) * self.bins)).astype(np.int32)

    def _fit(self, X, y, group_sizes, seed):
        import lightgbm as lgb

        # queries of ``query_size`` records of one workload, drawn at random (seeded): small queries
        # ranked better than one query per workload in trials (and LightGBM caps a query's size)
        rng = np.random.default_rng(seed)
        order, groups, start = [], [], 0
        for size in group_sizes:
            order.append(start + rng.permutation(size))
            start += size
            while size > 0:
                groups.append(min(size, self.query_size))
                size -= groups[-1]
        order = np.concatenate(order)
        X, y = X[order], y[order]
        # every pair of a query counts (LightGBM's default looks only at the top 30 of each query)
        params = {"objective": "lambdarank", "lambdarank_truncation_level": self.query_size, **self.params}
        model = lgb.LGBMRanker(random_state=seed,
                               label_gain=[float(2 ** i - 1) for i in range(self.bins)], **params)
        model.fit(X, y, group=groups)
        return model.booster_


class LGBMReg(LGBMModel):
    """L2 regression on ``min_run_secs / run_secs`` of the workload (failed = 0)."""

    def _labels(self, secs):
        return normalised_throughput(secs)

    def _fit(self, X, y, group_sizes, seed):
        import lightgbm as lgb

        model = lgb.LGBMRegressor(objective="regression", random_state=seed, **self.params)
        model.fit(X, y)
        return model.booster_
