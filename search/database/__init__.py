"""The tuning database: workloads and measured schedules (``Database``, ``TuningRecord``, ``Workload``)."""
from .json_database import Database, TuningRecord, Workload

__all__ = ["Database", "TuningRecord", "Workload"]
