"""Every public function, class and method of the packages carries a numpydoc docstring.

The check reads the source (no import): a *public* object is a function or class at module level
whose name has no leading underscore, in a module whose path has no underscore-prefixed part
(``__init__.py`` counts as public), or a method without a leading underscore of such a class.
Its docstring must have a summary line; a callable that takes arguments (besides ``self``/``cls``)
must have a ``Parameters`` section and one that returns a value a ``Returns`` (or ``Yields``)
section. Properties need only the summary; dunder methods and the dispatch methods of the IR
functors, printers and the TVMScript parser (``visit_*``, ``mutate_*``, ``stmt_*``, ``eval_*``, ...,
named after the node type they handle) need none, nor do ``@T.prim_func`` programs (TVMScript, such
as the descriptions and implementations of tensor intrinsics, documented where they are registered).

Two levels are enforced per package:

* ``SUMMARY_COMPLETE``: packages where every public object has a docstring summary;
* ``SECTIONS_COMPLETE``: packages where every public object also has its numpydoc sections.

Run as a script (``python tests/test_docstrings.py [-v]``) to print the counts per package (and,
with ``-v``, every gap).
"""

from __future__ import annotations

import ast
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("tensorize", "intrinsics", "search", "experiments")

# Sub-packages (dotted prefixes) where every public object has a docstring summary.
SUMMARY_COMPLETE: tuple[str, ...] = PACKAGES
# Sub-packages where every public object also has its Parameters/Returns sections.
SECTIONS_COMPLETE: tuple[str, ...] = ("tensorize", "intrinsics")

_DISPATCH = re.compile(r"^(visit|mutate|print|emit|lower|codegen|stmt|eval)_")


def _public_module(path: pathlib.Path) -> bool:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return all(not p.startswith("_") or p == "__init__" for p in parts)


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _own_nodes(fn: ast.AST):
    """The nodes of a function body, nested functions and classes left out."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _takes_args(fn: ast.FunctionDef, method: bool) -> bool:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    if method and names and names[0] in ("self", "cls"):
        names = names[1:]
    return bool(names or a.vararg or a.kwarg)


def _returns_value(fn: ast.FunctionDef) -> str | None:
    """``"Returns"``/``"Yields"`` when the function gives back a value, else None."""
    nodes = list(_own_nodes(fn))
    if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in nodes):
        return "Yields"
    ann = fn.returns
    if ann is not None:
        if (isinstance(ann, ast.Constant) and ann.value in (None, "None")) or \
                (isinstance(ann, ast.Name) and ann.id in ("NoReturn", "Never")):
            return None
        return "Returns"
    if any(isinstance(n, ast.Return) and n.value is not None
           and not (isinstance(n.value, ast.Constant) and n.value.value is None) for n in nodes):
        return "Returns"
    return None


def _is_property(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        name = d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", "")
        if name in ("property", "cached_property", "setter", "getter", "deleter"):
            return True
    return False


def _has_section(doc: str, section: str) -> bool:
    return re.search(rf"^\s*{section}\n\s*-{{3,}}", doc, re.M) is not None


def _is_prim_func(fn: ast.FunctionDef) -> bool:
    """A ``@T.prim_func`` is TVMScript (a PrimFunc, e.g. an intrinsic's desc or impl), not a callable."""
    return any((d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", "")) == "prim_func"
               for d in (x.func if isinstance(x, ast.Call) else x for x in fn.decorator_list))


def _check_function(fn, qual: str, method: bool, gaps: list):
    doc = ast.get_docstring(fn)
    if fn.name.startswith("__") or (method and _DISPATCH.match(fn.name)) or _is_prim_func(fn):
        return
    if not doc or not doc.strip().splitlines()[0].strip():
        gaps.append((qual, "summary"))
        return
    if _is_property(fn):
        return
    if any(isinstance(d, ast.Name) and d.id == "overload" for d in fn.decorator_list):
        return
    if _takes_args(fn, method) and not _has_section(doc, "Parameters"):
        gaps.append((qual, "Parameters"))
    kind = _returns_value(fn)
    if kind and not (_has_section(doc, "Returns") or _has_section(doc, "Yields")):
        gaps.append((qual, kind))


def _check_class(cls: ast.ClassDef, qual: str, gaps: list):
    doc = ast.get_docstring(cls)
    if not doc or not doc.strip().splitlines()[0].strip():
        gaps.append((qual, "summary"))
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            _check_function(node, f"{qual}.{node.name}", True, gaps)


def gaps_of(path: pathlib.Path) -> list[tuple[str, str]]:
    """The ``(qualified name, missing part)`` pairs of one module."""
    mod = _module_name(path)
    tree = ast.parse(path.read_text(), str(path))
    gaps: list[tuple[str, str]] = []
    for node in tree.body:
        if getattr(node, "name", "_").startswith("_"):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _check_function(node, f"{mod}.{node.name}", False, gaps)
        elif isinstance(node, ast.ClassDef):
            _check_class(node, f"{mod}.{node.name}", gaps)
    return gaps


def all_gaps() -> dict[str, list[tuple[str, str]]]:
    """Gaps per module, for the public modules of the packages."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if _public_module(path):
                out[_module_name(path)] = gaps_of(path)
    return out


def _within(mod: str, prefixes) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in prefixes)


def counts(level: int = 2) -> dict[str, tuple[int, int]]:
    """Per sub-package (``pkg`` or ``pkg.sub``): (objects without summary, section gaps)."""
    out: dict[str, list[int]] = {}
    for mod, gaps in all_gaps().items():
        key = ".".join(mod.split(".")[:level])
        c = out.setdefault(key, [0, 0])
        for _, what in gaps:
            c[0 if what == "summary" else 1] += 1
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}


def test_summaries_where_complete():
    missing = [f"{q}: no docstring summary" for mod, gaps in all_gaps().items()
               if _within(mod, SUMMARY_COMPLETE + SECTIONS_COMPLETE) for q, what in gaps if what == "summary"]
    assert not missing, "public API without a docstring:\n" + "\n".join(missing)


def test_sections_where_complete():
    missing = [f"{q}: no {what} section" for mod, gaps in all_gaps().items()
               if _within(mod, SECTIONS_COMPLETE) for q, what in gaps]
    assert not missing, "public API with an incomplete numpydoc docstring:\n" + "\n".join(missing)


def test_checker_finds_gaps():
    src = ('def f(a):\n    return a\n\n'
           'def g(a):\n    """Sum.\n\n    Parameters\n    ----------\n    a : int\n        A.\n\n'
           '    Returns\n    -------\n    int\n        A.\n    """\n    return a\n\n'
           'def h(a):\n    """Sum."""\n    return a\n')
    tmp = ROOT / "tests" / "_docstring_probe.py"
    try:
        tmp.write_text(src)
        gaps = gaps_of(tmp)
    finally:
        tmp.unlink()
    assert ("tests._docstring_probe.f", "summary") in gaps
    assert not [g for g in gaps if g[0].endswith(".g")]
    assert {g[1] for g in gaps if g[0].endswith(".h")} == {"Parameters", "Returns"}


if __name__ == "__main__":
    verbose = "-v" in sys.argv
    total = [0, 0]
    for key, (s, p) in counts().items():
        total[0] += s
        total[1] += p
        print(f"{key:32s} no summary {s:4d}   missing sections {p:4d}")
    print(f"{'total':32s} no summary {total[0]:4d}   missing sections {total[1]:4d}")
    if verbose:
        for mod, gaps in all_gaps().items():
            for q, what in gaps:
                print(f"  {q}: {what}")
