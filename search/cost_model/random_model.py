"""The control: uniform random scores from the context's random source."""
from __future__ import annotations

import numpy as np

from .base import CostModel

__all__ = ["RandomModel"]


class RandomModel(CostModel):
    """Scores uniform in [0, 1) drawn from ``ctx.rng``: the same seed gives the same scores.

    >>> import random
    >>> from types import SimpleNamespace
    >>> m = RandomModel()
    >>> a = m.predict(SimpleNamespace(rng=random.Random(3)), [np.zeros(4)] * 3)
    >>> b = m.predict(SimpleNamespace(rng=random.Random(3)), [np.zeros(4)] * 3)
    >>> a.shape, bool((a == b).all())
    ((3,), True)
    """

    def update(self, ctx, features, run_secs) -> None:
        """See ``CostModel.update``: only checks the lengths."""
        if len(features) != len(run_secs):
            raise ValueError(f"update got {len(features)} feature vectors but {len(run_secs)} run times")

    def predict(self, ctx, features) -> np.ndarray:
        """See ``CostModel.predict``: random scores."""
        return np.array([ctx.rng.random() for _ in range(len(features))], np.float64)

    def save(self, path) -> None:
        """See ``CostModel.save``."""
        np.savez(self._npz_path(path), kind=np.array("random"))

    def load(self, path) -> None:
        """See ``CostModel.load``."""
        with np.load(self._npz_path(path), allow_pickle=False) as data:
            if str(data["kind"]) != "random":
                raise ValueError(f"{path} holds a {data['kind']} cost model, not a random one")
