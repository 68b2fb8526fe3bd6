"""TVMScript text of definitions, shared by the function printer (``printer.py``) and the statement
printer (``printer_stmt.py``): the ``T.Buffer(...)``/``T.alloc_buffer(...)`` call of a buffer with the
attributes that differ from their defaults, and the lines that define free variables and buffers.
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir.buffer import Buffer
from .printer_expr import format_str


def buffer_decl_call(printer, buffer: Buffer, method: str, first_args=(), dtype_always: bool = False,
                     with_data: bool = False) -> str:
    """``T.Buffer((128, 128), "float32", strides=..., scope="shared", ...)``: shape, dtype, and the
    attributes that differ from their defaults, in TVM's order.

    Parameters
    ----------
    printer : StmtPrinter
        The printer.
    buffer : Buffer
        The buffer.
    method : str
        The constructor, e.g. ``"T.Buffer"``.
    first_args : list of str
        Text of the arguments before the shape.
    dtype_always : bool
        Print the dtype even when it is float32.
    with_data : bool
        Print ``data=`` as well.

    Returns
    -------
    str
        The text.
    """
    ex = printer.ex
    shape = ", ".join(ex.expr(s) for s in buffer.shape)
    args = list(first_args)
    args.append(f"({shape},)" if len(buffer.shape) == 1 else f"({shape})")
    if dtype_always or buffer.dtype != "float32":
        args.append(f'"{buffer.dtype}"')
    if with_data:
        args.append(f"data={ex.var(buffer.data)}")
    if buffer.strides:
        strides = ", ".join(ex.expr(s) for s in buffer.strides)
        args.append(f"strides=({strides},)" if len(buffer.strides) == 1 else f"strides=({strides})")
    if not (isinstance(buffer.elem_offset, E.IntImm) and buffer.elem_offset.value == 0):
        args.append(f"elem_offset={ex.expr(buffer.elem_offset)}")
    if buffer.scope() != "global":
        args.append(f"scope={format_str(buffer.scope())}")
    if buffer.data_alignment != 64:
        args.append(f"align={buffer.data_alignment}")
    if buffer.offset_factor != 1:
        args.append(f"offset_factor={buffer.offset_factor}")
    if buffer.buffer_type:
        args.append(f"buffer_type={format_str(buffer.buffer_type)}")
    if buffer.axis_separators:
        args.append(f"axis_separators={list(buffer.axis_separators)}")
    return f"{method}({', '.join(args)})"


def _def_lines(defs: list[tuple[str, str]]) -> list[str]:
    """Definition lines for ``("var:n", "T.int32()")`` / ``("buf:A", "T.Buffer(...)")`` entries;
    consecutive variable definitions share a line (``n, m = T.int64(), T.int64()``), as in TVM."""
    out: list[str] = []
    run: list[tuple[str, str]] = []

    def flush():
        if run:
            out.append(", ".join(n for n, _ in run) + " = " + ", ".join(t for _, t in run))
            run.clear()

    for kind_name, text in defs:
        kind, _, name = kind_name.partition(":")
        if kind == "var":
            run.append((name, text))
        else:
            flush()
            out.append(f"{name} = {text}")
    flush()
    return out
