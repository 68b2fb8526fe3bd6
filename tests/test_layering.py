"""The import structure of the project, read from the source: no circles, no upward imports.

Every ``.py`` file of the packages ``tensorize``, ``intrinsics``, ``search`` and ``experiments``
is parsed; every ``import`` statement counts, at file level or inside a function (a lazy import
is still a dependency). An edge ``a -> b`` means file ``a`` imports module ``b`` (a package
import ``from p import x`` where ``p.x`` is a submodule is an edge to ``p/x.py``; importing a
package is an edge to its ``__init__.py``).

Two rules, as ``docs/architecture.md`` states them:

* no circle between files (strongly connected components of the file graph have one file);
* no upward import: ``tensorize < intrinsics < search < experiments``, and within ``tensorize``
  ``ir`` (with ``errors``, which imports nothing) is the ground floor and ``arith`` the floor above
  it (everything else in ``tensorize`` may import both, neither may import the rest).

A third rule keeps files to one idea: no ``.py`` file of the packages over 500 lines (``wc -l``).

Run as a script (``python tests/test_layering.py``) to print the circles and upward edges.
"""

from __future__ import annotations

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("tensorize", "intrinsics", "search", "experiments")

# Circles that other work is fixing now (the TVMScript parser's); each entry is the sorted tuple of
# module names of one circle. Empty it once that fix lands: a listed circle that is gone fails too.
KNOWN_CIRCLES_BEING_FIXED: list[tuple[str, ...]] = []

# Layer rank of the top-level packages, and of the floors inside tensorize.
PACKAGE_RANK = {"tensorize": 0, "intrinsics": 1, "search": 2, "experiments": 3}
TENSORIZE_RANK = {"errors": 0, "ir": 0, "arith": 1}
TENSORIZE_TOP = 2  # every other part of tensorize


def _module_files() -> dict[str, pathlib.Path]:
    mods: dict[str, pathlib.Path] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


def _resolve(name: str, mods: dict[str, pathlib.Path]) -> str | None:
    """The longest known module that ``name`` is or lies in."""
    while name:
        if name in mods:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph() -> dict[str, set[str]]:
    """Map each module of the packages to the project modules it imports."""
    mods = _module_files()
    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        package = mod if is_pkg else mod.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                for a in node.names:
                    sub = f"{prefix}.{a.name}"
                    targets.append(sub if sub in mods else prefix)
            for t in targets:
                r = _resolve(t, mods)
                if r is not None and r != mod:
                    deps.add(r)
        graph[mod] = deps
    return graph


def circles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[tuple[str, ...]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(tuple(sorted(comp)))
    return sorted(out)


def _rank(mod: str) -> tuple[int, int]:
    parts = mod.split(".")
    top = PACKAGE_RANK[parts[0]]
    inner = TENSORIZE_RANK.get(parts[1], TENSORIZE_TOP) if parts[0] == "tensorize" and len(parts) > 1 else TENSORIZE_TOP
    if parts[0] == "tensorize" and len(parts) == 1:
        inner = TENSORIZE_TOP  # the package face re-exports everything
    return top, inner


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Edges ``(a, b)`` where ``a`` sits on a lower layer than ``b``."""
    bad = []
    for a, deps in graph.items():
        for b in deps:
            ra, rb = _rank(a), _rank(b)
            if ra[0] < rb[0] or (ra[0] == rb[0] == 0 and ra[1] < rb[1]):
                bad.append((a, b))
    return sorted(bad)


def test_no_import_circles():
    found = circles(import_graph())
    new = [c for c in found if c not in KNOWN_CIRCLES_BEING_FIXED]
    assert not new, "import circles between files (break them by moving code or a registration hook):\n" + "\n".join(
        "  " + " <-> ".join(c) for c in new
    )


def test_known_circles_list_is_current():
    found = set(circles(import_graph()))
    gone = [c for c in KNOWN_CIRCLES_BEING_FIXED if c not in found]
    assert not gone, f"these circles are fixed; remove them from KNOWN_CIRCLES_BEING_FIXED: {gone}"


def test_no_upward_imports():
    bad = upward_imports(import_graph())
    assert not bad, "imports from a lower layer into a higher one:\n" + "\n".join(f"  {a} -> {b}" for a, b in bad)


def test_checker_finds_a_circle_and_an_upward_edge():
    g = {"tensorize.ir.a": {"tensorize.ir.b"}, "tensorize.ir.b": {"tensorize.ir.a", "tensorize.arith.c"}, "tensorize.arith.c": set()}
    assert circles(g) == [("tensorize.ir.a", "tensorize.ir.b")]
    assert upward_imports(g) == [("tensorize.ir.b", "tensorize.arith.c")]


MAX_FILE_LINES = 500

# Files over the limit whose split is under way on another branch; each entry is a path relative to
# the repository root. Empty it once those splits land: a listed file that is short enough fails too.
PENDING_SPLIT: set[str] = set()


def file_lines(path: pathlib.Path) -> int:
    """Lines of ``path`` as ``wc -l`` counts them (docstrings and blank lines included)."""
    return len(path.read_text().splitlines())


def _long_files() -> dict[str, int]:
    long = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            n = file_lines(path)
            if n > MAX_FILE_LINES:
                long[path.relative_to(ROOT).as_posix()] = n
    return long


def test_no_package_file_is_over_500_lines():
    """One idea per file: a module past 500 lines holds several and should be split."""
    long = [f"{path}: {n} lines" for path, n in _long_files().items() if path not in PENDING_SPLIT]
    assert not long, f"files over {MAX_FILE_LINES} lines (split them by idea):\n  " + "\n  ".join(long)


def test_pending_split_list_is_current():
    done = sorted(PENDING_SPLIT - set(_long_files()))
    assert not done, f"these files are {MAX_FILE_LINES} lines or fewer now; remove them from PENDING_SPLIT: {done}"


if __name__ == "__main__":
    g = import_graph()
    cs = circles(g)
    up = upward_imports(g)
    print(f"{len(g)} modules, {sum(map(len, g.values()))} import edges")
    print(f"{len(cs)} circles")
    for c in cs:
        print("  " + " <-> ".join(c))
    print(f"{len(up)} upward imports")
    for a, b in up:
        print(f"  {a} -> {b}")
    sys.exit(1 if (set(cs) - set(KNOWN_CIRCLES_BEING_FIXED)) or up else 0)
