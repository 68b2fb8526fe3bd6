"""The mutator interface and its registry.

A mutator takes a candidate's trace and returns a trace with one decision changed (``None`` when it
finds nothing to change); the caller replays it with ``replay_candidate``.
"""
from __future__ import annotations

from tensorize.schedule.trace import Instruction, Trace

from ..registry import Registry

__all__ = ["Mutator", "MUTATORS", "replace_instruction"]

MUTATORS = Registry("mutator")


class Mutator:
    """One kind of change to a trace; subclasses implement ``apply``."""

    registered_name = "?"

    def apply(self, trace: Trace, ctx, rng) -> Trace | None:
        """A copy of ``trace`` (without its postproc part) with one decision changed, or None.

        Parameters
        ----------
        trace : Trace
            A candidate's trace.
        ctx : TuneContext
        rng : random.Random
            The random source of this mutation.
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def replace_instruction(trace: Trace, old: Instruction, new: Instruction) -> Trace:
    """``trace`` without its postproc part, with instruction ``old`` replaced by ``new`` (outputs shared)."""
    insts = []
    for inst in trace.insts:
        if inst.kind == "enter_postproc":
            break
        insts.append(new if inst is old else inst)
    return Trace(insts)
