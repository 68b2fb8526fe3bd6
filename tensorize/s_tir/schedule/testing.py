"""``tvm.s_tir.schedule.testing``: helpers that tests of schedules use (trace round trips)."""
from __future__ import annotations

from ...ir.structural import assert_structural_equal
from ...schedule import Schedule
from ...schedule.trace import Trace


def verify_trace_roundtrip(sch: Schedule, mod, *, debug_mask="all", text_format=("json", "python")) -> Schedule:
    """Check that ``sch``'s trace replays on ``mod`` to the same program, directly, through its JSON
    form and through its Python text (``text_format`` picks the forms); returns the replayed schedule.

    Parameters
    ----------
    sch : Schedule
        A schedule of ``mod``, with the primitives to check applied.
    mod : IRModule or PrimFunc
        The program before scheduling.
    debug_mask : str or int
        Passed to the replaying ``Schedule``.
    text_format : str or tuple of str
        ``"json"`` and/or ``"python"``: the serialised forms to replay as well.

    Returns
    -------
    Schedule
        The schedule made by replaying the trace directly.

    Raises
    ------
    AssertionError
        When a replay gives another program.
    ValueError
        For an unknown ``text_format``.
    """
    if isinstance(text_format, str):
        text_format = (text_format,)
    new_sch = Schedule(mod, debug_mask=debug_mask)
    sch.trace.apply_to_schedule(new_sch, remove_postproc=False)
    assert_structural_equal(new_sch.mod, sch.mod)
    for form in text_format:
        replay = Schedule(mod, debug_mask=debug_mask)
        if form == "json":
            Trace.from_json(sch.trace.as_json()).apply_to_schedule(replay, remove_postproc=False)
        elif form == "python":
            import tensorize
            from ...script import tir as T

            namespace = {"sch": replay, "T": T, "tvm": tensorize, "tir": tensorize.tir}
            exec("\n".join(sch.trace.as_python()), namespace)  # noqa: S102 - the trace's own text
        else:
            raise ValueError(f"text_format must be 'json' or 'python', got {form!r}")
        assert_structural_equal(replay.mod, sch.mod)
    return new_sch


def assert_structural_equal_ignore_global_symbol(func1, func2, *args, **kwargs) -> None:
    """``assert_structural_equal`` of two PrimFuncs after dropping their ``global_symbol`` attributes.

    Parameters
    ----------
    func1, func2 : PrimFunc
        The functions to compare.
    *args, **kwargs
        Passed to ``assert_structural_equal`` (e.g. ``map_free_vars``).

    Raises
    ------
    AssertionError
        When they differ otherwise.
    """
    def strip(func):
        return func.without_attr("global_symbol") if hasattr(func, "without_attr") else func
    assert_structural_equal(strip(func1), strip(func2), *args, **kwargs)
