"""Search: the auto-scheduler around TensorIR (MetaSchedule-shaped).

``tune_tir`` searches schedules of a program for a target and records every measurement in a
database; ``compile_tir`` replays the best one (``compile_tir_top_k`` the best few). Each component is a small class chosen by name
(see each folder's registry): ``schedule_rule/``, ``postproc/``, ``mutator/`` and ``candidates/``
make the space, ``strategy/`` searches it, ``feature/`` + ``cost_model/`` score candidates,
``measure/`` builds and times them in isolation, ``database/`` keeps the records.

``search`` builds on ``tensorize`` and ``intrinsics`` and never imports ``experiments``.

>>> import search
>>> sorted(n for n in search.__all__ if n.islower())
['apply_candidate', 'compile_tir', 'compile_tir_top_k', 'get_tensorize_candidates', 'split_layout_rewrite', 'tune_graph', 'tune_tir']
"""
from .candidates import (CandidateList, IterMapping, TensorizeCandidate, apply_candidate,
                         get_tensorize_candidates)
from .context import TuneContext
from .database import Database, TuningRecord, Workload
from tensorize.transform.split_layout_rewrite import LayoutRewrite, split_layout_rewrite
from .tune import TuningReport, compile_tir, compile_tir_top_k, tune_tir
from .tune_graph import tune_graph

__all__ = ["tune_graph", "tune_tir", "compile_tir", "compile_tir_top_k", "TuningReport", "TuneContext",
           "get_tensorize_candidates", "apply_candidate", "TensorizeCandidate", "IterMapping", "CandidateList", "Database", "TuningRecord", "Workload",
           "split_layout_rewrite", "LayoutRewrite"]
