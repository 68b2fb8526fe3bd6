"""Compound statements of TVMScript: ``for``, ``while``, ``if``, ``assert``, ``return`` and ``with``
(blocks, ``T.init()``, let/attr/allocate/decl_buffer scopes).

A mixin of ``core.Parser``.
"""
from __future__ import annotations

import ast

from ...ir import dtype as dt
from ...arith.block_access import infer_block_access
from ...ir.expr import IntImm, IterVar, PointerType, PrimExpr, Range, Var, convert, make_const
from ...arith.linear import simplify_linear
from ...ir.stmt import (
    Allocate, AssertStmt, AttrStmt, Block, BlockRealize, DeclBuffer, Evaluate, For, ForKind, IfThenElse, LetStmt,
    Stmt, While,
)
from .. import tir as T
from . import specs
from .evaluator import as_index
from .frames import BlockFrame, Consumed as _Consumed


class CompoundStatements:
    """The statements with bodies."""

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
        """``with T.block(name):``: a Block with its iterators, regions, init and body, under a BlockRealize.

        Parameters
        ----------
        node : ast.With
            The ``with`` statement.
        spec : BlockSpec
            The ``T.block`` record.

        Returns
        -------
        Stmt
            The BlockRealize (or the Block, for ``no_realize``).
        """
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
