"""Errors raised by tensorize. Messages name the problem and the fix."""


class TVMError(RuntimeError):
    """Base class of tensorize errors (TVM's name, so ``except tvm.TVMError`` works)."""


class DiagnosticError(TVMError, SyntaxError):
    """A TVMScript source error: carries the file, line and column of the offending code.

    ``str(err)`` is the whole located message (``file:line:column: error: ...`` plus the source line
    with a caret); ``err.msg_only`` is the bare message, ``err.source_name``, ``err.lineno_`` and
    ``err.column`` the position.

    >>> err = DiagnosticError("undefined name 'x'", "kernel.py", 3, 5, "y = x + 1")
    >>> print(err)
    kernel.py:3:5: error: undefined name 'x'
        y = x + 1
            ^
    """

    def __init__(self, message: str = "", source_name: str = "<tvmscript>", line: int | None = None,
                 column: int | None = None, source_line: str | None = None):
        self.source_name, self.lineno_, self.column = source_name, line, column
        location = f"{source_name}:{line}:{column}" if line is not None else source_name
        text = f"{location}: error: {message}"
        if source_line is not None and column is not None:
            text += f"\n    {source_line.rstrip()}\n    {' ' * max(column - 1, 0)}^"
        # RuntimeError.__init__ comes first in the MRO and leaves SyntaxError's ``msg`` unset, and
        # SyntaxError.__str__ shows ``msg``: set it to the whole text so every raiser gets a message.
        # ``filename``/``lineno`` stay None so tracebacks do not repeat the location the text has.
        super().__init__(text)
        self.msg = text
        self.msg_only = message

    def __str__(self) -> str:
        return self.msg if self.msg is not None else str(self.args[0] if self.args else "")


class VerifyError(TVMError):
    """A program breaks a well-formedness rule of TensorIR."""


class TargetError(TVMError, ValueError):
    """A target string or dict names something LLVM does not know (a CPU, feature, triple or CUDA arch),
    or is malformed. Raised before LLVM sees the target, so a typo never aborts the process."""


class BuildError(TVMError):
    """Compiling a program failed (in this process or in a compiler child process)."""


class TVMValueError(TVMError, ValueError):
    """A value a caller passed is invalid (right type, wrong value)."""


class TVMTypeError(TVMError, TypeError):
    """A value a caller passed has the wrong type."""


class TVMIndexError(TVMError, IndexError):
    """An index a caller passed is out of range."""


class TVMKeyError(TVMError, KeyError):
    """A name a caller asked for does not exist."""

    def __str__(self) -> str:  # KeyError quotes its message; show it as written
        return str(self.args[0]) if self.args else ""


class TVMAttributeError(TVMError, AttributeError):
    """An attribute (a function of a built module, a config option) does not exist."""


class TVMNotImplementedError(TVMError, NotImplementedError):
    """A form TVM supports that tensorize does not support yet."""
