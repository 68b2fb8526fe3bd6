"""``mutate_split_choice``: another candidate of a ``sample_categorical`` that a ``split`` takes as its factor
(the register rows of the graph's default schedules, ``tiled_schedule(..., sample_rows=True)``, which the
search measures first and then evolves from)."""
from __future__ import annotations

from tensorize.schedule.trace import Instruction

from .base import MUTATORS, Mutator, replace_instruction

__all__ = ["MutateSplitChoice"]


@MUTATORS.register("mutate_split_choice")
class MutateSplitChoice(Mutator):
    """Move the decision of a ``sample_categorical`` feeding a ``split`` factor to a neighbouring candidate
    (one or two places away, with non-zero probability): a row count near the parent's.

    Examples
    --------
    >>> from tensorize import te
    >>> from tensorize.graph.default_schedule import tiled_schedule
    >>> a, w = te.placeholder((49, 96), name="a"), te.placeholder((96, 64), name="w")
    >>> k = te.reduce_axis((0, 96), name="k")
    >>> c = te.compute((49, 64), lambda i, j: te.sum(a[i, k] * w[k, j], axis=k), name="c")
    >>> trace = tiled_schedule(te.create_prim_func([a, w, c]), lanes=8, sample_rows=True).trace
    >>> import random
    >>> child = MutateSplitChoice().apply(trace, None, random.Random(0))
    >>> [(i.decision, j.decision) for i, j in zip(trace.insts, child.insts) if i.kind == "sample_categorical"]
    [(5, 4)]
    """

    def apply(self, trace, ctx, rng):
        """See ``Mutator.apply``: a copy of ``trace`` with one decision of this kind changed, or None."""
        factors = {id(f) for inst in trace.insts if inst.kind == "split" for f in inst.args.get("factors") or ()}
        cats = [inst for inst in trace.insts if inst.kind == "sample_categorical" and inst.outputs
                and id(inst.outputs[0]) in factors]
        rng.shuffle(cats)
        for inst in cats:
            probs = inst.args["probs"]
            choices = [i for i in range(len(probs)) if float(probs[i]) > 0 and 0 < abs(i - inst.decision) <= 2]
            if choices:
                new = choices[rng.randrange(len(choices))]
                return replace_instruction(trace, inst, Instruction(inst.kind, dict(inst.args), inst.outputs, new))
        return None
