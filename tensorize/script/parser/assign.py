"""Assignments in TVMScript: buffer stores, ``x = value`` (let bindings, buffer and axis declarations)
and the block declarations they make (``T.axis.*``, ``T.axis.remap``, ``T.match_buffer``).

A mixin of ``core.Parser``.
"""
from __future__ import annotations

import ast

from ...ir import dtype as dt
from ...ir.buffer import Buffer
from ...ir.expr import Cast, IterVar, PointerType, PrimExpr, Range, Var, convert, make_const
from ...arith.linear import simplify_linear
from ...ir.stmt import Allocate, AttrStmt, BufferStore, DeclBuffer, LetStmt, MatchBufferRegion
from .. import tir as T
from . import specs
from .evaluator import as_index, subscript_buffer
from .frames import BlockFrame, Consumed as _Consumed


class AssignStatements:
    """``stmt_Assign``/``AnnAssign``/``AugAssign`` and the declarations an assignment makes."""

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
        """``A[i] = value``: a BufferStore (a vector store when an index is a slice).

        Parameters
        ----------
        node : ast.AST
            The statement or expression (for error locations).
        target : ast.Subscript
            The ``A[...]`` target.
        value : PrimExpr
            The stored value.

        Returns
        -------
        BufferStore
            The store.
        """
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
        if value.dtype != store_dtype and dt.lanes_of(value.dtype) == dt.lanes_of(store_dtype):
            value = Cast(store_dtype, value)  # as TVM: a store casts its value to the buffer's dtype
        return BufferStore(buffer, value, indices, span=self.source.span(node))

    def assign(self, node, target, value, rest):
        """``target = value`` in a prim_func: a buffer declaration, an axis, a let binding or a plain Python name.

        Parameters
        ----------
        node : ast.AST
            The statement or expression (for error locations).
        target : ast.expr
            The target.
        value : any
            The evaluated right-hand side.
        rest : list of ast.stmt
            The statements after this one in the same body.

        Returns
        -------
        Stmt or None
            The statement (None when nothing is emitted).
        """
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
                if isinstance(v, Var) and v.name == "":  # ``m, n = T.int32(), T.int32()``: the vars take the names
                    v = Var(name, v.dtype, v.type_annotation)
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
        """``name = value`` for a new scalar: a LetStmt over the statements that follow.

        Parameters
        ----------
        node : ast.AST
            The statement or expression (for error locations).
        name : str
            The name.
        var : Var
            The new variable.
        value : PrimExpr
            Its value.
        rest : list of ast.stmt
            The statements after this one in the same body.

        Returns
        -------
        LetStmt
            The let over the rest.
        """
        self.push_scope()
        self.bind(name, var)
        try:
            body = self.parse_body(rest)
        finally:
            self.pop_scope()
        return _Consumed(LetStmt(var, value, body, span=self.source.span(node)))

    def target_name(self, target) -> str:
        """The name an assignment target binds (an error for anything but a plain name).

        Parameters
        ----------
        target : ast.expr
            The target.

        Returns
        -------
        str
            The name.
        """
        if not isinstance(target, ast.Name):
            raise self.error(target, f"cannot assign to {ast.unparse(target)!r}; assign to a plain name")
        return target.id

    # -- block declarations ------------------------------------------------------------------
    def declare_axis(self, node, name: str, spec: specs.AxisSpec):
        """``vi = T.axis.spatial(...)``: a block iterator with its binding.

        Parameters
        ----------
        node : ast.AST
            The statement or expression (for error locations).
        name : str
            The iterator's name.
        spec : AxisSpec
            The ``T.axis`` record.
        """
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
        """The Range of an axis domain given as an extent, a tuple or a Range.

        Parameters
        ----------
        node : ast.AST
            The statement or expression (for error locations).
        dom : int, tuple or Range
            The domain as written.
        dtype : str
            The iterator's dtype.

        Returns
        -------
        Range
            The domain.
        """
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
        """``vi, vj = T.axis.remap("SS", [i, j])``: several block iterators at once.

        Parameters
        ----------
        node : ast.AST
            The statement or expression (for error locations).
        target : ast.expr
            The tuple of names.
        spec : RemapSpec
            The ``T.axis.remap`` record.
        """
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
        """``A = T.match_buffer(...)`` inside a block: a MatchBufferRegion.

        Parameters
        ----------
        node : ast.AST
            The statement or expression (for error locations).
        name : str
            The buffer's name.
        spec : MatchBufferSpec
            The ``T.match_buffer`` record.
        """
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
