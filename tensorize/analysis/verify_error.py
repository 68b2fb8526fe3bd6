"""The error of the well-formedness checks (:mod:`tensorize.analysis.verify`) and the names of their rules."""
from __future__ import annotations

from ..errors import VerifyError
from ..ir.node import Span

__all__ = ["RULES", "WellFormedError"]

RULES = ("binding-extent", "undefined-variable", "access-region", "store-dtype", "affine-binding",
         "iterator-scope", "duplicate-definition")


class WellFormedError(VerifyError):
    """A broken well-formedness rule: ``rule`` (one of ``RULES``), ``span`` (or None) and ``line``."""

    def __init__(self, rule: str, message: str, span: Span | None = None, func_name: str | None = None):
        self.rule, self.span, self.message = rule, span, message
        self.line = span.line if span is not None else None
        where = f"{span.source_name}:{span.line}:{span.column}: " if span is not None else ""
        in_func = f" (in function {func_name!r})" if func_name and span is None else ""
        super().__init__(f"{where}error: [{rule}] {message}{in_func}")
