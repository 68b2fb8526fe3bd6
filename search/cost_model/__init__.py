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
"""
from __future__ import annotations

from ..registry import Registry
from .base import CostModel, normalised_throughput, workload_key
from .lgbm import LGBMModel, LGBMRank, LGBMReg
from .random_model import RandomModel

__all__ = ["COST_MODELS", "CostModel", "LGBMModel", "LGBMRank", "LGBMReg", "RandomModel",
           "normalised_throughput", "workload_key"]

COST_MODELS = Registry("cost model")
COST_MODELS.register("lgbm_rank")(LGBMRank)
COST_MODELS.register("lgbm_reg")(LGBMReg)
COST_MODELS.register("random")(RandomModel)
