"""TVMScript text of expressions, with Python operator precedence.

Used by ``tensorize.script.printer``; ``ExprPrinter.expr(e)`` gives the text of one expression.
Constants print as TVM does: int32 bare (``128``), other integers ``T.int64(3)``, bools
``T.bool(True)``, floats ``T.float32(1.0)``. Operators print with Python syntax (``//`` and ``%``
are floordiv/floormod) and the fewest parentheses that keep the structure.

>>> from tensorize.ir.expr import Var
>>> from tensorize.script.printer_names import NameTable
>>> i = Var("i")
>>> ExprPrinter(NameTable()).expr((i + 1) * 4 // 2)
'(i + 1) * 4 // 2'
"""
from __future__ import annotations

from ..errors import TVMTypeError

import math
from typing import Any, Callable

from ..ir import dtype as dt
from ..ir import expr as E
from ..ir.buffer import Buffer
from ..ir.node import Node
from .printer_names import NameTable

# Python precedence levels (higher binds tighter).
P_LAMBDA, P_OR, P_AND, P_NOT, P_CMP, P_BOR, P_BXOR, P_BAND, P_SHIFT, P_ADD, P_MUL, P_UNARY, P_ATOM = range(13)

_BINARY = {
    E.Add: ("+", P_ADD, "Add"),
    E.Sub: ("-", P_ADD, "Sub"),
    E.Mul: ("*", P_MUL, "Mul"),
    E.FloorDiv: ("//", P_MUL, "FloorDiv"),
    E.FloorMod: ("%", P_MUL, "FloorMod"),
    E.EQ: ("==", P_CMP, "EQ"),
    E.NE: ("!=", P_CMP, "NE"),
    E.LT: ("<", P_CMP, "LT"),
    E.LE: ("<=", P_CMP, "LE"),
    E.GT: (">", P_CMP, "GT"),
    E.GE: (">=", P_CMP, "GE"),
    E.And: ("and", P_AND, "And"),
    E.Or: ("or", P_OR, "Or"),
}
# Operations printed as calls: T.truncdiv(a, b), T.min(a, b), ...
_CALL_BINARY = {E.Mod: "truncmod", E.Min: "min", E.Max: "max"}

# Built-in ops whose printed call takes the result dtype as its first argument (it cannot be inferred).
DTYPE_FIRST_OPS = frozenset({
    "tir.call_extern", "tir.call_pure_extern", "tir.call_llvm_intrin", "tir.call_llvm_pure_intrin",
    "tir.reinterpret", "tir.ptx_mma", "tir.ptx_ldmatrix", "tir.ptx_wgmma", "tir.type_annotation", "tir.undef",
    "tir.vectorlow", "tir.vectorhigh", "tir.vectorcombine",
})


def format_float(value: float) -> str:
    """The shortest text that reads back as the same double (``repr``), with TVM's spelling of
    infinities and NaN as strings.

    Parameters
    ----------
    value : float
        The value.

    Returns
    -------
    str
        The text.

    Examples
    --------
    >>> from tensorize.script.printer_expr import format_float
    >>> format_float(0.1), format_float(float("inf"))
    ('0.1', '"inf"')
    """
    if math.isinf(value):
        return '"inf"' if value > 0 else '"-inf"'
    if math.isnan(value):
        return '"nan"'
    return repr(float(value))


def format_str(value: str) -> str:
    """A double-quoted Python string literal.

    Parameters
    ----------
    value : str
        The string.

    Returns
    -------
    str
        The text.
    """
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def dtype_call(dtype: str) -> str:
    """``T.float32`` for a scalar dtype, ``T.handle`` for pointers (the type constructors of TVMScript).

    Parameters
    ----------
    dtype : str
        The dtype.

    Returns
    -------
    str
        The text.
    """
    return "T." + dtype


class ExprPrinter:
    """Prints expressions against a ``NameTable``.

    ``on_free_var(var)`` / ``on_free_buffer(buf)`` are called for a variable or buffer that no
    enclosing construct defined; they must define it (and return its name)."""

    def __init__(self, names: NameTable, syntax_sugar: bool = True,
                 on_free_var: Callable[[E.Var], str] | None = None,
                 on_free_buffer: Callable[[Buffer], str] | None = None):
        self.names = names
        self.syntax_sugar = syntax_sugar
        self.on_free_var = on_free_var or (lambda v: names.define(v, v.name))
        self.on_free_buffer = on_free_buffer or (lambda b: names.define(b, b.name))
        self._dispatch: dict[type, Callable] = {}

    # -- entry points ----------------------------------------------------------------------
    def expr(self, e) -> str:
        """The text of an expression.

        Parameters
        ----------
        e : PrimExpr
            The expression.

        Returns
        -------
        str
            The text.
        """
        return self._p(e)[0]

    def var(self, v: E.Var) -> str:
        """The name of a variable (free variables are reported through ``on_free_var``).

        Parameters
        ----------
        v : Var
            The variable.

        Returns
        -------
        str
            The name.
        """
        name = self.names.name_of(v)
        return name if name is not None else self.on_free_var(v)

    def buffer(self, b: Buffer) -> str:
        """The name of a buffer (free buffers are reported through ``on_free_buffer``).

        Parameters
        ----------
        b : Buffer
            The buffer.

        Returns
        -------
        str
            The name.
        """
        name = self.names.name_of(b)
        return name if name is not None else self.on_free_buffer(b)

    def value(self, obj: Any) -> str:
        """Any attribute value: Python scalars and containers, nodes, dtypes.

        Parameters
        ----------
        obj : any
            The value.

        Returns
        -------
        str
            The text.
        """
        if isinstance(obj, bool):
            return "True" if obj else "False"
        if isinstance(obj, int):
            return str(obj)
        if isinstance(obj, float):
            return format_float(obj)
        if isinstance(obj, str):
            return format_str(obj)
        if obj is None:
            return "None"
        if isinstance(obj, (list, tuple)):
            inner = ", ".join(self.value(x) for x in obj)
            if isinstance(obj, tuple):
                return f"({inner},)" if len(obj) == 1 else f"({inner})"
            return f"[{inner}]"
        if isinstance(obj, dict):
            return self.dict_text(obj)
        if isinstance(obj, E.PrimExpr):
            return self.expr(obj)
        if isinstance(obj, Buffer):
            return self.buffer(obj)
        if isinstance(obj, E.Range):
            return f"T.Range({self.expr(obj.min)}, {self.expr(E.add(obj.min, obj.extent))})"
        if isinstance(obj, E.IterVar):
            return self.iter_var(obj)
        if isinstance(obj, Node):
            return obj.script()  # a nested node of another kind (a BufferRegion, ...): the registered printer
        return repr(obj)

    def dict_text(self, mapping: dict) -> str:
        """A dict literal of attribute values, keys sorted.

        Parameters
        ----------
        mapping : dict
            The attributes.

        Returns
        -------
        str
            The text.
        """
        items = list(mapping.items())
        if all(isinstance(k, str) for k, _ in items):
            items.sort(key=lambda kv: kv[0])  # TVM prints attribute maps in key order
        return "{" + ", ".join(f"{self.value(k)}: {self.value(v)}" for k, v in items) + "}"

    def iter_var(self, iv: E.IterVar) -> str:
        """``T.iter_var(...)`` text of an IterVar.

        Parameters
        ----------
        iv : IterVar
            The iteration variable.

        Returns
        -------
        str
            The text.
        """
        kinds = {E.IterVar.DataPar: "DataPar", E.IterVar.ThreadIndex: "ThreadIndex",
                 E.IterVar.CommReduce: "CommReduce", E.IterVar.Ordered: "Ordered", E.IterVar.Opaque: "DimInfo"}
        dom = "None" if iv.dom is None else self.value(iv.dom)
        return f'T.iter_var({self.var(iv.var)}, {dom}, "{kinds.get(iv.iter_type, "DataPar")}", {format_str(iv.thread_tag)})'

    def indices(self, indices) -> str:
        """Buffer subscript text: ``i, j``; a constant-stride Ramp prints as a slice ``b:b + 8``;
        no indices print as ``()``.

        Parameters
        ----------
        indices : list of PrimExpr
            The indices.

        Returns
        -------
        str
            The text.
        """
        if not indices:
            return "()"
        parts = []
        for index in indices:
            if isinstance(index, E.Ramp) and isinstance(index.stride, E.IntImm) and self.syntax_sugar:
                stop = E.add(index.base, E.mul(index.stride, index.lanes))
                text = f"{self.expr(index.base)}:{self.expr(stop)}"
                if index.stride.value != 1:
                    text += f":{self.expr(index.stride)}"
                parts.append(text)
            else:
                parts.append(self.expr(index))
        return ", ".join(parts)

    # -- expressions with precedence -----------------------------------------------------
    def _p(self, e) -> tuple[str, int]:
        if not isinstance(e, E.PrimExpr):
            if isinstance(e, (int, float, bool, str)):
                return self.value(e), P_ATOM
            raise TVMTypeError(f"cannot print {type(e).__name__} as an expression")
        handler = self._dispatch.get(type(e))
        if handler is None:
            handler = self._handler_for(type(e))
            self._dispatch[type(e)] = handler
        return handler(e)

    def _handler_for(self, cls: type) -> Callable:
        if cls in _BINARY:
            sym, prec, call_name = _BINARY[cls]
            return lambda e: self._binary(e, sym, prec, call_name)
        if cls in _CALL_BINARY:
            name = _CALL_BINARY[cls]
            # Two constants would fold when parsed back through T.min/T.truncmod: keep the node's own name.
            return lambda e: (f"T.{cls.__name__ if _is_const(e.a) and _is_const(e.b) else name}"
                              f"({self.expr(e.a)}, {self.expr(e.b)})", P_ATOM)
        for base in cls.__mro__:
            method = getattr(self, "_print_" + base.__name__, None)
            if method is not None:
                return method
        raise TVMTypeError(f"the TVMScript printer does not know expression type {cls.__name__}")

    def _binary(self, e, sym: str, prec: int, call_name: str) -> tuple[str, int]:
        if not self.syntax_sugar or (_is_const(e.a) and _is_const(e.b)):
            # Two constants would fold when parsed back: keep the node with its call form.
            return f"T.{call_name}({self.expr(e.a)}, {self.expr(e.b)})", P_ATOM
        a, pa = self._p(e.a)
        b, pb = self._p(e.b)
        if prec == P_CMP and isinstance(e.a, E.IntImm) and e.a.dtype == "int32":
            # ``0 < i`` would be evaluated by Python as the reflected ``i > 0``; a typed constant keeps the order.
            a, pa = f"T.int32({e.a.value})", P_ATOM
        # Left-associative: the right operand needs parentheses at equal precedence; comparisons
        # chain in Python, so they need them on both sides.
        if pa < prec or (pa == prec and prec == P_CMP):
            a = f"({a})"
        if pb <= prec:
            b = f"({b})"
        return f"{a} {sym} {b}", prec

    def _print_Div(self, e):
        if _is_const(e.a) and _is_const(e.b):
            return f"T.Div({self.expr(e.a)}, {self.expr(e.b)})", P_ATOM
        if dt.is_float(e.dtype) and self.syntax_sugar:
            a, pa = self._p(e.a)
            b, pb = self._p(e.b)
            a = f"({a})" if pa < P_MUL else a
            b = f"({b})" if pb <= P_MUL else b
            return f"{a} / {b}", P_MUL
        name = "Div" if dt.is_float(e.dtype) else "truncdiv"
        return f"T.{name}({self.expr(e.a)}, {self.expr(e.b)})", P_ATOM

    def _print_Var(self, e):
        return self.var(e), P_ATOM

    def _print_IntImm(self, e):
        if e.dtype == "int32":
            return str(e.value), (P_UNARY if e.value < 0 else P_ATOM)
        if e.dtype == "bool":
            return f"T.bool({'True' if e.value else 'False'})", P_ATOM
        return f"{dtype_call(e.dtype)}({e.value})", P_ATOM

    def _print_FloatImm(self, e):
        return f"{dtype_call(e.dtype)}({format_float(e.value)})", P_ATOM

    def _print_StringImm(self, e):
        return format_str(e.value), P_ATOM

    def _print_Cast(self, e):
        return f'T.Cast("{e.dtype}", {self.expr(e.value)})', P_ATOM

    def _print_Not(self, e):
        if not self.syntax_sugar:
            return f"T.Not({self.expr(e.a)})", P_ATOM
        a, pa = self._p(e.a)
        return f"not {a if pa >= P_NOT else f'({a})'}", P_NOT

    def _print_Select(self, e):
        return f"T.Select({self.expr(e.condition)}, {self.expr(e.true_value)}, {self.expr(e.false_value)})", P_ATOM

    def _print_BufferLoad(self, e):
        text = f"{self.buffer(e.buffer)}[{self.indices(e.indices)}]"
        if e.predicate is not None:
            begin = ", ".join(self.expr(i.base if isinstance(i, E.Ramp) else i) for i in e.indices)
            text = f'{self.buffer(e.buffer)}.vload([{begin}], "{e.dtype}", predicate={self.expr(e.predicate)})'
        return text, P_ATOM

    def _print_ProducerLoad(self, e):
        name = getattr(e.producer, "name", "tensor")
        return f"{name}[{self.indices(e.indices)}]", P_ATOM

    def _print_Ramp(self, e):
        return f"T.Ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})", P_ATOM

    def _print_Broadcast(self, e):
        return f"T.Broadcast({self.expr(e.value)}, {e.lanes})", P_ATOM

    def _print_Shuffle(self, e):
        vectors = ", ".join(self.expr(v) for v in e.vectors)
        indices = ", ".join(self.expr(i) for i in e.indices)
        return f"T.Shuffle([{vectors}], [{indices}])", P_ATOM

    def _print_Let(self, e):
        value = self.expr(e.value)
        self.names.push_scope()
        try:
            name = self.names.define(e.var, e.var.name)
            body = self.expr(e.body)
        finally:
            self.names.pop_scope()
        return f"T.Let({body}, where={{{name}: {value}}})", P_ATOM

    def _print_Call(self, e):
        op = e.op
        name = op.name if hasattr(op, "name") else str(op)
        short = name[4:] if name.startswith("tir.") else name
        args = [self.expr(a) for a in e.args]
        if name in DTYPE_FIRST_OPS:
            args.insert(0, f'"{e.dtype}"')
        return f"T.{short}({', '.join(args)})", P_ATOM

    def _print_Reduce(self, e):
        source = ", ".join(self.expr(s) for s in e.source)
        init = ", ".join(self.expr(s) for s in e.init)
        axis = ", ".join(self.iter_var(a) for a in e.axis)
        return (f"T.reduce({self.comm_reducer(e.combiner)}, source=[{source}], init=[{init}], axis=[{axis}], "
                f"condition={self.expr(e.condition)}, value_index={e.value_index})", P_ATOM)

    def comm_reducer(self, r: E.CommReducer) -> str:
        """``T.comm_reducer(lambda x, y: x + y, [T.float32(0.0)])``.

        Parameters
        ----------
        r : CommReducer
            The reducer.

        Returns
        -------
        str
            The text.
        """
        identity = ", ".join(self.expr(v) for v in r.identity_element)
        self.names.push_scope()
        try:
            params = ", ".join(self.names.define(v, v.name) for v in list(r.lhs) + list(r.rhs))
            results = [self.expr(v) for v in r.result]
        finally:
            self.names.pop_scope()
        body = results[0] if len(results) == 1 else f"({', '.join(results)})"
        return f"T.comm_reducer(lambda {params}: {body}, [{identity}])"


def _is_const(e) -> bool:
    return isinstance(e, (E.IntImm, E.FloatImm))
