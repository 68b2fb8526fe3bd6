"""TVMScript source text: where it came from, its Python AST, and errors that point into it."""
from __future__ import annotations

import ast
import inspect
import textwrap
import warnings

from ...errors import DiagnosticError as _DiagnosticError
from ...ir.node import Span


def DiagnosticError(message: str, source_name: str = "<tvmscript>", line: int | None = None,  # noqa: N802
                    column: int | None = None, source_line: str | None = None) -> _DiagnosticError:
    """A ``tensorize.errors.DiagnosticError`` whose ``str()`` is the full located message.

    Parameters
    ----------
    message : str
        The message.
    source_name : str
        The file name.
    line : int, optional
        The line.
    column : int, optional
        The column.
    source_line : str, optional
        The text of the line.

    Returns
    -------
    DiagnosticError
        The error.
    """
    return _DiagnosticError(message, source_name, line, column, source_line)


class Source:
    """Source text with the file name and the line/column it starts at in that file.

    Python's ``ast`` numbers lines from the start of the (dedented) text; spans and errors are
    reported in the coordinates of the original file."""

    def __init__(self, text: str, source_name: str = "<tvmscript>", start_line: int = 1, indent: int = 0):
        self.text = text
        self.lines = text.splitlines()
        self.source_name = source_name
        self.start_line = start_line
        self.indent = indent

    @staticmethod
    def from_object(obj) -> "Source":
        """The source of a function or class, dedented so ``ast`` can parse it.

        Parameters
        ----------
        obj : function, class or code object
            The object.

        Returns
        -------
        Source
            Its source.
        """
        try:
            lines, start_line = inspect.getsourcelines(obj)
            source_name = inspect.getsourcefile(obj) or inspect.getfile(obj)
        except (OSError, TypeError) as err:
            name = getattr(obj, "__qualname__", getattr(obj, "co_qualname", obj))
            raise DiagnosticError(
                f"cannot read the source of {name!r} ({err}); TVMScript needs the "
                "function's source: define it in a file or a notebook cell, or pass the text to "
                "tensorize.script.from_source") from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        first = next((line for line in text.splitlines() if line.strip()), "")
        first_dedented = next((line for line in dedented.splitlines() if line.strip()), "")
        indent = len(first) - len(first_dedented)
        return Source(dedented, source_name, start_line, indent)

    def parse(self) -> ast.Module:
        """The Python AST of the source (syntax warnings silenced; syntax errors become diagnostics).

        Returns
        -------
        ast.Module
            The AST.
        """
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SyntaxWarning)  # "invalid decimal literal" and such: errors follow
                return ast.parse(self.text)
        except (ValueError, MemoryError, RecursionError) as err:  # NUL bytes, nesting beyond the parser's limits
            raise DiagnosticError(f"cannot parse the text: {err}", self.source_name) from None
        except SyntaxError as err:
            line = err.lineno or 1
            column = (err.offset or 1)
            raise DiagnosticError(f"invalid syntax: {err.msg}", self.source_name, line + self.start_line - 1,
                                  column + self.indent, self._line(line)) from None

    def _line(self, line: int) -> str | None:
        if 1 <= line <= len(self.lines):
            return " " * self.indent + self.lines[line - 1]
        return None

    def span(self, node: ast.AST) -> Span | None:
        """The Span of ``node`` in the original file (line and column shifted back from the dedented text).

        Parameters
        ----------
        node : ast.AST
            The node.

        Returns
        -------
        Span or None
            The span.
        """
        try:  # statements and expressions parsed by ``ast`` always carry all four positions
            line, column, end_line, end_col = node.lineno, node.col_offset, node.end_lineno, node.end_col_offset
        except AttributeError:
            return None
        shift, indent = self.start_line - 1, self.indent
        return Span(self.source_name, line + shift, column + 1 + indent,
                    None if end_line is None else end_line + shift, None if end_col is None else end_col + 1 + indent)

    def error(self, node: ast.AST | None, message: str) -> DiagnosticError:
        """A DiagnosticError at ``node`` showing the source line with a caret under the column.

        Parameters
        ----------
        node : ast.AST or None
            The node (None: no location).
        message : str
            The message.

        Returns
        -------
        DiagnosticError
            The error.
        """
        if node is None or getattr(node, "lineno", None) is None:
            return DiagnosticError(message, self.source_name)
        return DiagnosticError(message, self.source_name, node.lineno + self.start_line - 1,
                               node.col_offset + 1 + self.indent, self._line(node.lineno))
