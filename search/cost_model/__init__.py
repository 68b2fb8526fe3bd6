"""Cost models of the search: score candidates' feature vectors (higher = predicted faster).

``COST_MODELS``: ``"lgbm_rank"`` (LightGBM lambdarank, one query group per workload, relevance from
normalised-throughput bins), ``"lgbm_reg"`` (LightGBM regression on ``min_run_secs / run_secs``),
``"random"`` (uniform scores from ``ctx.rng``: the control).

>>> import numpy as np
>>> from search.context import TuneContext
>>> from tensorize.script import tir as T
>>> @T.prim_func
... def f(A: T.Buffer((4,), "float32")):
...     for i in range(4):
...         with T.block("A"):
...             vi = T.axis.spatial(4, i)
...             A[vi] = T.float32(0)
>>> ctx = TuneContext.create(f, "llvm -mcpu=haswell", seed=0)
>>> model = COST_MODELS.create("lgbm_reg", seed=0)
>>> X = [np.array([i, 0], np.float32) for i in range(40)]
>>> model.update(ctx, X, [1.0 + i for i in range(40)])    # larger first feature = slower
>>> s = model.predict(ctx, [np.array([2, 0], np.float32), np.array([30, 0], np.float32)])
>>> bool(s[0] > s[1])
True

A saved model (``save``, or the ``cost_model.npz`` a tuning run leaves in its folder) starts a new search with
what the earlier one learned: ``tune_tir(..., cost_model=load_cost_model("earlier/cost_model.npz"))``.
"""
from __future__ import annotations

import os

import numpy as np

from ..registry import Registry
from .base import CostModel, normalised_throughput, workload_key
from .lgbm import LGBMModel, LGBMRank, LGBMReg
from .random_model import RandomModel

__all__ = ["COST_MODELS", "CostModel", "LGBMModel", "LGBMRank", "LGBMReg", "RandomModel", "load_cost_model",
           "normalised_throughput", "workload_key"]

COST_MODELS = Registry("cost model")
COST_MODELS.register("lgbm_rank")(LGBMRank)
COST_MODELS.register("lgbm_reg")(LGBMReg)
COST_MODELS.register("random")(RandomModel)


def load_cost_model(path) -> CostModel:
    """The cost model saved at ``path`` (by ``CostModel.save``), of the kind it was saved as.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npz`` file written by ``save`` (the suffix may be left out).

    Returns
    -------
    CostModel
        With the saved records (and trained booster, for the LightGBM models).

    Raises
    ------
    FileNotFoundError
        When there is no such file.
    ValueError
        When the file names no registered cost model.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> COST_MODELS.create("lgbm_reg").save(path)
    >>> type(load_cost_model(path)).__name__
    'LGBMReg'
    """
    path = CostModel._npz_path(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no saved cost model at {path}; tuning runs leave one as cost_model.npz in "
                                "their folder")
    with np.load(path, allow_pickle=False) as data:
        kind = str(data["kind"]) if "kind" in data else ""
    if kind not in COST_MODELS.names():
        raise ValueError(f"{path} holds no known cost model (kind {kind!r}; known: {', '.join(COST_MODELS.names())})")
    model = COST_MODELS.create(kind)
    model.load(path)
    return model
