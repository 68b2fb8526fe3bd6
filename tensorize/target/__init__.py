"""Compilation targets: ``Target("llvm -mcpu=znver4 -mattr=+avx512f,+avx512vnni")``.

``target`` parses target strings and dicts, ``cpus`` holds the features a named CPU implies, and
``llvm`` asks LLVM which CPU and feature names exist so that a malformed target is refused with a
``TargetError`` (a ``TVMError`` and ``ValueError``) before LLVM can abort the process.

>>> Target("llvm -mcpu=znver4").has_feature("avx512vnni")
True
>>> Target("llvm -mcpu=znver44")  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
tensorize.errors.TargetError: -mcpu='znver44' is not a CPU LLVM knows for x86_64-unknown-linux-gnu; did you mean ...
"""
from ..errors import TargetError
from .cpus import CPU_FEATURES, cpu_features
from .llvm import host_cpu, host_triple, llvm_tables
from .target import Target, TargetKind, create, resolve, sm_version

__all__ = ["Target", "TargetKind", "TargetError", "create", "resolve", "sm_version", "host_cpu", "host_triple", "llvm_tables",
           "cpu_features", "CPU_FEATURES"]
