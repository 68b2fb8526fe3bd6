"""``FeatureExtractor``: candidates to feature vectors, cached by the scheduled module's structural hash."""
from __future__ import annotations

import logging
from collections import OrderedDict

import numpy as np

from tensorize.ir.structural import structural_hash

from .names import NUM_FEATURES, feature_names
from .per_store import program_features
from tensorize.transform.split_layout_rewrite import split_layout_rewrite
from .program import collect_program, lower_for_features

__all__ = ["FeatureExtractor", "PerStoreFeature"]

logger = logging.getLogger(__name__)


class FeatureExtractor:
    """Base class: ``extract(ctx, schedules) -> list[np.ndarray]``, one float32 vector per schedule."""

    def extract(self, ctx, schedules) -> list[np.ndarray]:
        """One feature matrix per schedule (one row per buffer store)."""
        raise NotImplementedError

    def extract_keyed(self, ctx, schedules, keys) -> list[np.ndarray]:
        """As ``extract``, for callers that already know each module's structural hash (``keys``,
        one per schedule): an extractor that caches by it need not hash again."""
        return self.extract(ctx, schedules)

    @staticmethod
    def feature_names() -> list[str]:
        """The names of the feature columns."""
        return feature_names()


class PerStoreFeature(FeatureExtractor):
    """Per-store features summed over the stores of a candidate (see ``search.feature``).

    Parameters
    ----------
    cache_size : int
        How many vectors to keep, keyed by the structural hash of the scheduled module (0: no cache).
    """

    def __init__(self, cache_size: int = 8192):
        self.cache_size = cache_size
        self._cache: OrderedDict = OrderedDict()

    def extract(self, ctx, schedules) -> list[np.ndarray]:
        """One vector per schedule (or IRModule); a candidate that cannot be lowered gets zeros."""
        return [self.extract_one(getattr(sch, "mod", sch)) for sch in schedules]

    def extract_keyed(self, ctx, schedules, keys) -> list[np.ndarray]:
        """As ``extract``, with the modules' structural hashes already known (not computed again)."""
        return [self.extract_one(getattr(sch, "mod", sch), key) for sch, key in zip(schedules, keys)]

    def extract_one(self, mod, key: int | None = None) -> np.ndarray:
        """The feature matrix of one module (memoised by structural hash; ``key``: that hash, when the
        caller has it)."""
        if not self.cache_size:
            key = None
        elif key is None:
            key = structural_hash(mod)
        if key is not None:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit.copy()
        try:  # the kernel as the runner times it: the marked weight packing runs once, outside
            vec = self.from_lowered(lower_for_features(split_layout_rewrite(mod)[0]))
        except Exception as err:  # noqa: BLE001 - a candidate the lowering rejects scores as empty
            logger.warning("feature extraction failed (%s: %s); using zeros", type(err).__name__, err)
            vec = np.zeros(NUM_FEATURES, np.float32)
        if key is not None:
            self._cache[key] = vec
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return vec.copy()

    @staticmethod
    def from_lowered(func) -> np.ndarray:
        """The vector of an already lowered PrimFunc (``program.lower_for_features``)."""
        return program_features(collect_program(func))
