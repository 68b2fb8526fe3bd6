"""TVMScript text of statements: loops (with ``T.grid``), blocks (with ``T.axis.remap``), buffer
definitions, and the scoped statements of lowered code (``LetStmt``, ``Allocate``, ``AttrStmt``...).

Scoped statements print *concisely* (``x: T.int32 = v`` with the body following at the same
indentation) when they are the last statement of their sequence, and as ``with ...:`` blocks
otherwise, as TVM does. ``StmtPrinter`` is the base of the printer in ``printer.py``.
"""
from __future__ import annotations

from ..errors import TVMTypeError, TVMValueError

from typing import Callable

from ..ir import expr as E
from ..ir.buffer import Buffer
from ..ir.expr import PointerType
from ..ir.functor import uses_var
from ..ir.stmt import (
    Allocate, AssertStmt, AttrStmt, Block, BlockRealize, BufferRegion, BufferStore, DeclBuffer, Evaluate, For,
    ForKind, IfThenElse, LetStmt, MatchBufferRegion, SeqStmt, Stmt, While,
)
from ..ir.structural import structural_equal
from .printer_defs import _def_lines, buffer_decl_call
from .printer_expr import ExprPrinter, format_str
from .printer_names import NameTable

_LOOP_KIND = {
    ForKind.PARALLEL: "T.parallel", ForKind.VECTORIZED: "T.vectorized", ForKind.UNROLLED: "T.unroll",
    ForKind.THREAD_BINDING: "T.thread_binding", ForKind.SERIAL: "T.serial",
}
_AXIS_KIND = {E.IterVar.DataPar: ("spatial", "S"), E.IterVar.CommReduce: ("reduce", "R"),
              E.IterVar.Ordered: ("scan", None), E.IterVar.Opaque: ("opaque", None)}


class StmtPrinter:
    """Appends the lines of statements to ``self.lines`` at indentation ``self.depth``."""

    def __init__(self, syntax_sugar: bool = True, indent_spaces: int = 4):
        self.syntax_sugar = syntax_sugar
        self.indent_unit = " " * indent_spaces
        self.names = NameTable()
        self.ex = ExprPrinter(self.names, syntax_sugar, self._free_var, self._free_buffer)
        self.lines: list[str] = []
        self.depth = 0
        self.open_loops: dict[int, For] = {}  # loop_var id -> loop, for the T.axis.remap rule
        self.top_defs: list[tuple[str, str]] = []  # hoisted definitions, see printer._Printer
        self.top_insert_at = 0
        self.top_depth = 0
        self.local_defs: list[tuple[str, str]] | None = None  # while printing a buffer definition
        self._indents: list[str] = [""]
        self._dispatch: dict[type, Callable] = {}

    # -- output ---------------------------------------------------------------------------
    def indent_text(self, depth: int) -> str:
        """The indentation of ``depth`` levels.

        Parameters
        ----------
        depth : int
            The depth.

        Returns
        -------
        str
            The text.
        """
        while len(self._indents) <= depth:
            self._indents.append(self._indents[-1] + self.indent_unit)
        return self._indents[depth]

    def emit(self, line: str) -> None:
        """Append ``line`` at the current depth.

        Parameters
        ----------
        line : str
            The line.
        """
        self.lines.append(self.indent_text(self.depth) + line)

    def body(self, stmt: Stmt) -> None:
        """``stmt`` as an indented body.

        Parameters
        ----------
        stmt : Stmt
            The statement.
        """
        self.depth += 1
        self.stmt(stmt, concise=True)
        self.depth -= 1

    # -- definitions ------------------------------------------------------------------------
    def _free_var(self, var: E.Var) -> str:
        """A variable used but not defined: define it as ``n = T.int32()``, just before the buffer
        definition that introduces it, or else at the top of the function."""
        if self.local_defs is not None:
            name = self.names.define(var, var.name)
            self.local_defs.append(("var:" + name, self.var_decl(var)))
        else:
            name = self.names.define(var, var.name, outermost=True)
            self.top_defs.append(("var:" + name, self.var_decl(var)))
        return name

    def _free_buffer(self, buffer: Buffer) -> str:
        """A buffer used but not defined (a standalone statement): ``A = T.Buffer(...)`` at the top."""
        saved, self.local_defs = self.local_defs, None
        try:  # a view of a defined buffer's data (a flattened parameter) names it: ``data=A.data``
            call = buffer_decl_call(self, buffer, "T.Buffer", dtype_always=True,
                                    with_data=self.names.is_defined(buffer.data))
            name = self.names.define(buffer, buffer.name, outermost=True)
            self._alias_parts(buffer, name)
        finally:
            self.local_defs = saved
        self.top_defs.append(("buf:" + name, call))
        return name

    def define_buffer(self, buffer: Buffer) -> str:
        """Give ``buffer`` (and its data pointer) a name in the current scope.

        Parameters
        ----------
        buffer : Buffer
            The buffer.

        Returns
        -------
        str
            The name.
        """
        name = self.names.define(buffer, buffer.name)
        self._alias_parts(buffer, name)
        return name

    def _alias_parts(self, buffer: Buffer, name: str) -> None:
        if not self.names.is_defined(buffer.data):
            self.names.alias(buffer.data, f"{name}.data")

    def buffer_definition(self, buffer: Buffer, method: str, first_args: list[str] = (), dtype_always: bool = False) -> None:
        """``A = T.alloc_buffer(...)`` / ``T.match_buffer(...)`` / ``T.decl_buffer(...)``, preceded by the
        definitions of new variables in its shape, strides or offset.

        Parameters
        ----------
        buffer : Buffer
            The buffer.
        method : str
            ``"T.alloc_buffer"``, ``"T.match_buffer"`` or ``"T.decl_buffer"``.
        first_args : list of str
            Text of the arguments before the shape.
        dtype_always : bool
            Print the dtype even when it is float32.
        """
        saved, self.local_defs = self.local_defs, []
        try:
            call = buffer_decl_call(self, buffer, method, first_args=first_args, dtype_always=dtype_always)
            defs = self.local_defs
        finally:
            self.local_defs = saved
        for line in _def_lines(defs):
            self.emit(line)
        self.emit(f"{self.define_buffer(buffer)} = {call}")

    def var_type(self, var: E.Var) -> str:
        """The TVMScript type of a variable: ``T.int32``, ``T.handle``, ``T.handle("float32", "shared")`` (TVM
        always names the scope of a pointer type).

        Parameters
        ----------
        var : Var
            The variable.

        Returns
        -------
        str
            The text.
        """
        annotation = var.type_annotation
        if isinstance(annotation, PointerType):
            return f'T.handle("{annotation.element_dtype}", "{annotation.storage_scope}")'
        return "T." + var.dtype

    def var_decl(self, var: E.Var) -> str:
        """The expression that makes a new variable like ``var``: ``T.int32()``, ``T.handle("float32", "global")``.

        Parameters
        ----------
        var : Var
            The variable.

        Returns
        -------
        str
            The text.
        """
        text = self.var_type(var)
        return text if text.endswith(")") else text + "()"

    def region(self, region: BufferRegion) -> str:
        """``A[0:16, vk]`` text of a BufferRegion.

        Parameters
        ----------
        region : BufferRegion
            The region.

        Returns
        -------
        str
            The text.
        """
        parts = []
        for r in region.region:
            if isinstance(r.extent, E.IntImm) and r.extent.value == 1:
                parts.append(self.ex.expr(r.min))
            else:
                parts.append(f"{self.ex.expr(r.min)}:{self.ex.expr(E.add(r.min, r.extent))}")
        return f"{self.ex.buffer(region.buffer)}[{', '.join(parts) if parts else '()'}]"

    def match_buffer(self, match: MatchBufferRegion) -> None:
        """Print a block's ``T.match_buffer`` line.

        Parameters
        ----------
        match : MatchBufferRegion
            The match.
        """
        self.buffer_definition(match.buffer, "T.match_buffer", first_args=[self.region(match.source)])

    # -- statements -------------------------------------------------------------------------
    def stmt(self, s: Stmt, concise: bool) -> None:
        """Print a statement through its handler (``concise``: a body where a root block may be elided).

        Parameters
        ----------
        s : Stmt
            The statement.
        concise : bool
            Elide a root block when it holds nothing.
        """
        handler = self._dispatch.get(type(s))
        if handler is None:
            handler = None
            for base in type(s).__mro__:
                handler = getattr(self, "_print_" + base.__name__, None)
                if handler is not None:
                    break
            if handler is None:
                raise TVMTypeError(f"the TVMScript printer does not know statement type {type(s).__name__}")
            self._dispatch[type(s)] = handler
        handler(s, concise)

    def _print_SeqStmt(self, s: SeqStmt, concise: bool) -> None:
        last = len(s.seq) - 1
        for i, child in enumerate(s.seq):
            self.stmt(child, concise=concise and i == last)

    def _print_BufferStore(self, s: BufferStore, concise: bool) -> None:
        ex = self.ex
        if s.predicate is not None:
            begin = ", ".join(ex.expr(i.base if isinstance(i, E.Ramp) else i) for i in s.indices)
            self.emit(f"{ex.buffer(s.buffer)}.vstore([{begin}], {ex.expr(s.value)}, predicate={ex.expr(s.predicate)})")
            return
        self.emit(f"{ex.buffer(s.buffer)}[{ex.indices(s.indices)}] = {ex.expr(s.value)}")

    def _print_Evaluate(self, s: Evaluate, concise: bool) -> None:
        if isinstance(s.value, E.Call) and self.syntax_sugar:
            self.emit(self.ex.expr(s.value))
        else:
            self.emit(f"T.evaluate({self.ex.expr(s.value)})")

    def _print_IfThenElse(self, s: IfThenElse, concise: bool) -> None:
        self.emit(f"if {self.ex.expr(s.condition)}:")
        self._scoped_body(s.then_case)
        if s.else_case is not None:
            self.emit("else:")
            self._scoped_body(s.else_case)

    def _print_While(self, s: While, concise: bool) -> None:
        self.emit(f"while {self.ex.expr(s.condition)}:")
        self._scoped_body(s.body)

    def _scoped_body(self, stmt: Stmt) -> None:
        self.names.push_scope()
        self.body(stmt)
        self.names.pop_scope()

    def _print_For(self, loop: For, concise: bool) -> None:
        ex = self.ex
        grid = self._grid(loop) if self.syntax_sugar else [loop]
        if len(grid) > 1:
            extents = ", ".join(ex.expr(l.extent) for l in grid)
            self.names.push_scope()
            names = [self._define_loop(l) for l in grid]
            self.emit(f"for {', '.join(names)} in T.grid({extents}):")
        else:
            grid = [loop]
            args = [ex.expr(loop.extent)] if _is_zero(loop.min) else [ex.expr(loop.min), ex.expr(E.add(loop.min, loop.extent))]
            if loop.kind == ForKind.THREAD_BINDING:
                tag = loop.thread_binding.thread_tag if loop.thread_binding is not None else ""
                args.append(f"thread={format_str(tag)}")
            if loop.annotations:
                args.append(f"annotations={ex.dict_text(loop.annotations)}")
            if loop.kind == ForKind.SERIAL and not loop.annotations and self.syntax_sugar:
                prefix = "range"
            else:
                prefix = _LOOP_KIND[loop.kind]
            self.names.push_scope()
            name = self._define_loop(loop)
            self.emit(f"for {name} in {prefix}({', '.join(args)}):")
        self.body(grid[-1].body)
        for l in grid:
            self.open_loops.pop(id(l.loop_var), None)
        self.names.pop_scope()

    def _define_loop(self, loop: For) -> str:
        self.open_loops[id(loop.loop_var)] = loop
        return self.names.define(loop.loop_var, loop.loop_var.name)

    def _grid(self, loop: For) -> list[For]:
        """Perfectly nested serial loops from 0 without annotations whose extents do not use each
        other's variables: they print as one ``T.grid``."""
        grid: list[For] = []
        grid_vars: set[int] = set()
        node = loop
        while isinstance(node, For):
            if node.kind != ForKind.SERIAL or not _is_zero(node.min) or node.annotations:
                break
            if grid_vars and not isinstance(node.extent, E.IntImm) and uses_var(node.extent, lambda v: id(v) in grid_vars):
                break
            grid.append(node)
            grid_vars.add(id(node.loop_var))
            node = node.body
        return grid

    # -- blocks -------------------------------------------------------------------------------
    def _print_BlockRealize(self, realize: BlockRealize, concise: bool) -> None:
        self._block(realize.block, realize)

    def _print_Block(self, block: Block, concise: bool) -> None:
        self._block(block, None)

    def _block(self, block: Block, realize: BlockRealize | None) -> None:
        ex = self.ex
        values = [ex.expr(v) for v in realize.iter_values] if realize is not None else []
        predicate = None
        if realize is not None and not (isinstance(realize.predicate, E.IntImm) and realize.predicate.value == 1):
            predicate = ex.expr(realize.predicate)
        no_realize = ", no_realize=True" if realize is None else ""
        self.emit(f"with T.block({format_str(block.name_hint)}{no_realize}):")
        self.depth += 1
        self.names.push_scope()
        self._iter_vars(block, realize, values)
        if predicate is not None:
            self.emit(f"T.where({predicate})")
        self.emit(f"T.reads({', '.join(self.region(r) for r in block.reads)})")
        self.emit(f"T.writes({', '.join(self.region(r) for r in block.writes)})")
        if block.annotations:
            self.emit(f"T.block_attr({ex.dict_text(block.annotations)})")
        for buffer in block.alloc_buffers:
            self.buffer_definition(buffer, "T.alloc_buffer")
        for match in block.match_buffers:
            self.match_buffer(match)
        if block.init is not None:
            self.emit("with T.init():")
            self._scoped_body(block.init)
        self.stmt(block.body, concise=True)
        self.names.pop_scope()
        self.depth -= 1

    def _iter_vars(self, block: Block, realize: BlockRealize | None, values: list[str]) -> None:
        """``vi = T.axis.spatial(128, i)`` lines; consecutive iterators bound to the loop variable
        of a loop with the same domain group into ``T.axis.remap`` (TVM's rule)."""
        group: list[int] = []

        def flush():
            if len(group) == 1:
                self._single_iter_var(block.iter_vars[group[0]], values[group[0]] if values else None)
            elif group:
                kinds = "".join(_AXIS_KIND[block.iter_vars[i].iter_type][1] for i in group)
                names = [self.names.define(block.iter_vars[i].var, block.iter_vars[i].var.name) for i in group]
                self.emit(f'{", ".join(names)} = T.axis.remap("{kinds}", [{", ".join(values[i] for i in group)}])')
            group.clear()

        for i, iv in enumerate(block.iter_vars):
            if realize is not None and self.syntax_sugar and self._remappable(iv, realize.iter_values[i]):
                group.append(i)
            else:
                flush()
                self._single_iter_var(iv, values[i] if values else None)
        flush()

    def _remappable(self, iv: E.IterVar, value) -> bool:
        if iv.iter_type not in (E.IterVar.DataPar, E.IterVar.CommReduce) or not isinstance(value, E.Var):
            return False
        loop = self.open_loops.get(id(value))
        return loop is not None and _same_expr(loop.min, iv.dom.min) and _same_expr(loop.extent, iv.dom.extent)

    def _single_iter_var(self, iv: E.IterVar, value: str | None) -> None:
        kind = _AXIS_KIND.get(iv.iter_type)
        if kind is None:
            raise TVMValueError(f"block iterator {iv.var.name!r} has kind {iv.iter_type}, which TVMScript cannot express")
        dom = self.ex.expr(iv.dom.extent) if _is_zero(iv.dom.min) else \
            f"({self.ex.expr(iv.dom.min)}, {self.ex.expr(E.add(iv.dom.min, iv.dom.extent))})"
        args = dom if value is None else f"{dom}, {value}"
        self.emit(f"{self.names.define(iv.var, iv.var.name)} = T.axis.{kind[0]}({args})")

    # -- scoped statements of lowered code ---------------------------------------------------
    def _scoped(self, head: str, define: E.Var | Buffer | None, body: Stmt, concise: bool,
                concise_line: Callable[[str], str] | None = None) -> None:
        """A statement with a body: concise (``lhs = head`` then the body at the same depth) or
        ``with head as lhs:`` with the body indented."""
        if concise and self.syntax_sugar:
            if define is not None:
                name = self._define(define)
                self.emit(concise_line(name) if concise_line else f"{name} = {head}")
            else:
                self.emit(head)
            self.stmt(body, concise=True)
            return
        self.names.push_scope()
        if define is not None:
            self.emit(f"with {head} as {self._define(define)}:")
        else:
            self.emit(f"with {head}:")
        self.body(body)
        self.names.pop_scope()

    def _define(self, obj) -> str:
        if isinstance(obj, Buffer):
            return self.define_buffer(obj)
        return self.names.define(obj, obj.name)

    def _print_LetStmt(self, s: LetStmt, concise: bool) -> None:
        value = self.ex.expr(s.value)
        var_type = self.var_type(s.var)
        self._scoped(f"T.LetStmt({value})", s.var, s.body, concise, lambda name: f"{name}: {var_type} = {value}")

    def _print_AttrStmt(self, s: AttrStmt, concise: bool) -> None:
        ex = self.ex
        node = s.node
        if s.attr_key in ("thread_extent", "virtual_thread") and isinstance(node, E.IterVar):
            if not self.names.is_defined(node.var):
                head = f"T.launch_thread({format_str(node.thread_tag)}, {ex.expr(s.value)})"
                self._scoped(head, node.var, s.body, concise)
            else:
                self._scoped(f"T.launch_thread({ex.var(node.var)}, {ex.expr(s.value)})", None, s.body, concise)
            return
        self._scoped(f"T.attr({ex.value(node)}, {format_str(s.attr_key)}, {ex.value(s.value)})", None, s.body, concise)

    def _print_AssertStmt(self, s: AssertStmt, concise: bool) -> None:
        cond, message = self.ex.expr(s.condition), self.ex.value(s.message)
        if concise and self.syntax_sugar:
            self.emit(f"assert {cond}, {message}")
            self.stmt(s.body, concise=True)
        else:
            self._scoped(f"T.Assert({cond}, {message})", None, s.body, False)

    def _print_Allocate(self, s: Allocate, concise: bool) -> None:
        ex = self.ex
        scope = s.buffer_var.type_annotation.storage_scope if isinstance(s.buffer_var.type_annotation, PointerType) else "global"
        args = [f"[{', '.join(ex.expr(e) for e in s.extents)}]", f'"{s.dtype}"', format_str(scope)]
        if not (isinstance(s.condition, E.IntImm) and s.condition.value == 1):
            args.append(f"condition={ex.expr(s.condition)}")
        if s.annotations:
            args.append(f"annotations={ex.dict_text(s.annotations)}")
        self._scoped(f"T.allocate({', '.join(args)})", s.buffer_var, s.body, concise)

    def _print_DeclBuffer(self, s: DeclBuffer, concise: bool) -> None:
        saved, self.local_defs = self.local_defs, []
        try:
            call = buffer_decl_call(self, s.buffer, "T.decl_buffer", with_data=True)
            defs = self.local_defs
        finally:
            self.local_defs = saved
        for line in _def_lines(defs):
            self.emit(line)
        self._scoped(call, s.buffer, s.body, concise)


def _same_expr(a, b) -> bool:
    if isinstance(a, E.IntImm) and isinstance(b, E.IntImm):  # the common case, without the general walk
        return a.value == b.value and a.dtype == b.dtype
    return structural_equal(a, b)


def _is_zero(e) -> bool:
    return isinstance(e, E.IntImm) and e.value == 0
