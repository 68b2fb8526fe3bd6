"""``CostModel``: measured records in, scores out (higher = predicted faster); records kept per workload."""
from __future__ import annotations

import math
import os

import numpy as np

from tensorize.ir.structural import structural_hash

__all__ = ["CostModel", "RecordStore", "workload_key", "normalised_throughput"]


def workload_key(ctx) -> str:
    """``task_name:structural-hash`` of the context's module: the group of records one model compares."""
    cache = ctx.extra.get("_workload_key")
    if cache is not None and cache[0] is ctx.mod:
        return cache[1]
    key = f"{ctx.task_name}:{structural_hash(ctx.mod) & 0xFFFFFFFFFFFF:012x}"
    ctx.extra["_workload_key"] = (ctx.mod, key)
    return key


def normalised_throughput(run_secs: np.ndarray) -> np.ndarray:
    """``min(run_secs) / run_secs`` in [0, 1] (1: the best of the workload); failed (inf, nan, <= 0) = 0."""
    secs = np.asarray(run_secs, np.float64)
    ok = np.isfinite(secs) & (secs > 0)
    out = np.zeros(secs.shape, np.float64)
    if ok.any():
        out[ok] = secs[ok].min() / secs[ok]
    return out


class RecordStore:
    """Feature vectors and run times, grouped by workload key, in arrival order."""

    def __init__(self):
        self.features: dict[str, list] = {}
        self.secs: dict[str, list] = {}

    def add(self, key: str, features, run_secs) -> None:
        """Add measured times (NaN for failed runs) of a candidate to its record."""
        if len(features) != len(run_secs):
            raise ValueError(f"update got {len(features)} feature vectors but {len(run_secs)} run times; "
                             "pass one run time (inf for a failed candidate) per vector")
        vectors = [np.asarray(f, np.float32) for f in features]
        held = next((v[0].shape for v in self.features.values() if v), None)
        odd = next((v.shape for v in vectors if v.shape != (held or vectors[0].shape)), None)
        if odd is not None:
            raise ValueError(f"feature vectors of shape {odd} do not fit the model's records of shape "
                             f"{held or vectors[0].shape} (a model saved with another feature extractor or version?); "
                             "start from a fresh cost model")
        self.features.setdefault(key, []).extend(vectors)
        self.secs.setdefault(key, []).extend(float(s) if s is not None and not math.isnan(s) else math.inf
                                             for s in run_secs)

    def __len__(self) -> int:
        return sum(len(v) for v in self.secs.values())

    def count(self, key: str) -> int:
        """How many records of workload ``key`` the store holds."""
        return len(self.secs.get(key, ()))

    def drop(self, key: str) -> None:
        """Forget every record of workload ``key`` (no error when there is none)."""
        self.features.pop(key, None)
        self.secs.pop(key, None)

    def groups(self):
        """``(key, X: (n, d) float32, secs: (n,) float64)`` per workload, keys sorted."""
        for key in sorted(self.features):
            yield key, np.stack(self.features[key]), np.asarray(self.secs[key], np.float64)

    def to_arrays(self) -> dict:
        """The records as numpy arrays (for ``numpy.savez``)."""
        keys = sorted(self.features)
        if not keys:
            return {"rec_keys": np.array([], "U1"), "rec_sizes": np.zeros(0, np.int64),
                    "rec_x": np.zeros((0, 0), np.float32), "rec_secs": np.zeros(0)}
        return {"rec_keys": np.array(keys), "rec_sizes": np.array([len(self.secs[k]) for k in keys], np.int64),
                "rec_x": np.concatenate([np.stack(self.features[k]) for k in keys]),
                "rec_secs": np.concatenate([np.asarray(self.secs[k], np.float64) for k in keys])}

    def load_arrays(self, arrays) -> None:
        """Add the records saved by ``to_arrays``."""
        self.features, self.secs = {}, {}
        start = 0
        for key, size in zip(arrays["rec_keys"].tolist(), arrays["rec_sizes"].tolist()):
            self.add(str(key), list(arrays["rec_x"][start:start + size]), arrays["rec_secs"][start:start + size])
            start += size


class CostModel:
    """Base class. ``update`` adds measured records (``inf`` = failed) and retrains; ``predict`` scores
    feature vectors (higher = predicted faster); ``save``/``load`` write and read one ``.npz`` file
    (numpy arrays and the model's own text; nothing is unpickled). One model may learn from several
    workloads (``tune_graph`` shares one across a model's tasks; a saved model carries an earlier run's
    records into a new search): records are grouped by workload, and labels are relative within a group."""

    def update(self, ctx, features, run_secs) -> None:
        """Learn from measured candidates: their features and run times."""
        raise NotImplementedError

    def predict(self, ctx, features) -> np.ndarray:
        """Predicted scores of candidates from their features (higher is faster)."""
        raise NotImplementedError

    def records_of(self, ctx) -> int:
        """How many records of ``ctx``'s workload the model learns from (0 for a model that keeps none)."""
        return 0

    def forget(self, ctx) -> None:
        """Drop the records of ``ctx``'s workload (a resumed search adds them again from its database); the
        records of other workloads stay, and so does the trained model until the next ``update``."""

    def save(self, path: str) -> None:
        """Write the model to ``path``."""
        raise NotImplementedError

    def load(self, path: str) -> None:
        """Read a model written by ``save``."""
        raise NotImplementedError

    @staticmethod
    def _npz_path(path) -> str:
        path = os.fspath(path)
        return path if path.endswith(".npz") else path + ".npz"
