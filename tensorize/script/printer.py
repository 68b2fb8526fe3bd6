"""The TVMScript printer: IR -> text in the style of current TVM (0.20+), with ``T.block``.

``script(node)`` prints an IRModule, a PrimFunc, a statement, an expression or another node.
``Node.script()``, ``Node.show()`` and ``str(node)`` call it. The text parses back with
``tensorize.script.from_source`` to a structurally equal program.

>>> from tensorize.ir.buffer import decl_buffer
>>> from tensorize.ir.stmt import BufferStore, For
>>> from tensorize.ir.expr import Var
>>> from tensorize.ir.function import PrimFunc
>>> A = decl_buffer((8,), "float32", name="A")
>>> i = Var("i")
>>> f = PrimFunc([A.data], For(i, 0, 8, body=BufferStore(A, A[i] + 1.0, [i])), buffer_map={A.data: A})
>>> print(script(f.with_attr("global_symbol", "main")))
# from tvm.script import tir as T
<BLANKLINE>
@T.prim_func
def main(A: T.Buffer((8,), "float32")):
    for i in range(8):
        A[i] = A[i] + T.float32(1.0)
"""
from __future__ import annotations

from ..errors import TVMTypeError

import logging
from typing import Any

from ..arith.index_map import IndexMap
from ..ir import expr as E
from ..ir.buffer import Buffer
from ..ir.function import GlobalVar, IRModule, PrimFunc
from ..ir.node import Node, register_printer
from ..ir.stmt import Block, BlockRealize, BufferRegion, IfThenElse, MatchBufferRegion, SeqStmt, Stmt
from .printer_defs import _def_lines, buffer_decl_call
from .printer_stmt import StmtPrinter

logger = logging.getLogger(__name__)

HEADER_TIR = "# from tvm.script import tir as T"
HEADER_IR = "# from tvm.script import ir as I"

# Options of TVM's ``script()`` that change nothing in plain text output; accepted for compatibility.
_IGNORED_OPTIONS = frozenset({
    "name", "show_all_struct_info", "ir_prefix", "tir_prefix", "relax_prefix", "module_alias", "buffer_dtype",
    "int_dtype", "float_dtype", "verbose_expr", "print_line_numbers", "num_context_lines", "path_to_underline",
    "path_to_annotate", "obj_to_underline", "obj_to_annotate", "show_object_address", "extra_config",
    "show_type", "show_meta_data", "style", "black_format", "color",
})


def script(node: Any, show_meta: bool = False, syntax_sugar: bool = True, indent_spaces: int = 4, **options: Any) -> str:
    """TVMScript text of ``node``.

    Parameters
    ----------
    node : IRModule, PrimFunc, Stmt, PrimExpr, Buffer, BufferRegion, Range, ...
        What to print.
    show_meta : bool
        Accepted for TVM compatibility; this printer has no metadata section (all constants print inline).
    syntax_sugar : bool
        Use ``T.grid``, ``T.axis.remap``, ``range``, the implicit root block and Python operators.
        With ``False`` every construct prints in its explicit form.
    indent_spaces : int
        Spaces per indentation level.

    Returns
    -------
    str
        The text.

    Example
    -------
    >>> from tensorize.ir.expr import Var
    >>> script(Var("i") * 4 + 1)
    'i * 4 + 1'
    """
    unknown = set(options) - _IGNORED_OPTIONS
    if unknown:
        raise TVMTypeError(f"script() got unknown option(s) {sorted(unknown)}; supported: show_meta, syntax_sugar, indent_spaces")
    if show_meta:
        logger.debug("show_meta=True has no effect: constants are printed inline")
    printer = _Printer(syntax_sugar=syntax_sugar, indent_spaces=indent_spaces)
    return printer.print_node(node)


class _Printer(StmtPrinter):
    """Prints whole programs: modules, functions (with their parameters, attributes and root
    block), and standalone statements; statement bodies are ``StmtPrinter``'s."""

    def print_node(self, node: Any) -> str:
        if isinstance(node, IRModule):
            self.module(node)
            return "\n".join(self.lines)
        if isinstance(node, PrimFunc):
            self.lines += [HEADER_TIR, ""]
            name = node.attrs.get("global_symbol", "main")
            self.function(node, name if isinstance(name, str) else "main")
            return "\n".join(self.lines)
        if isinstance(node, Stmt):
            self.lines += [HEADER_TIR, ""]
            self.begin_top_level()
            self.stmt(node, concise=True)
            self.end_top_level()
            return "\n".join(self.lines)
        if isinstance(node, (E.PrimExpr, E.Range, E.IterVar)):
            return self.ex.value(node)
        if isinstance(node, Buffer):
            call = buffer_decl_call(self, node, "T.Buffer", dtype_always=True)
            return f"{self.names.define(node, node.name)} = {call}"
        if isinstance(node, BufferRegion):
            return self.region(node)
        if isinstance(node, MatchBufferRegion):
            self.match_buffer(node)
            return "\n".join(self.lines)
        if isinstance(node, GlobalVar):
            return f'I.GlobalVar("{node.name_hint}")'
        if isinstance(node, IndexMap):
            args = ", ".join(v.name for v in node.initial_indices)
            finals = [self.ex.expr(f) for f in node.final_indices]
            body = f"({finals[0]},)" if len(finals) == 1 else "(" + ", ".join(finals) + ")"
            return f"lambda {args}: {body}"
        if isinstance(node, (list, tuple, dict, int, float, str, bool)) or node is None:
            return self.ex.value(node)
        if isinstance(node, Node):
            raise TVMTypeError(f"the TVMScript printer cannot print a {type(node).__name__}")
        return repr(node)

    # -- modules and functions ---------------------------------------------------------------
    def module(self, mod: IRModule) -> None:
        self.lines += [HEADER_IR, HEADER_TIR, "", "@I.ir_module", "class Module:"]
        self.depth = 1
        if mod.attrs:
            self.emit(f"I.module_attrs({self.ex.dict_text(mod.attrs)})")
        items = sorted(mod.functions.items(), key=lambda kv: kv[0].name_hint)
        if not items:
            self.emit("pass")
        for index, (gv, func) in enumerate(items):
            if index:
                self.lines.append("")
            if not isinstance(func, PrimFunc):
                raise TVMTypeError(f"cannot print module function {gv.name_hint!r} of type {type(func).__name__}")
            self.function(func, gv.name_hint)
        self.depth = 0

    def function(self, func: PrimFunc, name: str) -> None:
        attrs = dict(func.attrs)
        private = "global_symbol" not in attrs
        if attrs.get("global_symbol") == name:
            del attrs["global_symbol"]  # implied by the function's name
        self.emit("@T.prim_func(private=True)" if private else "@T.prim_func")
        self.begin_top_level()
        params: list[str] = []
        late_buffers: list[tuple[E.Var, Buffer]] = []  # params printed as handles + T.match_buffer
        claimed_data: set[int] = set()
        for param in func.params:
            buffer = func.buffer_map.get(param)
            if buffer is not None and id(buffer.data) not in claimed_data and _is_annotatable(buffer):
                claimed_data.add(id(buffer.data))
                call = buffer_decl_call(self, buffer, "T.Buffer", dtype_always=True)
                params.append(f"{self.define_buffer(buffer)}: {call}")
            else:
                params.append(f"{self.names.define(param, param.name)}: {self.var_type(param)}")
                if buffer is not None:
                    late_buffers.append((param, buffer))
        self.emit(f"def {name}({', '.join(params)}):")
        self.depth += 1
        body_start = len(self.lines)
        if attrs:
            self.emit(f"T.func_attr({self.ex.dict_text(attrs)})")
        self.top_depth = self.depth
        for param, buffer in late_buffers:
            self.buffer_definition(buffer, "T.match_buffer", first_args=[self.ex.var(param)])
        # hoisted definitions go after the parameters' match_buffers: a flattened view names their data and shape
        self.top_insert_at = len(self.lines)
        self.function_body(func)
        self.end_top_level()
        if len(self.lines) == body_start:
            self.emit("T.evaluate(0)")
        self.depth -= 1

    def function_body(self, func: PrimFunc) -> None:
        root = _implicit_root_block(func.body) if self.syntax_sugar else None
        if root is None:
            self.stmt(func.body, concise=True)
            return
        self.emit('# with T.block("root"):')
        for buffer in root.alloc_buffers:
            self.buffer_definition(buffer, "T.alloc_buffer")
        self.stmt(root.body, concise=True)

    def begin_top_level(self) -> None:
        """Open the outermost scope; variables and buffers used but never defined get their
        definitions (``n = T.int32()``, ``A = T.Buffer(...)``) at its start."""
        self.names.push_scope()
        self.top_insert_at = len(self.lines)
        self.top_depth = self.depth
        self.top_defs = []

    def end_top_level(self) -> None:
        if self.top_defs:
            indent = self.indent_text(self.top_depth)
            self.lines[self.top_insert_at:self.top_insert_at] = [indent + line for line in _def_lines(self.top_defs)]
            self.top_defs = []
        self.names.pop_scope()


def _is_annotatable(buffer: Buffer) -> bool:
    """A parameter buffer prints as ``A: T.Buffer(...)`` unless its shape, strides or offset hold
    variables (those print as a handle parameter and ``T.match_buffer``, as TVM does)."""
    from ..ir.functor import collect_vars

    for part in (*buffer.shape, *buffer.strides, buffer.elem_offset):
        if not isinstance(part, E.IntImm) and collect_vars(part):
            return False
    return True


def _implicit_root_block(body: Stmt) -> Block | None:
    """The root block when it can print as the comment ``# with T.block("root"):`` and be rebuilt
    by the parser (TVM's rule: nothing on it but allocations, and the body holds blocks)."""
    if not isinstance(body, BlockRealize) or body.iter_values or not _is_true(body.predicate):
        return None
    block = body.block
    if block.name_hint != "root" or block.iter_vars or block.annotations or block.match_buffers:
        return None
    if block.reads or block.writes or block.init is not None:
        return None
    inner = block.body
    if block.alloc_buffers:
        return block
    if isinstance(inner, BlockRealize):
        return block if inner.block.iter_vars else None
    return block if contains_block(inner) else None


def _is_true(e) -> bool:
    return isinstance(e, E.IntImm) and e.value == 1


def contains_block(stmt: Stmt) -> bool:
    """Whether ``stmt`` holds a block anywhere (a statement walk; expressions are not entered).

    Parameters
    ----------
    stmt : Stmt
        The statement.

    Returns
    -------
    bool
        The answer.
    """
    stack = [stmt]
    while stack:
        s = stack.pop()
        if isinstance(s, (Block, BlockRealize)):
            return True
        if isinstance(s, SeqStmt):
            stack.extend(s.seq)
        elif isinstance(s, IfThenElse):
            stack.append(s.then_case)
            if s.else_case is not None:
                stack.append(s.else_case)
        else:
            body = getattr(s, "body", None)
            if isinstance(body, Stmt):
                stack.append(body)
    return False


__all__ = ["script"]


register_printer(script=script)
