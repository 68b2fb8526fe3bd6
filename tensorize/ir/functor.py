"""Visitors and mutators over statements and expressions, and the functional helpers of
``tvm.tir.stmt_functor``: ``post_order_visit``, ``ir_transform``, ``substitute``.

Subclass ``StmtExprVisitor`` / ``StmtExprMutator`` and override ``visit_<node>_`` methods
(``visit_for_``, ``visit_buffer_load_``, ``visit_add_`` ...). Mutators rebuild a node only when
one of its children changed, so untouched subtrees keep their identity.

>>> from tensorize.ir.expr import Var
>>> i = Var("i")
>>> e = substitute(i * 2 + 1, {i: Var("j")})
>>> e.a.a.name
'j'
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping

from . import expr as E
from . import stmt as S
from .buffer import Buffer
from .expr import PrimExpr, Range
from .node import Node
from . import expr_scalar
from .mutator import StmtExprMutator
from .visitor import StmtExprVisitor


# Aliases with TVM's names.
ExprVisitor = StmtVisitor = StmtExprVisitor
ExprMutator = StmtMutator = StmtExprMutator


class _PostOrderVisitor(StmtExprVisitor):
    def __init__(self, fvisit: Callable):
        self.fvisit = fvisit

    def visit_stmt(self, stmt):
        super().visit_stmt(stmt)
        self.fvisit(stmt)

    def visit_expr(self, expr):
        super().visit_expr(expr)
        self.fvisit(expr)


def post_order_visit(stmt, fvisit: Callable[[Node], None]) -> None:
    """Call ``fvisit`` on every statement and expression under ``stmt``, children first.

    Parameters
    ----------
    stmt : Stmt or PrimExpr
        The root.
    fvisit : callable
        Called with each node.

    Examples
    --------
    >>> from tensorize.ir.expr import Var
    >>> seen = []
    >>> post_order_visit(Var("x") + 1, lambda n: seen.append(type(n).__name__))
    >>> seen
    ['Var', 'IntImm', 'Add']
    """
    _PostOrderVisitor(fvisit).visit(stmt)


def _type_key_matches(node, keys: frozenset | None) -> bool:
    if keys is None:
        return True
    key = type(node)._type_key
    return key in keys or key.split(".")[-1] in keys


class _IRTransformer(StmtExprMutator):
    def __init__(self, preorder, postorder, keys):
        self.preorder, self.postorder, self.keys = preorder, postorder, keys

    def _apply(self, node, visit_children):
        enabled = _type_key_matches(node, self.keys)
        if enabled and self.preorder is not None:
            result = self.preorder(node)
            if result is not None:
                return result
        new = visit_children(node)
        if enabled and self.postorder is not None:
            result = self.postorder(new)
            if result is not None:
                return result
        return new

    def visit_stmt(self, stmt):
        return self._apply(stmt, super().visit_stmt)

    def visit_expr(self, expr):
        return self._apply(expr, super().visit_expr)


def ir_transform(stmt, preorder: Callable | None, postorder: Callable | None, only_enable: Iterable[str] | None = None):
    """Rewrite ``stmt``: for each node whose type key is in ``only_enable`` (``["tir.For"]``; all nodes when
    empty), call ``preorder(node)``: a non-None result replaces the node and skips its children;
    otherwise the children are rewritten and ``postorder(new_node)`` may return a replacement.

    Parameters
    ----------
    stmt : Stmt
        The statement.
    preorder : callable or None
        Called before the children.
    postorder : callable or None
        Called after the children; its result replaces the node.
    only_enable : list of str, optional
        Type keys to call the functions on.

    Returns
    -------
    Stmt
        The rewritten statement.
    """
    keys = frozenset(only_enable) if only_enable else None
    return _IRTransformer(preorder, postorder, keys).visit(stmt)


class _Substituter(StmtExprMutator):
    def __init__(self, lookup: Callable):
        self.lookup = lookup

    def visit_var_(self, op):
        new = self.lookup(op)
        return op if new is None else E.convert(new)

    visit_size_var_ = visit_var_


def substitute(node, value_map: Mapping | Callable):
    """Replace variables in ``node`` (a statement, an expression, or a list/Range/BufferRegion of them)
    by the expressions ``value_map`` gives (a dict from Var, or a function returning None to keep).

    Parameters
    ----------
    node : Stmt, PrimExpr or list
        What to rewrite.
    value_map : dict or callable
        Var to expression (a callable returns None to keep a Var).

    Returns
    -------
    Stmt, PrimExpr or list
        The rewritten node.

    Examples
    --------
    >>> from tensorize.ir.functor import substitute
    >>> i = tvm.tir.Var("i", "int32")
    >>> j = tvm.tir.Var("j", "int32")
    >>> substitute(i * 2 + 1, {i: j + 1})
    (j + 1) * 2 + 1
    """
    if callable(value_map) and not isinstance(value_map, Mapping):
        lookup = value_map
    else:
        if not value_map:
            return node
        table = {id(k): v for k, v in value_map.items()}
        lookup = lambda v: table.get(id(v))  # noqa: E731
    mutator = _Substituter(lookup)
    if isinstance(node, (list, tuple)):
        return type(node)(substitute_with(mutator, x) for x in node)
    return substitute_with(mutator, node)


def substitute_with(mutator: StmtExprMutator, node):
    """Apply ``mutator`` to ``node``, a statement, an expression, or a list/Range/BufferRegion of them.

    Parameters
    ----------
    mutator : StmtExprMutator
        The mutator.
    node : Node or list
        What to rewrite.

    Returns
    -------
    Node or list
        The rewritten node.
    """
    if isinstance(node, Range):
        return mutator.visit_range(node)
    if isinstance(node, S.BufferRegion):
        return mutator.visit_buffer_region(node)
    if isinstance(node, (int, float)):
        return node
    return mutator.visit(node)


# Free variables of expression objects, cached per (immutable) object: analyses such as region
# relaxation ask for the variables of every sub-expression, which would otherwise be quadratic.
# Entries keep their expression alive so ``id`` keys stay unique; the table is dropped when large.
_EXPR_VARS: dict[int, tuple] = {}
_EXPR_VARS_LIMIT = 1 << 16
_LEAVES = (E.IntImm, E.FloatImm, E.StringImm)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {E.Not: ("a",), E.Cast: ("value",), E.Broadcast: ("value",),
                                               E.Ramp: ("base", "stride"),
                                               E.Select: ("condition", "true_value", "false_value")}


def _expr_vars(e) -> tuple:
    """The distinct variables of expression ``e`` in first-use order (same order as ``collect_vars``)."""
    hit = _EXPR_VARS.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    t = type(e)
    if t is E.Var or t is E.SizeVar:
        return (e,)
    if t in _LEAVES:
        return ()
    if isinstance(e, E.BinaryOpExpr):
        parts = (_expr_vars(e.a), _expr_vars(e.b))
    elif t in _CHILD_FIELDS:
        parts = tuple(_expr_vars(getattr(e, f)) for f in _CHILD_FIELDS[t])
    elif t is E.BufferLoad:
        parts = tuple(_expr_vars(i) for i in e.indices)
        if e.predicate is not None:
            parts += (_expr_vars(e.predicate),)
    else:
        found: dict[int, E.Var] = {}
        post_order_visit(e, lambda n: isinstance(n, E.Var) and found.setdefault(id(n), n))
        parts = (tuple(found.values()),)
    nonempty = [p for p in parts if p]
    if len(nonempty) <= 1:
        result = nonempty[0] if nonempty else ()
    else:
        merged: dict[int, E.Var] = {}
        for p in nonempty:
            for v in p:
                merged.setdefault(id(v), v)
        result = tuple(merged.values())
    if len(_EXPR_VARS) >= _EXPR_VARS_LIMIT:
        _EXPR_VARS.clear()
    _EXPR_VARS[id(e)] = (e, result)
    return result


def collect_vars(node) -> list:
    """The distinct variables used in ``node``, in first-use order.

    Parameters
    ----------
    node : Node
        An expression or statement.

    Returns
    -------
    list of Var
        The variables.
    """
    if isinstance(node, PrimExpr):
        return list(_expr_vars(node))
    seen: dict[int, E.Var] = {}

    def f(n):
        if isinstance(n, E.Var) and id(n) not in seen:
            seen[id(n)] = n

    post_order_visit(node, f)
    return list(seen.values())


class _Found(Exception):
    """Ends a variable search at the first match."""


class _VarSearch(StmtExprVisitor):
    def __init__(self, hit: Callable[[E.Var], bool]):
        self.hit = hit

    def visit_var_(self, op):
        if self.hit(op):
            raise _Found

    visit_size_var_ = visit_var_


def uses_var(node, predicate: Callable[[E.Var], bool]) -> bool:
    """Whether ``node`` uses a variable for which ``predicate`` holds.

    Parameters
    ----------
    node : Node
        An expression or statement.
    predicate : callable
        Tests one Var.

    Returns
    -------
    bool
        True when some used variable satisfies ``predicate``.
    """
    # the schedule primitives ask this of every statement they rebuild: the search stops at the first match
    if isinstance(node, E.Var):
        return bool(predicate(node))
    if isinstance(node, (E.IntImm, E.FloatImm)):
        return False
    try:
        _VarSearch(predicate).visit(node)
    except _Found:
        return True
    return False


def uses_any(node, ids: set[int]) -> bool:
    """Whether ``node`` uses a variable whose ``id`` is in ``ids``.

    Parameters
    ----------
    node : Node
        An expression or statement.
    ids : set of int
        Variable ids.

    Returns
    -------
    bool
        True when ``node`` uses one of them.
    """
    if not ids:
        return False
    return uses_var(node, lambda v: id(v) in ids)


__all__ = ["StmtExprVisitor", "StmtExprMutator", "ExprVisitor", "ExprMutator", "StmtVisitor", "StmtMutator",
           "post_order_visit", "ir_transform", "substitute", "collect_vars", "uses_var", "uses_any", "Buffer"]


# CommReducer (an expression node, below this module) substitutes through this.
expr_scalar.install(substitute=substitute)


def calls_op(node, names) -> bool:
    """Whether ``node`` calls one of the built-in ops ``names`` (e.g. ``"tir.ptx_wgmma"``).

    Parameters
    ----------
    node : Node
        An expression or statement.
    names : str or collection of str
        Op names.

    Returns
    -------
    bool
        True when a ``Call`` of one of them occurs in ``node``.

    Examples
    --------
    >>> from tensorize.ir.op import call_extern
    >>> calls_op(call_extern("int32", "f"), "tir.call_extern")
    True
    """
    names = {names} if isinstance(names, str) else set(names)
    found = []

    def f(n):
        if not found and isinstance(n, E.Call) and n.op.name in names:
            found.append(n)

    post_order_visit(node, f)
    return bool(found)
