"""LLVM code generation for CPUs (x86-64 and AArch64) through llvmlite.

``build(lowered_mod, target)`` returns a runtime ``Module``: compiled in process for the host,
or an object file plus assembly for cross targets.
"""
from .module import build

__all__ = ["build"]
