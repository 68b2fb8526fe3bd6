"""Run tutorial code cells the way a notebook does: one shared namespace, each cell's stdout captured.

The cells are the seeds' TVM code; ``to_tensorize`` changes only their import lines. Each cell is
written to a file before it runs, so ``@T.prim_func`` can read the source of what it decorates."""
from __future__ import annotations

import contextlib
import io
import re
import textwrap
from pathlib import Path

IMPORT_MAP = {
    "import tvm": "import tensorize as tvm",
    "from tvm.ir.module import IRModule": "from tensorize.ir.module import IRModule",
    "from tvm.script import tir as T": "from tensorize.script import tir as T",
    "from tvm.script import ir as I": "from tensorize.script import ir as I",
    "from tvm import te": "from tensorize import te",
    "from tvm import s_tir": "from tensorize import s_tir",
}


def to_tensorize(code: str) -> str:
    """The cell with its TVM import lines changed to tensorize (and nothing else)."""
    lines = []
    for line in textwrap.dedent(code).splitlines():
        stripped = line.strip()
        if stripped.startswith(("import tvm", "from tvm")):
            if stripped not in IMPORT_MAP:
                raise AssertionError(f"no tensorize spelling for the import {stripped!r}")
            line = line[: len(line) - len(line.lstrip())] + IMPORT_MAP[stripped]
        lines.append(line)
    return "\n".join(lines) + "\n"


class Notebook:
    """A namespace that cells run in, in order."""

    def __init__(self, folder: Path, name: str):
        self.folder, self.name = folder, name
        self.namespace: dict = {"__name__": f"notebook_{name}"}
        self.count = 0

    def run(self, code: str) -> str:
        """Run one cell (TVM spelling) and return what it printed."""
        self.count += 1
        path = self.folder / f"{self.name}_cell{self.count}.py"
        path.write_text(to_tensorize(code))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(path.read_text(), str(path), "exec"), self.namespace)  # noqa: S102 - the cell under test
        return out.getvalue()

    def eval(self, expression: str):
        """The value of a cell that ends in an expression (what the notebook displays)."""
        return eval(expression, self.namespace)  # noqa: S307 - the cell under test


def class_names(printed: str) -> list[str]:
    """The class names in ``<class 'a.b.Name'>`` lines."""
    return [full.rsplit(".", 1)[-1] for full in re.findall(r"<class '([\w.]+)'>", printed)]


def restore_indent(flat: str) -> str:
    """Re-indent Python text whose leading spaces were lost (the seed pages of older tutorials):
    a line ending in ``:`` opens a level; ``@``, ``def``, ``class`` and comments are placed by
    the structure they belong to. Only for the simple printed programs of the seeds."""
    out, level = [], 0
    for raw in flat.strip("\n").splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("@") and "ir_module" in line:
            level = 0
        elif line.startswith("@T.prim_func"):
            level = 1
        elif line.startswith("# from"):
            level = 0
        out.append("    " * level + line)
        if line.startswith("def ") or line.startswith("class "):
            level += 1
        elif line.endswith(":") and not line.startswith("#"):
            level += 1
    return "\n".join(out) + "\n"
