"""The parser and the T/I namespaces import each other in one direction only (``tir``/``ir`` below the
parser), and the target package has no circle: checked from the source's import statements."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The files of the ``T`` namespace: ``tir.py`` and the parts it re-exports.
TIR_NAMESPACE = ("tensorize/script/tir", "tensorize/script/tir_ops", "tensorize/script/tir_buffers",
                 "tensorize/script/tir_frames", "tensorize/script/tir_stmts", "tensorize/script/tir_exprs",
                 "tensorize/script/tir_reduce")


def _module_files(*folders):
    out = {}
    for folder in folders:
        base = os.path.join(ROOT, *folder.split("/"))
        paths = [base + ".py"] if os.path.isfile(base + ".py") else [
            os.path.join(dp, f) for dp, _, fs in os.walk(base) for f in fs if f.endswith(".py")]
        for path in paths:
            name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
            out[name[:-9] if name.endswith(".__init__") else name] = path
    return out


def _edges(modules):
    edges = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                for target in [f"{base}.{a.name}" for a in node.names] + [base]:
                    if target in modules and target != name:
                        edges[name].add(target)
                        break
    return edges


def _cycle(edges):
    state = {}

    def visit(node, path):
        state[node] = 1
        for nxt in edges[node]:
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, path + [nxt])
                if found:
                    return found
        state[node] = 2
        return None

    for start in edges:
        if start not in state:
            found = visit(start, [start])
            if found:
                return found
    return None


def test_no_import_circle_in_the_parser_and_target():
    modules = _module_files("tensorize/script/parser", *TIR_NAMESPACE, "tensorize/script/ir",
                            "tensorize/target", "tensorize/errors")
    assert _cycle(_edges(modules)) is None


def test_the_namespaces_do_not_import_the_parser_core():
    edges = _edges(_module_files("tensorize/script/parser", *TIR_NAMESPACE, "tensorize/script/ir"))
    for namespace in [m.replace("/", ".") for m in TIR_NAMESPACE] + ["tensorize.script.ir"]:
        assert not {"tensorize.script.parser.core", "tensorize.script.parser.entry",
                    "tensorize.script.parser.evaluator"} & edges[namespace]
