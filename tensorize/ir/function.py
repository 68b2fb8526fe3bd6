"""PrimFunc (a tensor program) and IRModule (a collection of them).

>>> from tensorize.ir.buffer import decl_buffer
>>> from tensorize.ir.stmt import Evaluate
>>> A = decl_buffer((8,), "float32", name="A")
>>> f = PrimFunc([A.data], Evaluate(0), buffer_map={A.data: A})
>>> mod = IRModule({"main": f})
>>> mod["main"] is f
True
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

from .buffer import Buffer
from .expr import Var
from .node import Node, _set
from .stmt import Stmt


class PrimFunc(Node):
    """A tensor program: parameters (variables; buffer parameters map to Buffers in ``buffer_map``),
    a body, and attributes such as ``global_symbol`` and ``tir.noalias``."""

    __slots__ = ("params", "body", "ret_type", "buffer_map", "attrs")
    _fields = ("params", "buffer_map", "attrs", "body")
    _type_key = "tir.PrimFunc"

    def __init__(self, params: Sequence[Var], body: Stmt, ret_type: Any = None,
                 buffer_map: Mapping[Var, Buffer] | None = None, attrs: Mapping[str, Any] | None = None, span=None):
        _set(self, "params", tuple(params))
        _set(self, "body", body)
        _set(self, "ret_type", ret_type)
        _set(self, "buffer_map", dict(buffer_map or {}))
        _set(self, "attrs", dict(attrs or {}))
        _set(self, "span", span)

    def with_attr(self, key_or_dict, value: Any = None) -> "PrimFunc":
        """A copy with attribute(s) set: ``f.with_attr("global_symbol", "main")``.

        Parameters
        ----------
        key_or_dict : str or dict
            An attribute name, or a dict of attributes.
        value : any
            The value (with a name).

        Returns
        -------
        PrimFunc
            The copy.
        """
        attrs = dict(self.attrs)
        if isinstance(key_or_dict, Mapping):
            attrs.update(key_or_dict)
        else:
            attrs[key_or_dict] = value
        return self.replace(attrs=attrs)

    def without_attr(self, key: str) -> "PrimFunc":
        """A copy without attribute ``key``.

        Parameters
        ----------
        key : str
            The attribute name.

        Returns
        -------
        PrimFunc
            The copy.
        """
        attrs = dict(self.attrs)
        attrs.pop(key, None)
        return self.replace(attrs=attrs)

    def with_body(self, body: Stmt, span=None) -> "PrimFunc":
        """A copy with ``body`` replaced.

        Parameters
        ----------
        body : Stmt
            The new body.
        span : Span, optional
            The source location.

        Returns
        -------
        PrimFunc
            The copy.
        """
        return self.replace(body=body)

    @property
    def buffers(self) -> list[Buffer]:
        """The parameter buffers in parameter order."""
        return [self.buffer_map[p] for p in self.params if p in self.buffer_map]


class GlobalVar(Node):
    """The name of a function inside an IRModule."""

    __slots__ = ("name_hint",)
    _fields = ("name_hint",)
    _type_key = "GlobalVar"

    def __init__(self, name_hint: str, span=None):
        _set(self, "name_hint", name_hint)
        _set(self, "span", span)

    def __repr__(self) -> str:
        return f"I.GlobalVar({self.name_hint!r})"


class FunctionMap(dict):
    """The functions of an IRModule, ``{GlobalVar: PrimFunc}``: a dict hashed by identity, as TVM's
    ``Map`` (``mod.functions.__hash__()`` tells whether two modules share the same map object)."""

    __slots__ = ()
    __hash__ = object.__hash__


class IRModule(Node):
    """Functions by name. ``mod["main"]`` gets one; ``mod.script()`` prints the module as TVMScript.

    Like TVM's IRModule, ``mod[name] = func`` and ``update_func`` change the module in place."""

    __slots__ = ("functions", "attrs", "global_infos")
    _fields = ("functions", "attrs")
    _type_key = "IRModule"

    def __init__(self, functions: Mapping | None = None, attrs: Mapping | None = None, global_infos=None, span=None):
        funcs: FunctionMap = FunctionMap()
        for key, func in (functions or {}).items():
            gv = key if isinstance(key, GlobalVar) else GlobalVar(str(key))
            funcs[gv] = func
        _set(self, "functions", funcs)
        _set(self, "attrs", dict(attrs or {}))
        _set(self, "global_infos", dict(global_infos or {}))
        _set(self, "span", span)

    @staticmethod
    def from_expr(func: PrimFunc) -> "IRModule":
        """A module of one function, named by its ``global_symbol`` (``main`` when it has none).

        Parameters
        ----------
        func : PrimFunc
            The function.

        Returns
        -------
        IRModule
            The module.
        """
        name = func.attrs.get("global_symbol", "main")
        return IRModule({name: func})

    def get_global_var(self, name: str) -> GlobalVar:
        """The GlobalVar of the function named ``name``.

        Parameters
        ----------
        name : str
            The function name.

        Returns
        -------
        GlobalVar
            Its GlobalVar.

        Raises
        ------
        KeyError
            When the module has no such function.
        """
        for gv in self.functions:
            if gv.name_hint == name:
                return gv
        raise KeyError(f"no function named {name!r} in the module; it has {self.function_names()}")

    def get_global_vars(self) -> list[GlobalVar]:
        """The GlobalVars of the functions, in order.

        Returns
        -------
        list of GlobalVar
            The GlobalVars.
        """
        return list(self.functions)

    def function_names(self) -> list[str]:
        """The names of the functions, in order.

        Returns
        -------
        list of str
            The names.

        Examples
        --------
        >>> tvm.IRModule({"main": matmul()}).function_names()
        ['main']
        """
        return [gv.name_hint for gv in self.functions]

    def __getitem__(self, key) -> PrimFunc:
        if isinstance(key, GlobalVar):
            return self.functions[key]
        return self.functions[self.get_global_var(key)]

    def __setitem__(self, key, func: PrimFunc) -> None:
        self.update_func(key if isinstance(key, GlobalVar) else self._gv_for(key), func)

    def _gv_for(self, name: str) -> GlobalVar:
        for gv in self.functions:
            if gv.name_hint == name:
                return gv
        return GlobalVar(name)

    def update_func(self, gv: GlobalVar, func: PrimFunc) -> None:
        """Replace the function of ``gv`` in place.

        Parameters
        ----------
        gv : GlobalVar
            The function's GlobalVar.
        func : PrimFunc
            The new function.
        """
        self.functions[gv] = func

    def __contains__(self, key) -> bool:
        if isinstance(key, GlobalVar):
            return key in self.functions
        return any(gv.name_hint == key for gv in self.functions)

    def __iter__(self) -> Iterator[GlobalVar]:
        return iter(self.functions)

    def __len__(self) -> int:
        return len(self.functions)

    def items(self):
        """``(GlobalVar, PrimFunc)`` pairs, in order.

        Returns
        -------
        ItemsView
            The pairs.
        """
        return self.functions.items()

    def with_attr(self, key: str, value: Any) -> "IRModule":
        """A copy with module attribute ``key`` set to ``value``.

        Parameters
        ----------
        key : str
            The attribute name.
        value : any
            Its value.

        Returns
        -------
        IRModule
            The copy.
        """
        attrs = dict(self.attrs)
        attrs[key] = value
        return IRModule(self.functions, attrs, self.global_infos)

    def copy(self) -> "IRModule":
        """A shallow copy (functions shared).

        Returns
        -------
        IRModule
            The copy.
        """
        return IRModule(self.functions, self.attrs, self.global_infos)
