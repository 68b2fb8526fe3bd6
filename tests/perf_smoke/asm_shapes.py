"""Helpers to look at generated x86 assembly and LLVM IR: split into functions and basic blocks,
find the hottest block (the one with the most vector FMAs), list what it touches."""
from __future__ import annotations

import importlib.util
import os
import re

import tensorize as tvm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Code-shape checks compile for a fixed AVX-512 CPU whatever the host is (the code is not run).
AVX512_TARGET = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=skylake-avx512"
_LABEL = re.compile(r"^(\.LBB\d+_\d+|[A-Za-z_][\w.]*):")


def load_benchmark(name: str):
    """Import ``benchmarks/<name>.py`` (a script folder, not a package)."""
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", os.path.join(ROOT, "benchmarks", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def asm_blocks(asm: str) -> dict[str, list[str]]:
    """Basic blocks (and function entries) of an assembly listing: label -> instructions."""
    blocks: dict[str, list[str]] = {}
    current = None
    for line in asm.splitlines():
        match = _LABEL.match(line)
        if match:
            current = match.group(1)
            blocks[current] = []
        elif current is not None and line.startswith("\t") and not line.lstrip().startswith("."):
            blocks[current].append(line.strip())
            if line.strip().startswith("j"):  # a jump ends the block; what follows falls through
                current = None
    return blocks


def hottest_block(asm: str, pattern: str = r"^vfmadd\d+ps") -> list[str]:
    """The instructions of the block with the most instructions matching ``pattern``."""
    regex = re.compile(pattern)
    blocks = asm_blocks(asm)
    return max(blocks.values(), key=lambda instrs: sum(1 for i in instrs if regex.search(i)))


def count(instrs: list[str], pattern: str) -> int:
    regex = re.compile(pattern)
    return sum(1 for i in instrs if regex.search(i))


def llvm_functions(ll: str) -> dict[str, str]:
    """Function name -> body text of an LLVM IR module."""
    out = {}
    for match in re.finditer(r"^define [^@]*@([\w.]+)\(.*?^}", ll, re.S | re.M):
        out[match.group(1)] = match.group(0)
    return out


def build(sch_or_mod, target: str):
    mod = sch_or_mod.mod if hasattr(sch_or_mod, "mod") else sch_or_mod
    return tvm.build(mod, target=target)
