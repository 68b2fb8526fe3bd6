"""The tuning database: workloads and measured schedules (``Database``, ``TuningRecord``, ``Workload``,
``target_key``). Loading a database never evaluates code."""
from .json_database import Database
from .workload import TuningRecord, Workload, target_key, trace_key, workload_key

__all__ = ["Database", "TuningRecord", "Workload", "target_key", "trace_key", "workload_key"]
