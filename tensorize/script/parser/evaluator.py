"""Evaluating TVMScript expressions: Python AST -> IR expressions or Python values.

Names resolve to the function's scope (parameters, buffers, loop and block variables) and then
to the enclosing Python scope, so ``M``, ``dtype`` or a helper function defined beside the
prim_func work. Python operators on IR values build IR; on Python values they compute at parse
time (``128 * 2`` is ``256``).
"""
from __future__ import annotations

from ...errors import TVMTypeError, TVMValueError

import ast
import inspect
import functools
import builtins
import operator
from typing import Any

from ...ir import dtype as _dt
from ...ir import expr as E
from ...ir.buffer import Buffer
from ...ir.expr import BufferLoad, PrimExpr, Ramp, Range, convert
from ...arith.linear import simplify_linear
from ...ir.stmt import BufferRegion
from .. import tir as T
from .safety import check_arithmetic

_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
}
_COMPARE = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq,
    ast.NotEq: operator.ne, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}

# Comparisons with an IR operand build the node directly: Python would reflect ``0 < i`` into
# ``i > 0``, and the printed text must parse back to the very same node.
_IR_COMPARE = {ast.Lt: E.LT, ast.LtE: E.LE, ast.Gt: E.GT, ast.GtE: E.GE, ast.Eq: E.EQ, ast.NotEq: E.NE}

_MISSING = object()
_EVAL_METHODS: dict[type, Any] = {}  # AST class -> ExprEvaluator.eval_<Class>


def _is_ir(value) -> bool:
    return isinstance(value, (PrimExpr, E.EqualOp))


def as_index(value):
    """A slice bound or index as IR (Python ints stay ints for folding).

    Parameters
    ----------
    value : int or PrimExpr
        The bound or index.

    Returns
    -------
    int or PrimExpr
        The index.
    """
    return value.asobject() if isinstance(value, E.EqualOp) else value


def slice_range(buffer: Buffer, axis: int, index: slice) -> Range:
    """The Range ``buffer[start:stop]`` covers on ``axis`` (the extent is simplified: ``vi:vi + 4`` has extent 4).

    Parameters
    ----------
    buffer : Buffer
        The buffer.
    axis : int
        The axis.
    index : slice
        The slice.

    Returns
    -------
    Range
        The range.
    """
    if index.step not in (None, 1):
        raise TVMValueError(f"a region slice cannot have a step ({index.step}); write start:stop")
    start = 0 if index.start is None else as_index(index.start)
    stop = buffer.shape[axis] if index.stop is None else as_index(index.stop)
    start = convert(start)
    extent = simplify_linear(convert(stop) - start)
    return Range.from_min_extent(start, extent)


def subscript_buffer(buffer: Buffer, indices: tuple, region: bool):
    """``A[...]``: a BufferLoad, or a BufferRegion when ``region`` and some index is a slice; slices in
    loads become vector (Ramp) indices.

    Parameters
    ----------
    buffer : Buffer
        The buffer.
    indices : tuple
        The subscript.
    region : bool
        Whether slices make a region.

    Returns
    -------
    BufferLoad or BufferRegion
        The access.
    """
    for i in indices:
        for part in ((i.start, i.stop, i.step) if isinstance(i, slice) else (i,)):
            part = as_index(part)
            if part is None and isinstance(i, slice):
                continue
            if isinstance(part, bool) or not isinstance(part, (int, PrimExpr)) or (
                    isinstance(part, PrimExpr) and not _dt.is_int(part.dtype)):
                raise TVMTypeError(f"buffer {buffer.name!r} is indexed with {part!r}; indices are integers, integer "
                                   "expressions or slices of them")
    if not any(isinstance(i, slice) for i in indices):
        if region:  # a point region (T.reads(A[vi, vj])): no BufferLoad to build and convert
            return BufferRegion.from_point(buffer, [as_index(i) for i in indices])
        return BufferLoad(buffer, [as_index(i) for i in indices])
    if region:
        ranges = [slice_range(buffer, axis, i) if isinstance(i, slice) else Range.from_min_extent(as_index(i), 1)
                  for axis, i in enumerate(indices)]
        return BufferRegion(buffer, ranges)
    out = []
    for axis, index in enumerate(indices):
        if isinstance(index, slice):
            r = slice_range(buffer, axis, slice(index.start, index.stop))
            step = 1 if index.step is None else index.step
            extent = r.extent
            if not isinstance(extent, E.IntImm):
                raise TVMValueError("a vector slice needs a constant length, e.g. A[i:i + 8]")
            out.append(Ramp(r.min, step, (extent.value + step - 1) // step))
        else:
            out.append(as_index(index))
    return BufferLoad(buffer, out)


class ExprEvaluator:
    """Evaluates expression ASTs in a parser's scope. ``parser`` provides ``lookup``, ``source``
    and ``call_special`` (constructs that need the parser, such as ``T.axis.remap``)."""

    def __init__(self, parser, policy=None):
        self.parser = parser
        self.region_context = False
        self.policy = policy  # a SafePolicy when parsing text: only TVMScript's vocabulary is evaluated

    def _check(self, node, message: str | None) -> None:
        if message is not None:
            raise self.error(node, message)

    def error(self, node, message):
        """A DiagnosticError at ``node`` (to raise).

        Parameters
        ----------
        node : ast.AST
            The statement or expression (for error locations).
        message : str
            The message.

        Returns
        -------
        DiagnosticError
            The error.
        """
        return self.parser.source.error(node, message)

    def eval(self, node: ast.expr) -> Any:
        # Dispatch on the AST class through a per-class table (the hot path of parsing).
        """The value of an expression node, through its ``eval_<Type>`` method.

        Parameters
        ----------
        node : ast.expr
            The expression.

        Returns
        -------
        any
            Its value.
        """
        method = _EVAL_METHODS.get(type(node))
        if method is None:
            method = getattr(type(self), "eval_" + type(node).__name__, None)
            if method is None:
                raise self.error(node, f"unsupported Python expression in TVMScript: {type(node).__name__}")
            _EVAL_METHODS[type(node)] = method
        return method(self, node)

    # -- leaves ------------------------------------------------------------------------------
    def eval_Constant(self, node: ast.Constant):
        return node.value

    def eval_Name(self, node: ast.Name):
        value = self.parser.lookup(node.id, _MISSING)
        if value is _MISSING:
            if self.policy is not None:
                raise self.error(node, f"unknown name {node.id!r}: TVMScript text may use only T.*, I.*, "
                                       "literals and the names it defines itself")
            raise self.error(node, f"unknown name {node.id!r}: it is neither defined in the function nor in the "
                                   "enclosing Python scope")
        return value

    def eval_Attribute(self, node: ast.Attribute):
        value = node.value
        base = self.eval_Name(value) if type(value) is ast.Name else self.eval(value)  # T.xxx: the common case
        policy = self.policy
        if policy is not None:
            self._check(node, policy.check_attribute(base, node.attr))
        try:
            result = getattr(base, node.attr)
        except AttributeError:
            owner = ast.unparse(node.value)
            raise self.error(node, f"{owner!r} has no attribute {node.attr!r}") from None
        if policy is not None and id(base) in policy.namespaces:
            self._check(node, policy.check_attribute_value(result, node.attr))
        return result

    # -- containers --------------------------------------------------------------------------
    def eval_Tuple(self, node: ast.Tuple):
        return tuple(self._elements(node.elts))

    def eval_List(self, node: ast.List):
        return list(self._elements(node.elts))

    def _elements(self, elts) -> list:
        out = []
        for elt in elts:
            if type(elt) is ast.Starred:
                out.extend(self.eval(elt.value))
            else:
                out.append(self.eval(elt))
        return out

    def eval_Dict(self, node: ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(self.eval(v))
            else:
                out[self.eval(k)] = self.eval(v)
        return out

    def eval_Slice(self, node: ast.Slice):
        return slice(*(None if part is None else self.eval(part) for part in (node.lower, node.upper, node.step)))

    def eval_JoinedStr(self, node: ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                parts.append(format(self.eval(value.value), self.eval(value.format_spec) if value.format_spec else ""))
            else:
                parts.append(self.eval(value))
        return "".join(parts)

    def eval_FormattedValue(self, node):
        return str(self.eval(node.value))

    # -- operators ---------------------------------------------------------------------------
    def eval_BinOp(self, node: ast.BinOp):
        lhs, rhs = as_index(self.eval(node.left)), as_index(self.eval(node.right))
        op = _BINARY.get(type(node.op))
        if op is None:
            raise self.error(node, f"unsupported operator {type(node.op).__name__}")
        if self.policy is not None:
            self._check(node, check_arithmetic(type(node.op).__name__, lhs, rhs))
        return self._apply(node, op, lhs, rhs)

    def eval_UnaryOp(self, node: ast.UnaryOp):
        value = as_index(self.eval(node.operand))
        if isinstance(node.op, ast.Not):
            return E.logical_not(value) if _is_ir(value) else not value
        if isinstance(node.op, ast.USub):
            return self._apply(node, operator.neg, value)
        if isinstance(node.op, ast.UAdd):
            return value
        return self._apply(node, operator.invert, value)

    def eval_BoolOp(self, node: ast.BoolOp):
        values = [as_index(self.eval(v)) for v in node.values]
        is_and = isinstance(node.op, ast.And)
        if not any(_is_ir(v) for v in values):
            result = values[0]
            for v in values[1:]:
                result = (result and v) if is_and else (result or v)
            return result
        result = values[0]
        for v in values[1:]:
            result = E.logical_and(result, v) if is_and else E.logical_or(result, v)
        return result

    def eval_Compare(self, node: ast.Compare):
        result = None
        left = as_index(self.eval(node.left))
        for op_node, right_node in zip(node.ops, node.comparators):
            right = as_index(self.eval(right_node))
            ir_node = _IR_COMPARE.get(type(op_node))
            if ir_node is not None and (_is_ir(left) or _is_ir(right)):
                value = self._apply(node, E._compare, ir_node, left, right)
            else:
                value = as_index(self._apply(node, _COMPARE[type(op_node)], left, right))
            if result is None:
                result = value
            elif _is_ir(result) or _is_ir(value):
                result = E.logical_and(result, value)
            else:
                result = result and value
            left = right
        return result

    def eval_IfExp(self, node: ast.IfExp):
        cond = as_index(self.eval(node.test))
        if _is_ir(cond) and not isinstance(cond, E.IntImm):
            return E.Select(cond, self.eval(node.body), self.eval(node.orelse))
        return self.eval(node.body) if cond else self.eval(node.orelse)

    def _apply(self, node, op, *args):
        if any(_is_ir(a) for a in args):
            for a in args:
                if not (_is_ir(a) or isinstance(a, (int, float)) or a is E._compare or isinstance(a, type)):
                    raise self.error(node, f"cannot evaluate {ast.unparse(node)!r}: an operand is a {type(a).__name__}, "
                                           "not an expression or a number")
        try:
            return op(*args)
        except Exception as err:  # an operator on bad operands: report where
            raise self.error(node, f"cannot evaluate {ast.unparse(node)!r}: {err}") from None

    # -- subscripts and calls ----------------------------------------------------------------
    def eval_Subscript(self, node: ast.Subscript):
        base = self.eval(node.value)
        if self.policy is not None:
            self._check(node.value, self.policy.check_subscript(base))
        region_context, self.region_context = self.region_context, False  # indices are values: A[idx[vi]]
        try:
            index = self.eval(node.slice)
        finally:
            self.region_context = region_context
        if isinstance(base, Buffer):
            indices = index if isinstance(index, tuple) else (index,)
            if len(indices) != len(base.shape) and not (len(indices) == 1 and len(base.shape) == 0):
                raise self.error(node, f"buffer {base.name!r} has {len(base.shape)} dimensions but is indexed "
                                       f"with {len(indices)}")
            try:
                return subscript_buffer(base, indices, self.region_context)
            except (ValueError, TypeError) as err:
                raise self.error(node, str(err)) from None
        return self._apply(node, operator.getitem, base, index)

    def eval_Call(self, node: ast.Call):
        func = self.eval(node.func)
        if self.policy is not None:
            self._check(node.func, self.policy.check_call(func))
        special = self.parser.call_special(func, node)
        if special is not _MISSING:
            return special
        saved = self.region_context
        # buffer arguments of these calls are regions (slices are ranges, not vector lanes)
        self.region_context = func is T.reads or func is T.writes or func is T.match_buffer
        try:
            args = self._elements(node.args)
            kwargs = {}
            for kw in node.keywords:
                if kw.arg is None:
                    kwargs.update(self.eval(kw.value))
                else:
                    kwargs[kw.arg] = self.eval(kw.value)
        finally:
            self.region_context = saved
        try:
            if "dtype" in kwargs and _dtype_first(func):  # T.call_extern("f", x, dtype="int32")
                kwargs = dict(kwargs)
                args = [kwargs.pop("dtype"), *args]
            elif "dtype" in kwargs and not _takes_dtype(func):
                return _with_dtype(func(*args, **{k: v for k, v in kwargs.items() if k != "dtype"}), kwargs["dtype"])
            return func(*args, **kwargs)
        except Exception as err:  # a T.xxx builder rejected its arguments: report at the call
            name = ast.unparse(node.func)
            raise self.error(node, f"{name}(...) failed: {err}") from None

    def eval_Lambda(self, node: ast.Lambda):
        """A lambda of plain positional parameters (as in ``T.comm_reducer(lambda x, y: x + y, ...)``):
        a Python function that evaluates the body with the parameters bound to its arguments."""
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
            raise self.error(node, "a TVMScript lambda takes plain positional parameters, e.g. lambda x, y: x + y")
        names = [a.arg for a in args.args]
        parser = self.parser

        def call(*values):
            if len(values) != len(names):
                raise TVMTypeError(f"the lambda takes {len(names)} arguments ({', '.join(names)}), got {len(values)}")
            parser.push_scope()
            try:
                for name, value in zip(names, values):
                    parser.bind(name, value)
                return self.eval(node.body)
            finally:
                parser.pop_scope()

        call.param_names = tuple(names)
        call.tvmscript_lambda = True  # its body is evaluated by this evaluator, under the same rules
        return call


builtin_lookup = builtins.__dict__
MISSING = _MISSING


@functools.lru_cache(maxsize=1024)
def _takes_dtype(func) -> bool:
    """Whether a T.xxx builder has a ``dtype`` parameter (TVM's builtins all accept ``dtype=``)."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == "dtype" or p.kind is p.VAR_KEYWORD for p in params)


@functools.lru_cache(maxsize=1024)
def _dtype_first(func) -> bool:
    """Whether a T.xxx builder takes ``dtype`` as its first parameter (``call_extern(dtype, name, *args)``)."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return False
    return bool(params) and params[0].name == "dtype" and any(p.kind is p.VAR_POSITIONAL for p in params)


def _with_dtype(value, dtype):
    """``value`` (built without its ``dtype=``) converted to ``dtype`` when the builder inferred another."""
    from ...ir.expr import Cast, PrimExpr

    dtype = str(dtype)
    if isinstance(value, PrimExpr) and value.dtype != dtype and "handle" not in (value.dtype, dtype):
        return Cast(dtype, value)
    return value
