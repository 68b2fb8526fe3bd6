"""The error every schedule primitive raises when it cannot apply."""
from __future__ import annotations

from ..errors import TVMError


class ScheduleError(TVMError):
    """A primitive could not apply. The message names the violated condition and shows the IR around
    the offending block or loop; the schedule is left exactly as it was before the call."""

    def __init__(self, message: str, ir: str | None = None):
        self.reason = message
        text = message if not ir else f"{message}\nThe IR around the offending part:\n{ir}"
        super().__init__(text)


def render(node, limit: int = 60) -> str:
    """TVMScript of ``node`` for error messages, cut to ``limit`` lines.

    Parameters
    ----------
    node : Node
        The IR node.
    limit : int
        The most lines to keep.

    Returns
    -------
    str
        The text, with ``...`` where it was cut.
    """
    try:
        text = node.script()
    except Exception:  # the printer is best effort inside an error message
        return repr(node)
    lines = text.splitlines()
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more lines)"]
    return "\n".join(lines)


class ScheduleTypeError(ScheduleError, TypeError):
    """A primitive got an argument of the wrong type (a LoopRV where a BlockRV belongs, a string for a
    factor, ...); the schedule is unchanged."""


class ScheduleValueError(ScheduleError, ValueError):
    """A primitive got an argument of the right type but an invalid value; the schedule is unchanged."""


class TraceError(ScheduleError, ValueError):
    """A trace (``Trace.from_json`` input or a replayed instruction) is malformed: garbage, truncated,
    an unknown instruction kind or arguments the primitive does not take."""
