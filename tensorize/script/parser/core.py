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
from ...ir import dtype as dt
from ...arith.block_access import infer_block_access
from ...ir.buffer import Buffer
from ...ir.expr import IntImm, IterVar, PointerType, PrimExpr, Range, Var, convert, make_const
from ...ir.function import PrimFunc
from ...arith.linear import simplify_linear
from ...ir.stmt import (
    Allocate, AssertStmt, AttrStmt, Block, BlockRealize, BufferRegion, BufferStore, DeclBuffer, Evaluate, For,
    ForKind, IfThenElse, LetStmt, MatchBufferRegion, SeqStmt, Stmt, While,
)
from .. import tir as T
from . import specs
from .evaluator import MISSING, ExprEvaluator, as_index, subscript_buffer
from .frames import BlockFrame, FunctionFrame
from .safety import SAFE_BUILTINS
from .source import Source


_STMT_METHODS: dict[type, Any] = {}  # AST class -> Parser.stmt_<Class>


class _Consumed:
    """A statement that took the rest of its body as its own body."""

    __slots__ = ("stmt",)

    def __init__(self, stmt: Stmt):
        self.stmt = stmt


def normalize_func_attrs(attrs: dict) -> dict:
    """TVM 0.27's ``"tirx.noalias"`` is ``"tir.noalias"``; boolean constants are Python bools."""
    out = {}
    for key, value in attrs.items():
        key = "tir.noalias" if key == "tirx.noalias" else key
        if isinstance(value, IntImm) and value.dtype == "bool":
            value = bool(value.value)
        out[key] = value
    return out


class Parser:
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
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.env:
            return self.env[name]
        return self.builtins.get(name, default)

    def bind(self, name: str, value) -> None:
        self.scopes[-1][name] = value

    def push_scope(self) -> None:
        self.scopes.append({})

    def pop_scope(self) -> None:
        self.scopes.pop()

    def eval(self, node: ast.expr):
        return self.evaluator.eval(node)

    def call_special(self, func, node: ast.Call):
        """Calls the parser gives a meaning of its own; ``MISSING`` for ordinary calls."""
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
        return self.source.error(node, message)

    def let_expr(self, node: ast.Call):
        """``T.Let(body, where={x: value, ...})``: the keys are new variables, visible in ``body``."""
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
        return self.frames[0]

    def current_block(self) -> BlockFrame | None:
        for frame in reversed(self.frames):
            if isinstance(frame, BlockFrame):
                return frame
        return None

    def require_block(self, node, what: str) -> BlockFrame:
        frame = self.frames[-1] if self.frames else None
        if not isinstance(frame, BlockFrame):
            raise self.error(node, f"{what} must be written directly inside a `with T.block(...)` body")
        return frame

    # -- functions ---------------------------------------------------------------------------
    def parse_function(self, fdef: ast.FunctionDef) -> PrimFunc:
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
        """``buffer`` renamed to ``name`` (its data pointer too, when the declaration created it)."""
        data = buffer.data
        if data.name == buffer.name:
            data = Var(name, data.type_annotation) if data.type_annotation is not None else Var(name, data.dtype)
        return buffer.replace(name=name, data=data)

    # -- statement lists ---------------------------------------------------------------------
    def parse_body(self, stmts: list[ast.stmt]) -> Stmt:
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
        self.push_scope()
        try:
            return self.parse_body(rest)
        finally:
            self.pop_scope()

    def parse_stmt(self, node: ast.stmt, rest: list[ast.stmt]):
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

    def apply_spec(self, node, spec: specs.Spec, rest):
        """A ``T.xxx(...)`` record used as a statement."""
        if isinstance(spec, specs.AttrsSpec):
            if spec.target == "func":
                self.function.attrs.update(spec.attrs)
            else:
                self.require_block(node, "T.block_attr").annotations.update(spec.attrs)
            return None
        if isinstance(spec, specs.RegionsSpec):
            frame = self.require_block(node, "T.writes" if spec.is_write else "T.reads")
            regions = [self.as_region(node, r) for r in spec.regions]
            if spec.is_write:
                frame.writes = regions
            else:
                frame.reads = regions
            return None
        if isinstance(spec, specs.WhereSpec):
            self.require_block(node, "T.where").predicate = convert(spec.predicate)
            return None
        span = self.source.span(node)
        if isinstance(spec, specs.AttrStmtSpec):
            return _Consumed(AttrStmt(spec.node, spec.key, spec.value, self.parse_rest(rest), span=span))
        if isinstance(spec, specs.AssertSpec):
            return _Consumed(AssertStmt(spec.condition, spec.message, self.parse_rest(rest), span=span))
        if isinstance(spec, specs.LaunchThreadSpec):
            iter_var = self.thread_iter_var(node, spec.thread, "", spec.extent)
            return _Consumed(AttrStmt(iter_var, "thread_extent", spec.extent, self.parse_rest(rest), span=span))
        if isinstance(spec, specs.AllocBufferSpec):
            self.add_alloc_buffer(spec.buffer)
            return None
        raise self.error(node, f"{spec.construct}(...) cannot be used as a statement here")

    def as_region(self, node, value) -> BufferRegion:
        if isinstance(value, BufferRegion):
            return value
        if isinstance(value, Buffer):
            return BufferRegion.full_region(value)
        from ...ir.expr import BufferLoad

        if isinstance(value, BufferLoad):
            return BufferRegion.from_point(value.buffer, value.indices)
        raise self.error(node, f"expected a buffer region such as A[vi, 0:4], got {type(value).__name__}")

    def add_alloc_buffer(self, buffer: Buffer) -> None:
        frame = self.current_block()
        if frame is None:
            self.function.root_alloc_buffers.append(buffer)
        else:
            frame.alloc_buffers.append(buffer)

    def thread_iter_var(self, node, thread, name: str, extent) -> IterVar:
        """The thread axis of ``T.launch_thread``; as in TVM its domain is ``[0, extent)``."""
        extent = convert(as_index(extent))
        if isinstance(thread, IterVar):
            return thread.replace(dom=Range.from_min_extent(make_const(extent.dtype, 0), extent))
        if isinstance(thread, str):
            return IterVar(Range.from_min_extent(make_const(extent.dtype, 0), extent), Var(name or thread, extent.dtype),
                           IterVar.ThreadIndex, thread)
        raise self.error(node, "T.launch_thread takes a thread tag such as \"threadIdx.x\" or a T.env_thread(...) axis")

    # -- assignments -------------------------------------------------------------------------
    def stmt_Assign(self, node: ast.Assign, rest):
        if len(node.targets) != 1:
            raise self.error(node, "chained assignment (a = b = ...) is not supported in TVMScript")
        target = node.targets[0]
        if isinstance(target, ast.Subscript):
            return self.buffer_store(node, target, self.eval(node.value))
        value = self.eval(node.value)
        return self.assign(node, target, value, rest)

    def stmt_AnnAssign(self, node: ast.AnnAssign, rest):
        if not isinstance(node.target, ast.Name):
            if isinstance(node.target, ast.Subscript) and node.value is not None:
                return self.buffer_store(node, node.target, self.eval(node.value))
            raise self.error(node, "only `name: type = value` annotated assignments are supported")
        annotation = self.eval(node.annotation)
        name = node.target.id
        if node.value is None:
            if isinstance(annotation, (T.DTypeFactory, Var)):
                self.bind(name, _typed_var(name, annotation))
                return None
            raise self.error(node, f"{name!r} is annotated but never assigned")
        value = self.eval(node.value)
        if isinstance(annotation, (T.DTypeFactory, Var)) and isinstance(value, (PrimExpr, int, float)):
            value = convert(value)
            var = _typed_var(name, annotation)
            if var.dtype != value.dtype and var.dtype != "handle":
                value = T.cast(value, var.dtype) if not isinstance(value, PrimExpr) else value
            return self.let(node, name, var, value, rest)
        return self.assign(node, node.target, value, rest)

    def stmt_AugAssign(self, node: ast.AugAssign, rest):
        op = ast.BinOp(left=_as_load(node.target), op=node.op, right=node.value)
        ast.copy_location(op, node)
        ast.fix_missing_locations(op)
        if isinstance(node.target, ast.Subscript):
            return self.buffer_store(node, node.target, self.eval(op))
        if isinstance(node.target, ast.Name):
            current = self.lookup(node.target.id)
            if isinstance(current, (PrimExpr, Buffer)):
                raise self.error(node, f"cannot update {node.target.id!r} in place: TensorIR variables are immutable; "
                                       "store into a buffer element instead")
            self.bind(node.target.id, self.eval(op))
            return None
        raise self.error(node, "unsupported augmented assignment target")

    def buffer_store(self, node, target: ast.Subscript, value):
        buffer = self.eval(target.value)
        if not isinstance(buffer, Buffer):
            raise self.error(target, f"only buffer elements can be assigned with [...], not {type(buffer).__name__}")
        index = self.eval(target.slice)
        indices = index if isinstance(index, tuple) else (index,)
        if len(indices) != len(buffer.shape):
            raise self.error(target, f"buffer {buffer.name!r} has {len(buffer.shape)} dimensions but the store uses "
                                     f"{len(indices)} indices")
        try:
            indices = subscript_buffer(buffer, indices, region=False).indices
        except (ValueError, TypeError) as err:
            raise self.error(target, str(err)) from None
        lanes = 1
        for i in indices:
            lanes *= dt.lanes_of(i.dtype)
        store_dtype = dt.with_lanes(buffer.dtype, dt.lanes_of(buffer.dtype) * lanes)
        value = as_index(value)
        if isinstance(value, (bool, int, float)):
            value = make_const(store_dtype, value)
        elif isinstance(value, PrimExpr) and value.dtype != store_dtype and type(value).__name__ in ("IntImm", "FloatImm"):
            value = make_const(store_dtype, value.value)
        if not isinstance(value, PrimExpr):
            raise self.error(node, f"cannot store a {type(value).__name__} into buffer {buffer.name!r}")
        return BufferStore(buffer, value, indices, span=self.source.span(node))

    def assign(self, node, target, value, rest):
        span = self.source.span(node)
        if isinstance(value, specs.RemapSpec):
            return self.declare_remap(node, target, value)
        if isinstance(target, ast.Tuple):
            names = [self.target_name(t) for t in target.elts]
            try:
                values = list(value)
            except TypeError:
                raise self.error(node, f"cannot unpack a {type(value).__name__} into {len(names)} names") from None
            if len(values) != len(names):
                raise self.error(node, f"cannot unpack {len(values)} values into {len(names)} names")
            for name, v in zip(names, values):
                if isinstance(v, PrimExpr) and not isinstance(v, Var):
                    raise self.error(node, "tuple assignment of expressions is not supported; assign them one by one")
                self.bind(name, v)
            return None
        name = self.target_name(target)
        if isinstance(value, specs.AxisSpec):
            return self.declare_axis(node, name, value)
        if isinstance(value, specs.MatchBufferSpec):
            return self.declare_match_buffer(node, name, value)
        if isinstance(value, specs.AllocBufferSpec):
            buffer = self.named_buffer(value.buffer, name)
            self.add_alloc_buffer(buffer)
            self.bind(name, buffer)
            return None
        if isinstance(value, specs.DeclBufferSpec):
            buffer = self.named_buffer(value.buffer, name)
            self.bind(name, buffer)
            body = DeclBuffer(buffer, self.parse_rest(rest), span=span)
            if value.allocate:
                body = Allocate(buffer.data, buffer.dtype, buffer.shape, True, body, span=span)
            return _Consumed(body)
        if isinstance(value, specs.AllocateSpec):
            var = Var(name, PointerType(value.dtype, value.scope))
            self.bind(name, var)
            return _Consumed(Allocate(var, value.dtype, value.extents, value.condition, self.parse_rest(rest),
                                      value.annotations, span=span))
        if isinstance(value, specs.LaunchThreadSpec):
            iter_var = self.thread_iter_var(node, value.thread, name, value.extent)
            self.bind(name, iter_var.var)
            return _Consumed(AttrStmt(iter_var, "thread_extent", value.extent, self.parse_rest(rest), span=span))
        if isinstance(value, specs.Spec):
            raise self.error(node, f"{value.construct}(...) cannot be assigned to a name")
        if isinstance(value, Buffer):
            if value.name == "buffer":
                value = self.named_buffer(value, name)
            self.bind(name, value)
            return None
        if isinstance(value, IterVar) and value.iter_type == IterVar.ThreadIndex and value.var.name == value.thread_tag:
            value = value.replace(var=Var(name, value.var.dtype))
            self.bind(name, value)
            return None
        if isinstance(value, Var) and value.name == "":
            var = Var(name, value.dtype, value.type_annotation)
            self.bind(name, var)
            return None
        if isinstance(value, PrimExpr):
            return self.let(node, name, Var(name, value.dtype), value, rest)
        self.bind(name, value)
        return None

    def let(self, node, name: str, var: Var, value, rest):
        self.push_scope()
        self.bind(name, var)
        try:
            body = self.parse_body(rest)
        finally:
            self.pop_scope()
        return _Consumed(LetStmt(var, value, body, span=self.source.span(node)))

    def target_name(self, target) -> str:
        if not isinstance(target, ast.Name):
            raise self.error(target, f"cannot assign to {ast.unparse(target)!r}; assign to a plain name")
        return target.id

    # -- block declarations ------------------------------------------------------------------
    def declare_axis(self, node, name: str, spec: specs.AxisSpec):
        frame = self.require_block(node, "T.axis.*")
        value = convert(as_index(spec.value))
        dtype = spec.dtype or (value.dtype if isinstance(value, PrimExpr) else "int32")
        dom = self.axis_domain(node, spec.dom, dtype)
        var = Var(name, dtype)
        frame.iter_vars.append(IterVar(dom, var, spec.kind, span=self.source.span(node.value)))
        frame.iter_values.append(value)
        self.bind(name, var)
        return None

    def axis_domain(self, node, dom, dtype: str) -> Range:
        dom = as_index(dom)
        if isinstance(dom, Range):
            return dom
        if isinstance(dom, (tuple, list)) and len(dom) == 2:
            lo, hi = (make_const(dtype, d) if isinstance(d, int) else d for d in dom)
            return Range.from_min_extent(lo, simplify_linear(convert(hi) - lo))
        if isinstance(dom, int):
            return Range.from_min_extent(make_const(dtype, 0), make_const(dtype, dom))
        if isinstance(dom, PrimExpr):
            return Range.from_min_extent(make_const(dom.dtype, 0), dom)
        raise self.error(node, f"a block axis domain must be an extent or a (begin, end) pair, got {dom!r}")

    def declare_remap(self, node, target, spec: specs.RemapSpec):
        frame = self.require_block(node, "T.axis.remap")
        names = [self.target_name(t) for t in target.elts] if isinstance(target, ast.Tuple) else [self.target_name(target)]
        if len(names) != len(spec.kinds):
            raise self.error(node, f"T.axis.remap declares {len(spec.kinds)} axes but assigns {len(names)} names")
        kinds = {"S": IterVar.DataPar, "R": IterVar.CommReduce}
        for name, kind, value in zip(names, spec.kinds, spec.values):
            value = as_index(value)
            loop_range = self.loop_ranges.get(id(value)) if isinstance(value, Var) else None
            if loop_range is None:
                raise self.error(node.value, f"T.axis.remap binds {name!r} to {value!r}, which is not a loop variable; "
                                             "use T.axis.spatial(extent, value) for other bindings")
            var = Var(name, value.dtype)
            frame.iter_vars.append(IterVar(loop_range, var, kinds[kind], span=self.source.span(node.value)))
            frame.iter_values.append(value)
            self.bind(name, var)
        return None

    def declare_match_buffer(self, node, name: str, spec: specs.MatchBufferSpec):
        kwargs = dict(spec.kwargs)
        buffer = T.make_buffer(name, spec.shape, spec.dtype, data=kwargs["data"], strides=kwargs["strides"],
                               elem_offset=kwargs["elem_offset"], scope=kwargs["scope"], align=kwargs["align"],
                               offset_factor=kwargs["offset_factor"], axis_separators=kwargs["axis_separators"])
        source = spec.source
        block = self.frames[-1] if isinstance(self.frames[-1], BlockFrame) else None
        if block is not None:
            region = self.as_region(node, source)
            block.match_buffers.append(MatchBufferRegion(buffer, region, span=self.source.span(node)))
        elif isinstance(source, Var) and source.dtype == "handle":
            frame = self.function
            if source not in [p for p in frame.params if p is source]:
                raise self.error(node, f"T.match_buffer's first argument must be a handle parameter of {frame.name!r}")
            frame.buffer_map[source] = buffer
        else:
            raise self.error(node, "T.match_buffer outside a block takes a handle parameter (a: T.handle)")
        self.bind(name, buffer)
        return None

    # -- compound statements -----------------------------------------------------------------
    def stmt_For(self, node: ast.For, rest):
        if node.orelse:
            raise self.error(node, "for ... else is not supported in TVMScript")
        spec = self.eval(node.iter)
        loops = spec if isinstance(spec, list) else [spec]
        if not loops or not all(isinstance(s, specs.ForSpec) for s in loops):
            raise self.error(node.iter, "a TVMScript loop iterates over range(...), T.serial/T.parallel/T.vectorized/"
                                        "T.unroll/T.thread_binding(...) or T.grid(...)")
        targets = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
        if len(targets) != len(loops):
            raise self.error(node.target, f"{len(loops)} loops but {len(targets)} loop variables")
        span = self.source.span(node)
        self.push_scope()
        built = []
        for target, loop in zip(targets, loops):
            name = self.target_name(target)
            start, stop = as_index(loop.start), as_index(loop.stop)
            for bound in (start, stop):
                if isinstance(bound, bool) or not (isinstance(bound, int) or (isinstance(bound, PrimExpr)
                                                                             and dt.is_int(bound.dtype)
                                                                             and dt.lanes_of(bound.dtype) == 1)):
                    raise self.error(node.iter, f"loop bounds are integers or integer expressions, got {bound!r}")
            dtype = next((x.dtype for x in (stop, start) if isinstance(x, PrimExpr)), "int32")
            start = make_const(dtype, start) if isinstance(start, int) else convert(start)
            stop = make_const(dtype, stop) if isinstance(stop, int) else convert(stop)
            extent = stop if isinstance(start, IntImm) and start.value == 0 else simplify_linear(stop - start)
            var = Var(name, dtype)
            self.bind(name, var)
            self.loop_ranges[id(var)] = Range.from_min_extent(start, extent)
            built.append((var, start, extent, loop))
        body = self.parse_body(node.body)
        self.pop_scope()
        for var, start, extent, loop in reversed(built):
            thread = None
            if loop.kind == ForKind.THREAD_BINDING:
                thread = IterVar(Range.from_min_extent(start, extent), Var(loop.thread, var.dtype), IterVar.ThreadIndex,
                                 loop.thread)
            body = For(var, start, extent, loop.kind, body, thread_binding=thread, annotations=loop.annotations, span=span)
        return body

    def stmt_While(self, node: ast.While, rest):
        if node.orelse:
            raise self.error(node, "while ... else is not supported in TVMScript")
        cond = self.eval(node.test)
        return While(cond, self.parse_rest(node.body), span=self.source.span(node))

    def stmt_If(self, node: ast.If, rest):
        cond = as_index(self.eval(node.test))
        if not isinstance(cond, PrimExpr):
            # A Python condition is decided now (meta-programming over shapes and dtypes).
            chosen = node.body if cond else node.orelse
            return self.parse_body(chosen) if chosen else None
        then_case = self.parse_rest(node.body)
        else_case = self.parse_rest(node.orelse) if node.orelse else None
        return IfThenElse(cond, then_case, else_case, span=self.source.span(node))

    def stmt_Assert(self, node: ast.Assert, rest):
        cond = self.eval(node.test)
        message = self.eval(node.msg) if node.msg is not None else "assertion failed"
        return _Consumed(AssertStmt(cond, message, self.parse_rest(rest), span=self.source.span(node)))

    def stmt_Return(self, node: ast.Return, rest):
        if node.value is None:
            return None
        return Evaluate(T.ret(self.eval(node.value)), span=self.source.span(node))

    def stmt_FunctionDef(self, node, rest):
        raise self.error(node, "functions cannot be defined inside a prim_func; define helpers outside it")

    def stmt_With(self, node: ast.With, rest):
        if len(node.items) != 1:
            raise self.error(node, "a TVMScript `with` takes one context, e.g. with T.block(\"C\"):")
        item = node.items[0]
        spec = self.eval(item.context_expr)
        span = self.source.span(node)
        if isinstance(spec, specs.BlockSpec):
            return self.parse_block(node, spec)
        if isinstance(spec, specs.InitSpec):
            frame = self.require_block(node, "with T.init()")
            frame.init = self.parse_rest(node.body)
            return None
        name = self.target_name(item.optional_vars) if item.optional_vars is not None else None
        self.push_scope()
        try:
            if isinstance(spec, specs.LetSpec):
                value = convert(as_index(spec.value))
                var = spec.var if isinstance(spec.var, Var) else Var(name or "v", value.dtype)
                if name:
                    self.bind(name, var)
                return LetStmt(var, value, self.parse_body(node.body), span=span)
            if isinstance(spec, specs.AttrStmtSpec):
                return AttrStmt(spec.node, spec.key, spec.value, self.parse_body(node.body), span=span)
            if isinstance(spec, specs.AssertSpec):
                return AssertStmt(spec.condition, spec.message, self.parse_body(node.body), span=span)
            if isinstance(spec, specs.LaunchThreadSpec):
                iter_var = self.thread_iter_var(node, spec.thread, name or "", spec.extent)
                if name:
                    self.bind(name, iter_var.var)
                return AttrStmt(iter_var, "thread_extent", spec.extent, self.parse_body(node.body), span=span)
            if isinstance(spec, specs.AllocateSpec):
                var = Var(name or "buf", PointerType(spec.dtype, spec.scope))
                if name:
                    self.bind(name, var)
                return Allocate(var, spec.dtype, spec.extents, spec.condition, self.parse_body(node.body),
                                spec.annotations, span=span)
            if isinstance(spec, specs.DeclBufferSpec):
                buffer = self.named_buffer(spec.buffer, name or "buffer")
                if name:
                    self.bind(name, buffer)
                body: Stmt = DeclBuffer(buffer, self.parse_body(node.body), span=span)
                if spec.allocate:
                    body = Allocate(buffer.data, buffer.dtype, buffer.shape, True, body, span=span)
                return body
        finally:
            self.pop_scope()
        raise self.error(item.context_expr, f"{ast.unparse(item.context_expr)!r} cannot be used in a `with` statement")

    def parse_block(self, node: ast.With, spec: specs.BlockSpec) -> Stmt:
        if node.items[0].optional_vars is not None:
            raise self.error(node, "`with T.block(...) as x` is not supported; write `with T.block(...):`")
        frame = BlockFrame(spec.name)
        self.function.has_blocks = True
        self.frames.append(frame)
        self.push_scope()
        try:
            body = self.parse_body(node.body)
        finally:
            self.pop_scope()
            self.frames.pop()
        span = self.source.span(node)
        block = Block(frame.iter_vars, frame.reads or [], frame.writes or [], frame.name, body, frame.init,
                      frame.alloc_buffers, frame.match_buffers, frame.annotations, span=span)
        if frame.reads is None or frame.writes is None:
            is_root = frame.name == "root" and not frame.iter_vars and len(self.frames) == 1
            reads, writes = ([], []) if is_root else infer_block_access(block)
            block = block.replace(reads=frame.reads if frame.reads is not None else reads,
                                  writes=frame.writes if frame.writes is not None else writes)
        if spec.no_realize:
            return block
        return BlockRealize(frame.iter_values, frame.predicate, block, span=span)


def _typed_var(name: str, annotation) -> Var:
    """A new variable of the type an annotation names: ``T.int32`` or ``T.handle("float32", "shared")``."""
    if isinstance(annotation, Var):
        return Var(name, annotation.type_annotation if annotation.type_annotation is not None else annotation.dtype)
    return Var(name, annotation.dtype)


def _as_load(target: ast.expr) -> ast.expr:
    """The load form of an assignment target (for ``A[i] += x``)."""
    clone = ast.parse(ast.unparse(target), mode="eval").body
    ast.copy_location(clone, target)
    for child in ast.walk(clone):
        if hasattr(child, "lineno"):
            ast.copy_location(child, target)
    return clone
