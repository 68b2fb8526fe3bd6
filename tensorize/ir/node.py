"""The base of every IR node: immutable objects with ``__slots__``.

Identity (``same_as``) and structure (``tensorize.ir.structural_equal``) are separate.
Each concrete class lists its structural fields in ``_fields`` (in definition order: fields
that define variables come before fields that use them) and names itself with ``_type_key``
(``"tir.For"``), the key ``ir_transform`` filters on.
"""
from __future__ import annotations

from typing import Any

_set = object.__setattr__
_SLOTS: dict[type, tuple[str, ...]] = {}  # every slot of a node class, for ``replace``

# Printing lives above the IR: ``tensorize.script.printer`` registers its ``script`` function here
# when it loads, and the ``tensorize`` package registers a loader that imports it on first use.
_PRINTER: dict[str, Any] = {"script": None, "load": None}
# ``tensorize.ir.structural`` registers its ``structural_hash`` here when it loads (for ``__tvm_ffi_value__``).
_STRUCTURAL: dict[str, Any] = {"hash": None}


def register_printer(script: Any = None, load: Any = None) -> None:
    """Set the function that prints a node as TVMScript (``script(node, **options) -> str``) and/or
    the function that loads the printer module on first use.

    Parameters
    ----------
    script : callable, optional
        The printer.
    load : callable, optional
        Imports the printer module.
    """
    if script is not None:
        _PRINTER["script"] = script
    if load is not None:
        _PRINTER["load"] = load


class Span:
    """Where a node came from in TVMScript source: file name, line and column (1-based)."""

    __slots__ = ("source_name", "line", "column", "end_line", "end_column")

    def __init__(self, source_name: str, line: int, column: int, end_line: int | None = None, end_column: int | None = None):
        self.source_name, self.line, self.column = source_name, line, column
        self.end_line, self.end_column = end_line, end_column

    def __repr__(self) -> str:
        return f"{self.source_name}:{self.line}:{self.column}"


class Node:
    """Base class of all IR nodes. Nodes are immutable: build a new one with ``replace``."""

    __slots__ = ("span",)
    _fields: tuple[str, ...] = ()
    _type_key = "Node"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; use node.replace({name}=...) to make a changed copy")

    def same_as(self, other: object) -> bool:
        """Identity: the very same node object.

        Parameters
        ----------
        other : object
            Another object.

        Returns
        -------
        bool
            True when ``other is self``.
        """
        return self is other

    def replace(self, **changes: Any) -> "Node":
        """A copy with some fields changed; unchanged fields are shared, ``span`` is kept.

        Parameters
        ----------
        **changes : any
            New values of fields, by name.

        Returns
        -------
        Node
            The copy.
        """
        cls = type(self)
        names = _SLOTS.get(cls)
        if names is None:
            names = _SLOTS[cls] = tuple(name for c in cls.__mro__ for name in getattr(c, "__slots__", ())
                                        if name != "__weakref__")
        new = object.__new__(cls)
        for name in names:
            if name in changes:
                _set(new, name, changes[name])
            elif hasattr(self, name):
                _set(new, name, getattr(self, name))
        return new

    def with_span(self, span: Span | None) -> "Node":
        """This node (spans are not tracked by identity here).

        Parameters
        ----------
        span : Span or None
            The span.

        Returns
        -------
        Node
            This node.
        """
        _set(self, "span", span)
        return self

    def script(self, **kwargs: Any) -> str:
        """TVMScript text of this node (see ``tensorize.script.printer.script`` for the options).

        Parameters
        ----------
        **kwargs : any
            Printer options.

        Returns
        -------
        str
            The TVMScript text.

        Examples
        --------
        >>> print(tvm.tir.const(1.5, "float32").script())
        T.float32(1.5)
        """
        if _PRINTER["script"] is None and _PRINTER["load"] is not None:
            _PRINTER["load"]()
        if _PRINTER["script"] is None:
            raise RuntimeError("no TVMScript printer is registered; import tensorize.script to print IR nodes")
        return _PRINTER["script"](self, **kwargs)

    def show(self, **kwargs: Any) -> None:
        """Print the TVMScript text of this node.

        Parameters
        ----------
        **kwargs : any
            Printer options.
        """
        print(self.script(**kwargs))  # noqa: T201 - user-facing display

    def __str__(self) -> str:
        try:
            return self.script()
        except Exception:  # the printer may not cover a half-built node; fall back to repr
            return object.__repr__(self)

    def __repr__(self) -> str:
        return self.__str__()

    def __tvm_ffi_value__(self) -> int:
        """The value ``tvm_ffi`` sees when a node is passed to one of its functions: the node's
        structural hash (as a signed 64-bit integer), so that ``tvm_ffi.structural_equal`` and
        ``tvm_ffi.structural_hash`` compare tensorize nodes by structure, as they compare TVM's.

        Returns
        -------
        int
            ``tensorize.ir.structural_hash(self)`` in ``[-2**63, 2**63)``.
        """
        value = _STRUCTURAL["hash"](self)
        return value - (1 << 64) if value >= 1 << 63 else value

    def __getstate__(self):
        return {name: getattr(self, name) for cls in type(self).__mro__ for name in getattr(cls, "__slots__", ()) if hasattr(self, name) and name != "__weakref__"}

    def __setstate__(self, state):
        for key, value in state.items():
            _set(self, key, value)
