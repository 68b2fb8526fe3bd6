"""Structural equality and hashing of IR.

Two programs are structurally equal when they have the same shape, with variables and buffers
matched by position of first occurrence (never by name). ``assert_structural_equal`` says where
they first differ.

>>> from tensorize.ir.expr import Var
>>> x, y = Var("x"), Var("y")
>>> structural_equal(x + 1, y + 1), structural_equal(x + 1, x + 2)
(True, False)
"""
from __future__ import annotations

import enum
import hashlib
from functools import lru_cache
from typing import Any

from .buffer import Buffer
from .expr import Op, PointerType, Var
from . import node as _node_module
from .node import Node
from .stmt import Block


class _Mismatch(Exception):
    def __init__(self, path: list[str], lhs: Any, rhs: Any, reason: str):
        super().__init__(reason)
        self.path, self.lhs, self.rhs, self.reason = path, lhs, rhs, reason


class _Equal:
    def __init__(self, map_free_vars: bool):
        self.map_free_vars = map_free_vars
        self.lmap: dict[int, Any] = {}
        self.rmap: dict[int, Any] = {}
        self.path: list[str] = []

    def fail(self, lhs, rhs, reason):
        raise _Mismatch(list(self.path), lhs, rhs, reason)

    def bind(self, lhs, rhs) -> None:
        """Match two defining objects (vars or buffers) or check they were matched consistently."""
        got = self.lmap.get(id(lhs))
        if got is not None:
            if got is not rhs:
                self.fail(lhs, rhs, f"{_name(lhs)} was matched with {_name(got)} earlier, not with {_name(rhs)}")
            return False
        if id(rhs) in self.rmap:
            self.fail(lhs, rhs, f"{_name(rhs)} was matched with another object earlier")
        self.lmap[id(lhs)] = rhs
        self.rmap[id(rhs)] = lhs
        return True

    def eq(self, lhs, rhs) -> None:
        if isinstance(lhs, Var):
            if not isinstance(rhs, Var):
                self.fail(lhs, rhs, f"a variable on the left, a {type(rhs).__name__} on the right")
            if lhs.dtype != rhs.dtype or lhs.type_annotation != rhs.type_annotation:
                self.fail(lhs, rhs, f"variable types differ: {lhs.dtype} vs {rhs.dtype}")
            if not self.map_free_vars and lhs is not rhs and id(lhs) not in self.lmap:
                self.fail(lhs, rhs, f"{_name(lhs)} and {_name(rhs)} are different variables (map_free_vars=False)")
            self.bind(lhs, rhs)
            return
        if isinstance(lhs, Buffer):
            if not isinstance(rhs, Buffer):
                self.fail(lhs, rhs, f"a buffer on the left, a {type(rhs).__name__} on the right")
            if self.bind(lhs, rhs):
                self.fields(lhs, rhs)
            return
        if isinstance(lhs, Node):
            if type(lhs) is not type(rhs):
                self.fail(lhs, rhs, f"node types differ: {type(lhs).__name__} vs {type(rhs).__name__}")
            if getattr(lhs, "dtype", None) != getattr(rhs, "dtype", None) and hasattr(lhs, "dtype"):
                self.fail(lhs, rhs, f"dtypes differ: {lhs.dtype} vs {rhs.dtype}")
            self.fields(lhs, rhs)
            return
        if isinstance(lhs, (list, tuple)):
            if not isinstance(rhs, (list, tuple)) or len(lhs) != len(rhs):
                self.fail(lhs, rhs, f"lengths differ: {len(lhs)} vs {len(rhs) if isinstance(rhs, (list, tuple)) else rhs!r}")
            for i, (a, b) in enumerate(zip(lhs, rhs)):
                self.path.append(f"[{i}]")
                self.eq(a, b)
                self.path.pop()
            return
        if isinstance(lhs, dict):
            if not isinstance(rhs, dict) or len(lhs) != len(rhs):
                self.fail(lhs, rhs, "dictionaries differ in size")
            if all(isinstance(k, str) for k in lhs):
                for k in lhs:
                    if k not in rhs:
                        self.fail(lhs, rhs, f"key {k!r} is missing on the right")
                    self.path.append(f"[{k!r}]")
                    self.eq(lhs[k], rhs[k])
                    self.path.pop()
            else:  # keyed by nodes (buffer_map): as TVM, entries match by their (already matched) keys
                rhs_by_id = {id(k): k for k in rhs}
                for i, ((ka, va), (kb, vb)) in enumerate(zip(lhs.items(), rhs.items())):
                    matched = self.lmap.get(id(ka))
                    if matched is not None and id(matched) in rhs_by_id:
                        kb, vb = matched, rhs[matched]
                    self.path.append(f"<entry {i}>")
                    self.eq(ka, kb)
                    self.eq(va, vb)
                    self.path.pop()
            return
        if isinstance(lhs, (Op, PointerType, enum.Enum)) or lhs is None or isinstance(lhs, (int, float, str, bool)):
            if isinstance(lhs, float) and isinstance(rhs, float) and lhs != lhs and rhs != rhs:
                return  # NaN == NaN structurally
            if type(lhs) is not type(rhs) and not (isinstance(lhs, int) and isinstance(rhs, int)):
                self.fail(lhs, rhs, f"values differ: {lhs!r} vs {rhs!r}")
            if lhs != rhs:
                self.fail(lhs, rhs, f"values differ: {lhs!r} vs {rhs!r}")
            return
        if lhs != rhs:
            self.fail(lhs, rhs, f"values differ: {lhs!r} vs {rhs!r}")

    def fields(self, lhs: Node, rhs: Node) -> None:
        for name in type(lhs)._fields:
            if name == "name_hint" and isinstance(lhs, Block):
                continue  # as TVM: a block's name does not decide equality
            self.path.append("." + name)
            self.eq(getattr(lhs, name), getattr(rhs, name))
            self.path.pop()


def _name(obj) -> str:
    if isinstance(obj, Var):
        return f"variable {obj.name!r}"
    if isinstance(obj, Buffer):
        return f"buffer {obj.name!r}"
    return type(obj).__name__


def structural_equal(lhs, rhs, map_free_vars: bool = True) -> bool:
    """Whether ``lhs`` and ``rhs`` have the same structure (variables matched by position).

    Parameters
    ----------
    lhs : Node
        One side.
    rhs : Node
        The other side.
    map_free_vars : bool
        Match free variables by position.

    Returns
    -------
    bool
        Whether they are equal.

    Examples
    --------
    >>> tvm.ir.structural_equal(matmul(), matmul())
    True
    """
    try:
        _Equal(map_free_vars).eq(lhs, rhs)
    except _Mismatch:
        return False
    return True


def assert_structural_equal(lhs, rhs, map_free_vars: bool = True) -> None:
    """Raise ``ValueError`` naming the first place where ``lhs`` and ``rhs`` differ, with both sides printed.

    Parameters
    ----------
    lhs : Node
        One side.
    rhs : Node
        The other side.
    map_free_vars : bool
        Match free variables by position.

    Raises
    ------
    ValueError
        When they differ.
    """
    try:
        _Equal(map_free_vars).eq(lhs, rhs)
    except _Mismatch as m:
        where = "root" + "".join(m.path)
        raise ValueError(
            f"structural mismatch at {where}: {m.reason}\n"
            f"  left:  {_short(m.lhs)}\n  right: {_short(m.rhs)}\n"
            f"--- left program ---\n{_short(lhs, 4000)}\n--- right program ---\n{_short(rhs, 4000)}"
        ) from None


def _short(obj, limit: int = 300) -> str:
    try:
        text = obj.script() if isinstance(obj, Node) else repr(obj)
    except Exception:  # printing is best effort inside an error message
        text = object.__repr__(obj)
    return text if len(text) <= limit else text[:limit] + " ..."


@lru_cache(maxsize=65536)
def _text_hash(text: str) -> int:
    """A hash of a string that is the same in every process (Python's str hash is salted per process)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _combine(*parts: int) -> int:
    """Hash a tuple of integers; tuples of ints hash the same in every process."""
    return hash(parts)


class _Hasher:
    """Structural hash, stable across processes: strings (type names, dtypes, annotation keys)
    go through a fixed hash function, variables and buffers are numbered by first occurrence."""

    def __init__(self):
        self.ids: dict[int, int] = {}

    def h(self, obj) -> int:
        if isinstance(obj, (Var, Buffer)):
            n = self.ids.get(id(obj))
            if n is None:
                n = self.ids[id(obj)] = len(self.ids)
                if isinstance(obj, Buffer):
                    return _combine(_text_hash("buf"), n, self.fields(obj))
                return _combine(_text_hash("var"), n, _text_hash(obj.dtype))
            return _combine(_text_hash("ref"), n)
        if isinstance(obj, Node):
            return _combine(_text_hash(type(obj).__name__), _text_hash(str(getattr(obj, "dtype", ""))), self.fields(obj))
        if isinstance(obj, str):
            return _text_hash(obj)
        if isinstance(obj, (list, tuple)):
            return _combine(*(self.h(x) for x in obj))
        if isinstance(obj, dict):
            # Order-free, as equality: entries go in the order of their keys' hashes (buffer_map keys
            # are parameters, numbered already), so values number their buffers the same either way.
            keyed = sorted(((self.h(k), i) for i, k in enumerate(obj)), key=lambda e: e[0])
            values = list(obj.values())
            return _combine(*(_combine(hk, self.h(values[i])) for hk, i in keyed))
        if isinstance(obj, Op):
            return _text_hash(obj.name)
        if obj is None:  # hash(None) is an address before Python 3.12
            return 0x5EED
        if isinstance(obj, enum.Enum):
            return hash(int(obj.value)) if isinstance(obj.value, int) else _text_hash(str(obj.value))
        if isinstance(obj, (bool, int, float)):
            return hash(obj)
        return _text_hash(repr(obj))

    def fields(self, node: Node) -> int:
        names = type(node)._fields
        if isinstance(node, Block):
            names = [n for n in names if n != "name_hint"]  # as equality: a block's name does not count
        return _combine(*(self.h(getattr(node, name)) for name in names))


def structural_hash(node, map_free_vars: bool = True) -> int:
    """A hash consistent with ``structural_equal`` (equal programs hash equal), and the same in every
    process, so it can key caches and databases on disk.

    Parameters
    ----------
    node : Node
        The node.
    map_free_vars : bool
        Hash free variables by position.

    Returns
    -------
    int
        The hash.

    Examples
    --------
    >>> tvm.ir.structural_hash(matmul()) == tvm.ir.structural_hash(matmul())
    True
    """
    return _Hasher().h(node) & 0xFFFFFFFFFFFFFFFF


_node_module._STRUCTURAL["hash"] = structural_hash  # Node.__tvm_ffi_value__ hashes through it
