"""Errors raised by tensorize. Messages name the problem and the fix."""


class TVMError(RuntimeError):
    """Base class of tensorize errors (TVM's name, so ``except tvm.TVMError`` works)."""


class DiagnosticError(TVMError, SyntaxError):
    """A TVMScript source error: carries the file, line and column of the offending code."""

    def __init__(self, message: str, source_name: str = "<tvmscript>", line: int | None = None, column: int | None = None,
                 source_line: str | None = None):
        self.source_name, self.lineno_, self.column = source_name, line, column
        location = f"{source_name}:{line}:{column}" if line is not None else source_name
        text = f"{location}: error: {message}"
        if source_line is not None and column is not None:
            text += f"\n    {source_line.rstrip()}\n    {' ' * max(column - 1, 0)}^"
        super().__init__(text)
        self.msg_only = message


class VerifyError(TVMError):
    """A program breaks a well-formedness rule of TensorIR."""
