"""``mutate_unroll``: another choice of the unroll depth's ``sample_categorical``."""
from __future__ import annotations

from tensorize.schedule.trace import Instruction

from ..schedule_rule.parallel_vectorize_unroll import UNROLL
from .base import MUTATORS, Mutator, replace_instruction

__all__ = ["MutateUnroll"]


@MUTATORS.register("mutate_unroll")
class MutateUnroll(Mutator):
    """Change the decision of a ``sample_categorical`` whose value annotates
    ``meta_schedule.unroll_explicit`` to another index with non-zero probability."""

    def apply(self, trace, ctx, rng):
        """See ``Mutator.apply``: a copy of ``trace`` with one decision of this kind changed, or None."""
        feeding = {id(inst.args.get("ann_val")) for inst in trace.insts
                   if inst.kind == "annotate" and inst.args.get("ann_key") == UNROLL}
        cats = [inst for inst in trace.insts if inst.kind == "sample_categorical"
                and inst.outputs and id(inst.outputs[0]) in feeding]
        if not cats:
            return None
        inst = cats[rng.randrange(len(cats))]
        choices = [i for i, p in enumerate(inst.args["probs"]) if float(p) > 0 and i != inst.decision]
        if not choices:
            return None
        new = choices[rng.randrange(len(choices))]
        return replace_instruction(trace, inst, Instruction(inst.kind, dict(inst.args), inst.outputs, new))
