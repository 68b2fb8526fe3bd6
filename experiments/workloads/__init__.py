"""Operator workloads of the paper's evaluation, written with ``te``, each with a numpy reference.

>>> from experiments.workloads import get_workload
>>> w = get_workload("dep_conv", shape="mobilenet_112")
>>> [t.name for t in w.args]
['data', 'kernel', 'depthwise']
"""
from . import conv, gemm, suite  # noqa: F401  (register the conv, GEMM and suite workloads)
from .registry import Workload, get_workload, workload_names

__all__ = ["Workload", "get_workload", "workload_names"]
