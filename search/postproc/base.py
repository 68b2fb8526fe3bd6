"""The postprocessor interface, its error and its registry.

A postprocessor runs after ``sch.enter_postproc()`` on a sampled candidate: it turns annotations into
real loop kinds and tensorized blocks, or rejects the candidate with ``PostprocError``.
"""
from __future__ import annotations

from tensorize.schedule import ScheduleError

from ..registry import Registry

__all__ = ["Postproc", "PostprocError", "POSTPROCS"]

POSTPROCS = Registry("postprocessor")


class PostprocError(ScheduleError):
    """A candidate a postprocessor cannot make valid; ``reason`` says why in one line."""

    def __init__(self, reason: str):
        super().__init__(reason)


class Postproc:
    """One rewrite or check of a finished candidate; subclasses implement ``apply``."""

    registered_name = "?"

    def apply(self, sch, ctx) -> None:
        """Rewrite ``sch`` in place (recorded in its trace) or raise ``PostprocError``.

        Parameters
        ----------
        sch : Schedule
            A sampled candidate after ``sch.enter_postproc()``.
        ctx : TuneContext
            The task.
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
