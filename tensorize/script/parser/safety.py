"""What TVMScript *text* may evaluate: the vocabulary of ``T``/``I``, literals, operators and the names
the script defines itself.

``from_source`` (and everything that reads TVMScript from a file or a database) parses in this safe
mode: a name, attribute, call or subscript outside the vocabulary raises ``DiagnosticError`` at the
offending node before anything runs, so a text cannot import modules, open files or climb from a
value to its class (``().__class__.__bases__``). A ``@T.prim_func`` decorating a function of the
user's own Python module is the user's own code and keeps its enclosing scope, as in TVM.

>>> from tensorize.script import from_source
>>> from_source('''
... @T.prim_func
... def f(A: T.Buffer((1,), "float32")):
...     A[0] = T.float32(__import__("os").getpid())
... ''')  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
tensorize.errors.DiagnosticError: <tvmscript>:4:22: error: unknown name '__import__': TVMScript text may use only ...
"""
from __future__ import annotations

import builtins
import types
from typing import Any

from ...ir.buffer import Buffer
from ...ir.expr import IterVar, PrimExpr, Var

# Builtins TVMScript text uses (``range`` in loops); everything else in ``builtins`` is off limits.
SAFE_BUILTINS = {"range": builtins.range, "True": True, "False": False, "None": None}

# Attributes of IR values that printed TVMScript reads (``A.data``, ``A.shape[0]``, ``A.vload(...)``).
_VALUE_ATTRS: dict[type, frozenset[str]] = {
    Buffer: frozenset({"data", "dtype", "shape", "strides", "elem_offset", "name", "scope", "ndim",
                       "data_alignment", "offset_factor", "vload", "vstore", "access_ptr"}),
    IterVar: frozenset({"var", "dom", "iter_type", "thread_tag"}),
    Var: frozenset({"dtype", "name", "type_annotation"}),
    PrimExpr: frozenset({"dtype"}),
}
# Values whose contents a script may subscript.
_SUBSCRIPTABLE = (Buffer, tuple, list, dict, str)
# Names of the T and I namespaces that never appear inside a function body of text.
_DENIED = frozenset({"prim_func", "ir_module", "annotations", "Any", "Sequence", "re"})
_MAX_INT_BITS = 1 << 12  # Python integer arithmetic at parse time (9 ** 9 ** 9 would run for hours)
_MAX_SEQUENCE = 1 << 20  # "x" * n, [0] * n


def _is_vocabulary_value(value) -> bool:
    """A public value of the T/I namespaces: a tensorize function, class or factory object."""
    if isinstance(value, types.ModuleType):
        return False
    if isinstance(value, (types.FunctionType, type)):
        return getattr(value, "__module__", "").startswith("tensorize.")
    return type(value).__module__.startswith("tensorize.script.")


class SafePolicy:
    """The rules of safe mode; ``check_*`` return an error message or ``None`` when allowed.

    Parameters
    ----------
    namespaces : list of module
        The TVMScript namespaces (``T``, ``I``) the text may reach into.
    """

    def __init__(self, namespaces: list[types.ModuleType]):
        self.namespaces = {id(ns): ns for ns in namespaces}
        self.callables: set[int] = set()
        for ns in namespaces:
            for name, value in vars(ns).items():
                if not name.startswith("_") and name not in _DENIED and _is_vocabulary_value(value):
                    self.callables.add(id(value))
                    if isinstance(value, type):
                        self.callables.update(id(v) for k, v in _class_attrs(value).items())

    def check_attribute(self, base, attr: str) -> str | None:
        """Why ``base.attr`` may not be read in TVMScript text, or None when it may.

        Parameters
        ----------
        base : any
            The object.
        attr : str
            The attribute.

        Returns
        -------
        str or None
            The reason, or None.
        """
        if attr.startswith("_"):
            return f"attribute {attr!r} is not part of TVMScript (names starting with '_' are never evaluated)"
        if id(base) in self.namespaces:
            return f"'{base.__name__.rsplit('.', 1)[-1]}.{attr}' is not part of TVMScript text" if attr in _DENIED else None
        if isinstance(base, type) and id(base) in self.callables:
            return None  # T.axis.spatial
        for kind, names in _VALUE_ATTRS.items():
            if isinstance(base, kind) and attr in names:
                return None
        return f"attribute {attr!r} of a {type(base).__name__} is not part of TVMScript"

    def check_attribute_value(self, value, attr: str) -> str | None:
        """The value an attribute of a namespace gave (``T.re`` is a module, not vocabulary).

        Parameters
        ----------
        value : any
            The attribute's value.
        attr : str
            The attribute.

        Returns
        -------
        str or None
            The reason, or None.
        """
        if isinstance(value, types.ModuleType) or not (_is_vocabulary_value(value) or _is_data(value)):
            return f"'{attr}' is not part of TVMScript"
        return None

    def check_call(self, func) -> str | None:
        """Why ``func`` may not be called in TVMScript text, or None when it may.

        Parameters
        ----------
        func : any
            The callee.

        Returns
        -------
        str or None
            The reason, or None.
        """
        if func is builtins.range or id(func) in self.callables or getattr(func, "tvmscript_lambda", False):
            return None
        if type(func).__module__.startswith("tensorize.script.") and callable(func):  # T.float32, T.Buffer
            return None
        owner = getattr(func, "__self__", None)
        if isinstance(owner, Buffer) and getattr(func, "__name__", "") in _VALUE_ATTRS[Buffer]:
            return None
        return f"calling {_describe(func)} is not part of TVMScript"

    def check_subscript(self, base) -> str | None:
        """Why ``base[...]`` may not be evaluated in TVMScript text, or None when it may.

        Parameters
        ----------
        base : any
            The subscripted object.

        Returns
        -------
        str or None
            The reason, or None.
        """
        if isinstance(base, _SUBSCRIPTABLE) or id(base) in self.callables:
            return None
        return f"subscripting a {type(base).__name__} is not part of TVMScript"


def _class_attrs(cls: type) -> dict[str, Any]:
    out = {}
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, staticmethod):
            value = value.__func__
        out[name] = getattr(cls, name, value)
    return out


def _is_data(value) -> bool:
    return value is None or isinstance(value, (int, float, str, bool, tuple, list, dict, PrimExpr, Buffer))


def _describe(func) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    return repr(name) if isinstance(name, str) else f"a {type(func).__name__}"


def check_arithmetic(op_name: str, lhs, rhs) -> str | None:
    """Refuse parse-time Python arithmetic whose result would be enormous (a denial of service).

    Parameters
    ----------
    op_name : str
        The operator.
    lhs : any
        The left operand.
    rhs : any
        The right operand.

    Returns
    -------
    str or None
        The reason, or None.
    """
    if isinstance(lhs, bool) or isinstance(rhs, bool):
        return None
    if op_name == "Pow" and isinstance(lhs, int) and isinstance(rhs, int) and rhs > 0 and abs(lhs) > 1:
        if lhs.bit_length() * rhs > _MAX_INT_BITS:
            return f"{lhs} ** {rhs} is too large to evaluate"
    if op_name == "LShift" and isinstance(lhs, int) and isinstance(rhs, int) and rhs > _MAX_INT_BITS:
        return f"{lhs} << {rhs} is too large to evaluate"
    if op_name == "Mult":
        for seq, count in ((lhs, rhs), (rhs, lhs)):
            if isinstance(seq, (str, list, tuple, bytes)) and isinstance(count, int) and len(seq) * count > _MAX_SEQUENCE:
                return "a repeated sequence this long is not TVMScript"
        if isinstance(lhs, int) and isinstance(rhs, int) and lhs.bit_length() + rhs.bit_length() > _MAX_INT_BITS:
            return "an integer this large is not TVMScript"
    return None
