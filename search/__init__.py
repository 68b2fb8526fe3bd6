"""Search: the auto-scheduler around TensorIR (MetaSchedule-shaped).

``tune_tir`` searches schedules of a program for a target and records every measurement in a
database; ``compile_tir`` replays the best one (``compile_tir_top_k`` the best few). Each component is a
small class chosen by name (see each folder's registry): ``schedule_rule/``, ``postproc/``, ``mutator/`` and
``candidates/`` make the space, ``strategy/`` searches it, ``feature/`` + ``cost_model/`` score candidates,
``measure/`` builds and times them in isolation, ``database/`` keeps the records.

``search`` builds on ``tensorize`` and ``intrinsics`` and never imports ``experiments``.

The names below are imported on first use (PEP 562), so that a process needing one part, such as a
measurement worker (``search.measure.worker``), does not pay for parsing every intrinsic of the space.

>>> import search
>>> sorted(n for n in search.__all__ if n.islower())  # doctest: +NORMALIZE_WHITESPACE
['apply_candidate', 'compile_tir', 'compile_tir_top_k', 'get_tensorize_candidates', 'split_layout_rewrite',
 'tune_graph', 'tune_tir']
>>> search.tune_tir.__module__
'search.tune'
"""
from __future__ import annotations

import importlib

#: Each public name and the module it comes from.
_EXPORTS = {
    "tune_graph": ".tune_graph", "tune_tir": ".tune", "compile_tir": ".tune", "compile_tir_top_k": ".tune",
    "TuningReport": ".tune", "TuneContext": ".context", "get_tensorize_candidates": ".candidates",
    "apply_candidate": ".candidates", "TensorizeCandidate": ".candidates", "IterMapping": ".candidates",
    "CandidateList": ".candidates", "Database": ".database", "TuningRecord": ".database", "Workload": ".database",
    "split_layout_rewrite": "tensorize.transform.split_layout_rewrite",
    "LayoutRewrite": "tensorize.transform.split_layout_rewrite",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'search' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
