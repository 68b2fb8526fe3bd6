"""Search: the auto-scheduler around TensorIR (tensorization candidates, tuning database, ...).

``search`` builds on ``tensorize`` and ``intrinsics`` and never imports ``experiments``.

>>> from search import get_tensorize_candidates, apply_candidate, Database   # doctest: +SKIP
"""
from .candidates import (CandidateList, IterMapping, TensorizeCandidate, apply_candidate,
                         get_tensorize_candidates)
from .database import Database, TuningRecord, Workload

__all__ = ["get_tensorize_candidates", "apply_candidate", "TensorizeCandidate", "IterMapping", "CandidateList",
           "Database", "TuningRecord", "Workload"]
