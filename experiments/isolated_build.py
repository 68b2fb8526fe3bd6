"""Building a user's program for the experiment driver in a child process.

LLVM can end the whole process on some inputs (a bug of ours or of LLVM's): the driver compiles
through the search's builder, whose worker processes turn such an abort into an error carrying the
tail of the compiler's stderr, and loads the resulting shared library here.
"""
from __future__ import annotations

import os

import tensorize as tvm
from tensorize.codegen.llvm.module import llvm_ir_text
from tensorize.errors import BuildError

__all__ = ["build_isolated"]


def build_isolated(mod, target, work_dir: str, with_assembly: bool = False):
    """``(runtime module, LLVM IR text)`` of ``mod`` built for ``target`` in a child process; with
    ``with_assembly``, ``(runtime module, LLVM IR text, assembly text)``.

    Raises ``BuildError`` with the compiler's message (and the stderr tail of an aborted compiler).
    """
    from search.measure import LocalBuilder, MeasureCandidate

    os.makedirs(work_dir, exist_ok=True)
    with LocalBuilder(work_dir, max_workers=1) as builder:
        (result,) = builder.build([MeasureCandidate(mod)], target)
    if not result.ok:
        raise BuildError(f"building the scheduled program for {target} failed: {result.error}")
    lib = tvm.runtime.load_module(result.artifact)
    try:
        source = llvm_ir_text(tvm.lower(mod), target)
    except Exception as err:  # noqa: BLE001 - the source is a record for MLflow, not needed to run
        source = f"; the LLVM IR could not be printed: {err}"
    if not with_assembly:
        return lib, source
    try:  # the program compiled in the child already: compiling it here again to print the assembly is safe
        assembly = tvm.build(mod, target).get_source("asm")
    except Exception as err:  # noqa: BLE001 - a record, not needed to run
        assembly = f"# the assembly could not be printed: {err}"
    return lib, source, assembly
