"""Entry points: ``@T.prim_func``, ``@I.ir_module`` and ``from_source``.

The decorated object *is* the IR: ``@T.prim_func def f`` evaluates to a ``PrimFunc`` and
``@I.ir_module class M`` to an ``IRModule``. Each parsed function is checked by the verifier
(``tensorize.analysis.verify.verify_well_formed``) when that module is available.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import gc
import importlib
import importlib.util
import inspect
import logging
import sys
from typing import Any

from ...errors import DiagnosticError as _DiagnosticError
from ...errors import TVMError, VerifyError
from ...ir.function import IRModule, PrimFunc
from .. import ir as I
from .. import tir as T
from . import hooks
from .core import Parser
from .safety import SafePolicy
from .source import DiagnosticError, Source

ir_module = I.ir_module

logger = logging.getLogger(__name__)

_PACKAGE_PREFIX = __name__.rsplit(".", 2)[0]  # "tensorize.script"


def _caller_frame():
    """The first stack frame outside tensorize.script (the code that applied the decorator)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_PACKAGE_PREFIX):
        frame = frame.f_back
    return frame


def _environment(obj, frame) -> dict[str, Any]:
    """Names visible to ``obj``: its closure, then the caller's locals (class bodies, enclosing
    functions whose variables appear only in annotations), then its module globals."""
    env: dict[str, Any] = dict(getattr(obj, "__globals__", None) or (frame.f_globals if frame else {}))
    if frame is not None and frame.f_locals is not frame.f_globals:
        env.update(frame.f_locals)
    code, closure = getattr(obj, "__code__", None), getattr(obj, "__closure__", None)
    if code is not None and closure:
        for name, cell in zip(code.co_freevars, closure):
            try:
                env[name] = cell.cell_contents
            except ValueError:  # an unset cell (defined later in the enclosing scope)
                continue
    return env


@contextlib.contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector while parsing.

    Parsing allocates hundreds of thousands of short-lived acyclic objects (Python AST, IR nodes);
    the collector's generation scans over them took a third of the parse time of a large program.
    Reference counting still frees everything; any cycle is collected once the collector resumes."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _verify(func: PrimFunc, source: Source | None = None, fdef: ast.AST | None = None) -> None:
    if importlib.util.find_spec("tensorize.analysis.verify") is None:
        return
    verify = importlib.import_module("tensorize.analysis.verify")
    try:
        # As TVM's parser: the declared regions are not checked against the accesses here (a
        # schedule primitive or an explicit verify_well_formed call reports them).
        verify.verify_well_formed(func, skip=("access-region", "binding-range"))
    except (VerifyError, _DiagnosticError):
        raise
    except (TVMError, ValueError, TypeError, KeyError, IndexError, AttributeError, ArithmeticError) as err:
        # the verifier met a value it could not reason about (an index of the wrong type, ...)
        message = f"the program is not well formed ({type(err).__name__}: {err})"
        raise (source.error(fdef, message) if source is not None else DiagnosticError(message)) from None


def _find_def(tree: ast.Module, kind: type, name: str) -> ast.AST:
    # inspect gives exactly the definition's lines, so it is the first statement (several
    # functions of the same name in one file are common: each keeps its own source).
    for node in tree.body:
        if isinstance(node, kind) and node.name == name:
            return node
    raise DiagnosticError(f"cannot find the definition of {name!r} in its source")


def parse_function_def(source: Source, fdef: ast.FunctionDef, env: dict, check_well_formed: bool = True,
                       private: bool = False, policy: SafePolicy | None = None) -> PrimFunc:
    """Parse a ``def`` node of TVMScript text into a PrimFunc (checked unless ``check_well_formed`` is False).

    Parameters
    ----------
    source : Source
        The source text.
    fdef : ast.FunctionDef
        The function.
    env : dict
        The names the text sees.
    check_well_formed : bool
        Verify the result.
    private : bool
        Give the function no ``global_symbol``.
    policy : SafePolicy, optional
        What the text may evaluate.

    Returns
    -------
    PrimFunc
        The function.
    """
    func = Parser(source, env, policy).parse_function(fdef)
    if not private and "global_symbol" not in func.attrs:
        func = func.with_attr("global_symbol", fdef.name)  # TVM: a public function is exported by its name
    if check_well_formed:
        _verify(func, source, fdef)
    return func


def parse_prim_func(pyfunc, check_well_formed: bool = True, private: bool = False) -> PrimFunc:
    """Parse a Python function object as TVMScript (what ``@T.prim_func`` does).

    Parameters
    ----------
    pyfunc : callable
        The function (its source must be readable).
    check_well_formed : bool
        Verify the result.
    private : bool
        Give the function no ``global_symbol``.

    Returns
    -------
    PrimFunc
        The function.
    """
    if isinstance(pyfunc, PrimFunc):
        return pyfunc
    if not inspect.isfunction(pyfunc):
        raise TypeError(f"@T.prim_func decorates a function, not a {type(pyfunc).__name__}")
    frame = _caller_frame()
    with _gc_paused():
        source, fdef = _function_source(inspect.unwrap(pyfunc).__code__, pyfunc.__name__)  # as getsource does
        return parse_function_def(source, fdef, _environment(pyfunc, frame), check_well_formed, private)


@functools.lru_cache(maxsize=1024)
def _function_source(code, name: str) -> tuple[Source, ast.FunctionDef]:
    """The source and ``def`` node of a function's code object, read and parsed once: intrinsic factories
    decorate one nested ``def`` per configuration (47 AMX blockings from one template), and reading a
    function's source from its file takes milliseconds. The parser does not modify the tree."""
    source = Source.from_object(code)
    return source, _find_def(source.parse(), ast.FunctionDef, name)


# -- from_source -----------------------------------------------------------------------------


_DECORATOR_OPTIONS = {"prim_func": ("private", "s_tir", "check_well_formed"), "ir_module": ()}


def _decorator_kind(node: ast.expr, env: dict, source: Source | None = None) -> tuple[str | None, dict]:
    """Which of our decorators ``node`` is (``"prim_func"``/``"ir_module"``) and its keyword arguments
    (literals only: a decorator's arguments are read, never evaluated)."""
    target = node.func if isinstance(node, ast.Call) else node
    try:
        value = _resolve(target, env)
    except (KeyError, AttributeError):
        value = None
    kind = "prim_func" if value is T.prim_func else "ir_module" if value is I.ir_module else None
    if value is None and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute) \
            and _dotted(target) in _DOTTED_DECORATORS:  # TVM's tutorials write @tvm.script.ir_module
        kind = _DOTTED_DECORATORS[_dotted(target)]
    kwargs: dict = {}
    if isinstance(node, ast.Call) and kind is not None:
        for kw in node.keywords:
            if kw.arg not in _DECORATOR_OPTIONS[kind] or not isinstance(kw.value, ast.Constant):
                where = source.error(kw.value, f"@{kind} takes the literal options "
                                               f"{', '.join(_DECORATOR_OPTIONS[kind]) or '(none)'}") if source else None
                raise where or DiagnosticError(f"bad option of @{kind}")
            kwargs[kw.arg] = kw.value.value
    return kind, kwargs


_DOTTED_DECORATORS = {f"{root}.script.{name}": kind for root in ("tvm", "tensorize")
                      for name, kind in (("ir_module", "ir_module"), ("ir.ir_module", "ir_module"),
                                         ("tir.prim_func", "prim_func"))}


def _dotted(node: ast.expr) -> str:
    return f"{_dotted(node.value)}.{node.attr}" if isinstance(node, ast.Attribute) else getattr(node, "id", "?")


def _resolve(node: ast.expr, env: dict):
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.Attribute) and not node.attr.startswith("_"):
        return getattr(_resolve(node.value, env), node.attr)
    raise KeyError(ast.dump(node))


def default_environment() -> dict[str, Any]:
    """The names TVMScript text sees: the ``T`` and ``I`` namespaces and nothing else.

    Returns
    -------
    dict of str to any
        The names.
    """
    return {"T": T, "I": I}


def parse_module_class(source: Source, cdef: ast.ClassDef, env: dict, check_well_formed: bool = True,
                       policy: SafePolicy | None = None) -> IRModule:
    """Parse a ``class`` node decorated ``@I.ir_module`` into an IRModule of its prim_funcs.

    Parameters
    ----------
    source : Source
        The source text.
    cdef : ast.ClassDef
        The class.
    env : dict
        The names the text sees.
    check_well_formed : bool
        Verify the result.
    policy : SafePolicy, optional
        What the text may evaluate.

    Returns
    -------
    IRModule
        The module.
    """
    functions = {}
    for item in cdef.body:
        if isinstance(item, ast.FunctionDef):
            kinds = [_decorator_kind(d, env, source) for d in item.decorator_list]
            prim = next((kw for kind, kw in kinds if kind == "prim_func"), None)
            if prim is None:
                raise source.error(item, f"method {item.name!r} of an ir_module class must be decorated with @T.prim_func")
            functions[item.name] = parse_function_def(source, item, env, prim.get("check_well_formed", check_well_formed),
                                                      prim.get("private", False), policy)
        elif isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant):
            continue  # docstring
        elif isinstance(item, (ast.Assign, ast.AnnAssign, ast.Pass)):
            continue
        else:
            raise source.error(item, f"unsupported statement in an ir_module class: {type(item).__name__}")
    return IRModule(functions)


def from_source(text: str, extra_vars: dict | None = None, check_well_formed: bool = True):
    """Parse TVMScript text (a module class or a function, e.g. what ``.script()`` prints).

    The text is parsed in safe mode: only TVMScript's vocabulary (``T.*``, ``I.*``, literals,
    operators, the names the text defines and those of ``extra_vars``) is evaluated; anything else
    raises ``DiagnosticError`` at the offending node and nothing runs. Text from any source may be
    parsed.

    Parameters
    ----------
    text : str
        TVMScript source of one ``@T.prim_func`` function or one ``@I.ir_module`` class.
    extra_vars : dict, optional
        Further names the text may use (values of the caller's choosing, e.g. shape constants).
    check_well_formed : bool
        Run the verifier over each parsed function.

    Returns
    -------
    PrimFunc or IRModule
        What the text defines.

    Raises
    ------
    DiagnosticError
        The text is not TVMScript or reaches outside its vocabulary; the error points at the node.

    Examples
    --------
    >>> from tensorize.script import from_source
    >>> f = from_source('''
    ... # from tvm.script import tir as T
    ... @T.prim_func
    ... def main(A: T.Buffer((4,), "float32")):
    ...     for i in range(4):
    ...         A[i] = T.float32(1)
    ... ''')
    >>> type(f).__name__
    'PrimFunc'
    """
    if not isinstance(text, str):
        raise DiagnosticError(f"TVMScript text must be a str, got {type(text).__name__}")
    with _gc_paused():
        try:
            return _parse_text(text, extra_vars, check_well_formed)
        except (RecursionError, MemoryError) as err:
            raise DiagnosticError(f"the TVMScript text is nested too deeply or too large to parse ({type(err).__name__})",
                                  "<tvmscript>") from None


def _parse_text(text: str, extra_vars: dict | None, check_well_formed: bool):
    source = Source(text, "<tvmscript>")
    tree = source.parse()
    env = default_environment()
    env.update(extra_vars or {})
    policy = SafePolicy([T, I])
    result = None
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Pass)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.ClassDef):
            kinds = [_decorator_kind(d, env, source)[0] for d in node.decorator_list]
            if "ir_module" not in kinds:
                raise source.error(node, f"class {node.name!r} must be decorated with @I.ir_module")
            result = parse_module_class(source, node, env, check_well_formed, policy)
        elif isinstance(node, ast.FunctionDef):
            kinds = [_decorator_kind(d, env, source) for d in node.decorator_list]
            prim = next((kw for kind, kw in kinds if kind == "prim_func"), None)
            if prim is None:
                raise source.error(node, f"function {node.name!r} must be decorated with @T.prim_func")
            result = parse_function_def(source, node, env, prim.get("check_well_formed", check_well_formed),
                                        prim.get("private", False), policy)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            env.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)})
        else:
            raise source.error(node, f"unsupported top-level statement in TVMScript text: {type(node).__name__}")
    if result is None:
        raise DiagnosticError("the TVMScript text defines no @T.prim_func function and no @I.ir_module class",
                              source.source_name)
    logger.debug("parsed %s from source", type(result).__name__)
    return result


hooks.register("prim_func", parse_prim_func)
