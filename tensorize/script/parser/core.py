"""Statements of TVMScript: Python AST -> TensorIR statements, blocks and functions.

A ``Parser`` parses one function. Statements that scope over the rest of their body (``x = expr``
as a LetStmt, ``T.allocate``, ``T.decl_buffer``, ``T.attr``, ``T.launch_thread``, ``assert``)
consume the statements that follow them; declarations (``T.func_attr``, ``T.reads``, block axes,
``T.alloc_buffer``, ``T.match_buffer``) go to the enclosing function or block frame.
"""
from __future__ import annotations

import ast
import builtins
from typing import Any

from ...errors import DiagnosticError
from ...ir.buffer import Buffer
from ...ir.expr import IntImm, PrimExpr, Range, Var, convert
from ...ir.function import PrimFunc
from ...ir.stmt import Block, BlockRealize, Evaluate, ForKind, SeqStmt, Stmt
from .. import tir as T
from . import specs
from .evaluator import MISSING, ExprEvaluator, as_index
from .assign import AssignStatements, _typed_var
from .compound import CompoundStatements
from .frames import BlockFrame, Consumed as _Consumed, FunctionFrame
from .safety import SAFE_BUILTINS
from .source import Source
from .spec_statements import SpecStatements


_STMT_METHODS: dict[type, Any] = {}  # AST class -> Parser.stmt_<Class>


def normalize_func_attrs(attrs: dict) -> dict:
    """TVM 0.27's ``"tirx.noalias"`` is ``"tir.noalias"``; boolean constants are Python bools.

    Parameters
    ----------
    attrs : dict
        The parsed function attributes.

    Returns
    -------
    dict
        The normalised attributes.
    """
    out = {}
    for key, value in attrs.items():
        key = "tir.noalias" if key == "tirx.noalias" else key
        if isinstance(value, IntImm) and value.dtype == "bool":
            value = bool(value.value)
        out[key] = value
    return out


class Parser(AssignStatements, CompoundStatements, SpecStatements):
    """Parses one ``def`` into a PrimFunc. ``env`` is the enclosing Python scope (a name -> value
    mapping searched after the function's own names)."""

    def __init__(self, source: Source, env: dict, policy=None):
        self.source = source
        self.env = env
        self.scopes: list[dict[str, Any]] = [{}]
        self.frames: list[Any] = []
        self.loop_ranges: dict[int, Range] = {}
        self.builtins = builtins.__dict__ if policy is None else SAFE_BUILTINS
        self.evaluator = ExprEvaluator(self, policy)
        self.size_vars: dict[str, Var] = {}

    # -- names -------------------------------------------------------------------------------
    def lookup(self, name: str, default=MISSING):
        """The value of ``name``: innermost scope first, then the builtins (``default`` when unbound).

        Parameters
        ----------
        name : str
            The name.
        default : any
            Returned when unbound (default: an error).

        Returns
        -------
        any
            The value.
        """
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.env:
            return self.env[name]
        return self.builtins.get(name, default)

    def bind(self, name: str, value) -> None:
        """Bind ``name`` to ``value`` in the innermost scope.

        Parameters
        ----------
        name : str
            The name.
        value : any
            The value.
        """
        self.scopes[-1][name] = value

    def push_scope(self) -> None:
        """Open a name scope."""
        self.scopes.append({})

    def pop_scope(self) -> None:
        """Close the innermost name scope."""
        self.scopes.pop()

    def eval(self, node: ast.expr):
        """Evaluate a Python expression node of the prim_func (see ``ExprEvaluator``).

        Parameters
        ----------
        node : ast.expr
            The expression.

        Returns
        -------
        any
            Its value.
        """
        return self.evaluator.eval(node)

    def call_special(self, func, node: ast.Call):
        """Calls the parser gives a meaning of its own; ``MISSING`` for ordinary calls.

        Parameters
        ----------
        func : any
            The evaluated callee.
        node : ast.Call
            The call.

        Returns
        -------
        any
            The value, or ``MISSING``.
        """
        if func is T.Let:
            return self.let_expr(node)
        if func is builtins.range:
            args = [as_index(self.eval(a)) for a in node.args]
            if not 1 <= len(args) <= 2 or node.keywords:
                raise self.source.error(node, "range(...) in TVMScript takes one or two arguments: range(n) or range(a, b)")
            start, stop = (0, args[0]) if len(args) == 1 else args
            return specs.ForSpec(ForKind.SERIAL, start, stop)
        return MISSING

    def error(self, node, message: str):
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
        return self.source.error(node, message)

    def let_expr(self, node: ast.Call):
        """``T.Let(body, where={x: value, ...})``: the keys are new variables, visible in ``body``.

        Parameters
        ----------
        node : ast.Call
            The ``T.Let`` call.

        Returns
        -------
        PrimExpr
            The nested Let expression.
        """
        where = [kw.value for kw in node.keywords if kw.arg == "where"] or node.args[1:2]
        if len(node.args) < 1 or len(where) != 1 or not isinstance(where[0], ast.Dict) \
                or not all(isinstance(k, ast.Name) for k in where[0].keys):
            raise self.error(node, "T.Let takes a body and the bindings as a dict of new names: "
                                   "T.Let(x + 1, where={x: i * 2})")
        bindings = []
        for key, value_node in zip(where[0].keys, where[0].values):
            value = convert(as_index(self.eval(value_node)))
            bindings.append((Var(key.id, value.dtype), value))
        self.push_scope()
        try:
            for var, _value in bindings:
                self.bind(var.name, var)
            body = convert(as_index(self.eval(node.args[0])))
        finally:
            self.pop_scope()
        return T.Let(body, where=dict(bindings))

    # -- frames ------------------------------------------------------------------------------
    @property
    def function(self) -> FunctionFrame:
        """The frame of the function being parsed."""
        return self.frames[0]

    def current_block(self) -> BlockFrame | None:
        """The frame of the innermost block being parsed, or None outside blocks.

        Returns
        -------
        BlockFrame or None
            The frame.
        """
        for frame in reversed(self.frames):
            if isinstance(frame, BlockFrame):
                return frame
        return None

    def require_block(self, node, what: str) -> BlockFrame:
        """The innermost block frame; an error naming ``what`` when outside any block.

        Parameters
        ----------
        node : ast.AST
            The statement or expression (for error locations).
        what : str
            The construct that needs a block (for the message).

        Returns
        -------
        BlockFrame
            The frame.
        """
        frame = self.frames[-1] if self.frames else None
        if not isinstance(frame, BlockFrame):
            raise self.error(node, f"{what} must be written directly inside a `with T.block(...)` body")
        return frame

    # -- functions ---------------------------------------------------------------------------
    def parse_function(self, fdef: ast.FunctionDef) -> PrimFunc:
        """Parse a ``def`` into a PrimFunc: parameters, attributes, body and the root block.

        Parameters
        ----------
        fdef : ast.FunctionDef
            The function.

        Returns
        -------
        PrimFunc
            The function.
        """
        frame = FunctionFrame(fdef.name)
        self.frames.append(frame)
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs:
            raise self.error(fdef, "prim_func parameters must be plain positional parameters with annotations")
        for arg in args.posonlyargs + args.args:
            self.parse_param(frame, arg)
        body = self.parse_body(fdef.body)
        if frame.root_alloc_buffers or frame.has_blocks:
            if not (isinstance(body, BlockRealize) and body.block.name_hint == "root" and not body.block.iter_vars
                    and not frame.root_alloc_buffers):
                root = Block([], [], [], "root", body, alloc_buffers=frame.root_alloc_buffers)
                body = BlockRealize([], True, root)
        self.frames.pop()
        return PrimFunc(frame.params, body, buffer_map=frame.buffer_map, attrs=normalize_func_attrs(frame.attrs),
                        span=self.source.span(fdef))

    def parse_param(self, frame: FunctionFrame, arg: ast.arg) -> None:
        """Declare one parameter: a buffer (from its ``T.Buffer`` annotation), a handle or a scalar.

        Parameters
        ----------
        frame : FunctionFrame
            The function's frame.
        arg : ast.arg
            The parameter.
        """
        if arg.annotation is None:
            raise self.error(arg, f"parameter {arg.arg!r} needs a type annotation, e.g. {arg.arg}: T.Buffer((128,), "
                                  f'"float32") or {arg.arg}: T.int32 or {arg.arg}: T.handle')
        annotation = self.eval(arg.annotation)
        if isinstance(annotation, Buffer):
            buffer = self.named_buffer(annotation, arg.arg)
            var = Var(arg.arg + "_handle", "handle")
            frame.params.append(var)
            frame.buffer_map[var] = buffer
            self.bind(arg.arg, buffer)
        elif isinstance(annotation, (T.DTypeFactory, Var)):
            var = _typed_var(arg.arg, annotation)
            frame.params.append(var)
            self.bind(arg.arg, var)
        else:
            raise self.error(arg.annotation, f"parameter {arg.arg!r} has annotation {ast.unparse(arg.annotation)!r}; "
                                             "expected T.Buffer(shape, dtype), a dtype such as T.int32, or T.handle")

    @staticmethod
    def named_buffer(buffer: Buffer, name: str) -> Buffer:
        """``buffer`` renamed to ``name`` (its data pointer too, when the declaration created it).

        Parameters
        ----------
        buffer : Buffer
            The buffer.
        name : str
            The name.

        Returns
        -------
        Buffer
            The renamed buffer.
        """
        data = buffer.data
        if data.name == buffer.name:
            data = Var(name, data.type_annotation) if data.type_annotation is not None else Var(name, data.dtype)
        return buffer.replace(name=name, data=data)

    # -- statement lists ---------------------------------------------------------------------
    def parse_body(self, stmts: list[ast.stmt]) -> Stmt:
        """Parse a list of statements into one Stmt (each statement may consume the ones after it).

        Parameters
        ----------
        stmts : list of ast.stmt
            The statements.

        Returns
        -------
        Stmt
            The statement.
        """
        out: list[Stmt] = []
        for index, node in enumerate(stmts):
            result = self.parse_stmt(node, stmts[index + 1:])
            if isinstance(result, _Consumed):
                out.append(result.stmt)
                break
            if result is not None:
                out.append(result)
        if not out:
            return Evaluate(0)
        return out[0] if len(out) == 1 else SeqStmt.flatten(out)

    def parse_rest(self, rest: list[ast.stmt]) -> Stmt:
        """Parse the statements that follow a binding statement, in the binding's scope.

        Parameters
        ----------
        rest : list of ast.stmt
            The statements after this one in the same body.

        Returns
        -------
        Stmt
            The statement.
        """
        self.push_scope()
        try:
            return self.parse_body(rest)
        finally:
            self.pop_scope()

    def parse_stmt(self, node: ast.stmt, rest: list[ast.stmt]):
        """Parse one statement through its ``stmt_<Type>`` method; unexpected errors become diagnostics.

        Parameters
        ----------
        node : ast.stmt
            The statement.
        rest : list of ast.stmt
            The statements after this one in the same body.

        Returns
        -------
        Stmt or None
            The statement (wrapped when it consumed ``rest``).
        """
        method = _STMT_METHODS.get(type(node))
        if method is None:
            method = getattr(Parser, "stmt_" + type(node).__name__, None)
            if method is None:
                raise self.error(node, f"unsupported Python statement in TVMScript: {type(node).__name__}")
            _STMT_METHODS[type(node)] = method
        try:
            return method(self, node, rest)
        except DiagnosticError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, ArithmeticError) as err:
            # a builder or IR constructor refused a value (IntImm out of range, ...): report it here
            raise self.error(node, f"{type(err).__name__}: {err}") from None

    # -- simple statements -------------------------------------------------------------------
    def stmt_Pass(self, node, rest):
        return None

    def stmt_Expr(self, node: ast.Expr, rest):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # a docstring
        if isinstance(node.value, ast.Lambda):
            raise self.error(node, "a lambda on its own is not a statement; lambdas are arguments, as in "
                                   "T.comm_reducer(lambda x, y: x + y, [T.float32(0)])")
        value = self.eval(node.value)
        if isinstance(value, specs.Spec):
            return self.apply_spec(node, value, rest)
        if isinstance(value, Stmt):
            return value if value.span is not None else value.with_span(self.source.span(node))
        if isinstance(value, (PrimExpr, int, float)) and not isinstance(value, bool):
            return Evaluate(value, span=self.source.span(node))
        if value is None:
            return None
        raise self.error(node, f"a statement evaluated to {type(value).__name__}, which is not TensorIR")
