"""Scoped, unique names for the variables and buffers a printed program defines.

TVMScript text must parse back to the same structure, so two different objects that are alive
in the same scope never share a name: the second ``i`` prints as ``i_1``. A name is released when
the scope that defined it closes, so sibling loops may both print as ``i`` (as TVM does).

>>> table = NameTable()
>>> table.push_scope()
>>> a, b = object(), object()
>>> table.define(a, "i"), table.define(b, "i")
('i', 'i_1')
>>> table.pop_scope()
>>> table.name_of(a) is None
True
"""
from __future__ import annotations

import keyword
import re

# Names the printed text itself relies on; a variable with one of these hints is renamed.
RESERVED = frozenset(keyword.kwlist) | {"T", "I", "range", "True", "False", "None", "tvm"}

_INVALID = re.compile(r"[^0-9A-Za-z_]")


def sanitize(hint: str) -> str:
    """A valid Python identifier close to ``hint``: ``"i.outer"`` -> ``"i_outer"``, ``""`` -> ``"v"``.

    Parameters
    ----------
    hint : str
        The name hint.

    Returns
    -------
    str
        The identifier.
    """
    name = _INVALID.sub("_", hint or "")
    if not name:
        return "v"
    if name[0].isdigit():
        name = "v_" + name
    return name


class NameTable:
    """Maps objects (by identity) to printed names, with nested scopes.

    Names that are *aliases* (``A.data`` for a buffer's pointer) are looked up like names but never
    block a plain name from being used."""

    __slots__ = ("_names", "_used", "_scopes", "_keep")

    def __init__(self):
        self._names: dict[int, str] = {}
        self._used: set[str] = set()
        self._scopes: list[list[tuple[int, bool]]] = []
        self._keep: list[object] = []  # holds defined objects alive so their ids stay unique

    def push_scope(self) -> None:
        """Open a naming scope."""
        self._scopes.append([])

    def pop_scope(self) -> None:
        """Close the innermost scope; its names become free for reuse."""
        for key, owns_name in self._scopes.pop():
            name = self._names.pop(key, None)
            if owns_name and name is not None:
                self._used.discard(name)

    def name_of(self, obj) -> str | None:
        """The name given to ``obj``, or None.

        Parameters
        ----------
        obj : Node
            A variable or buffer.

        Returns
        -------
        str or None
            Its name.
        """
        return self._names.get(id(obj))

    def is_defined(self, obj) -> bool:
        """Whether ``obj`` has a name.

        Parameters
        ----------
        obj : Node
            A variable or buffer.

        Returns
        -------
        bool
            The answer.
        """
        return id(obj) in self._names

    def define(self, obj, hint: str, outermost: bool = False) -> str:
        """Give ``obj`` a fresh unique name based on ``hint`` in the innermost scope (or the
        outermost one, for definitions hoisted to the top of a function).

        Parameters
        ----------
        obj : Node
            A variable or buffer.
        hint : str
            The name hint.
        outermost : bool
            Define it in the outermost scope.

        Returns
        -------
        str
            The name.
        """
        base = sanitize(hint)
        name = base
        if name in self._used or name in RESERVED:
            k = 1  # like TVM: the first free suffix, so released names are reused
            while f"{base}_{k}" in self._used:
                k += 1
            name = f"{base}_{k}"
        self._used.add(name)
        self._register(obj, name, owns_name=True, outermost=outermost)
        return name

    def alias(self, obj, text: str) -> None:
        """Print ``obj`` as ``text`` (an expression such as ``A.data``) while the scope lives.

        Parameters
        ----------
        obj : Node
            A variable.
        text : str
            The text to print for it.
        """
        self._register(obj, text, owns_name=False)

    def _register(self, obj, name: str, owns_name: bool, outermost: bool = False) -> None:
        key = id(obj)
        self._names[key] = name
        self._keep.append(obj)
        if self._scopes:
            self._scopes[0 if outermost else -1].append((key, owns_name))
