"""Schedule primitives that attach annotations to blocks and loops: annotate, unannotate."""
from __future__ import annotations

from ..base import ScheduleBase, primitive
from ..rv import BlockRV, ExprRV, LoopRV


def _annotation_value(value):
    """Annotation values as the parser stores them: sampled ExprRVs become their integer; numbers,
    strings, bools, expressions, lists and dicts are kept."""
    if isinstance(value, ExprRV):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_annotation_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _annotation_value(v) for k, v in value.items()}
    return value


class Annotation(ScheduleBase):
    """annotate, unannotate."""

    def _target(self, block_or_loop):
        if isinstance(block_or_loop, BlockRV):
            func_name, _index, realize = self._block(block_or_loop)
            return func_name, realize.block
        if isinstance(block_or_loop, LoopRV):
            func_name, _index, loop = self._loop(block_or_loop)
            return func_name, loop
        raise TypeError(f"expected a BlockRV or LoopRV, got {type(block_or_loop).__name__}")

    @primitive
    def annotate(self, block_or_loop, ann_key: str, ann_val) -> None:
        """Set annotation ``ann_key`` to ``ann_val`` on a block or a loop (replacing an old value).

        Parameters
        ----------
        block_or_loop : BlockRV or LoopRV
            The block or loop to annotate.
        ann_key : str
            The annotation key.
        ann_val : int, float, str, list or dict
            The annotation value.

        Example::

            sch.annotate(sch.get_block("C"), "meta_schedule.unroll_explicit", 16)
            # with T.block("C"):
            #     T.block_attr({"meta_schedule.unroll_explicit": 16})
            sch.annotate(i, "pragma_auto_unroll_max_step", 64)
            # for i in T.serial(128, annotations={"pragma_auto_unroll_max_step": 64}):

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul())
        >>> sch.annotate(sch.get_block("C"), "meta_schedule.unroll_explicit", 16)
        >>> sch.get(sch.get_block("C")).annotations["meta_schedule.unroll_explicit"]
        16
        """
        if not isinstance(ann_key, str):
            raise TypeError(f"annotation keys are strings, got {type(ann_key).__name__}")
        func_name, node = self._target(block_or_loop)
        annotations = dict(node.annotations)
        annotations[ann_key] = _annotation_value(ann_val)
        self._replace(func_name, node, node.replace(annotations=annotations))

    @primitive
    def unannotate(self, block_or_loop, ann_key: str) -> None:
        """Remove annotation ``ann_key`` from a block or a loop; an error if it is not there.

        Parameters
        ----------
        block_or_loop : BlockRV or LoopRV
            The block or loop to remove the annotation from.
        ann_key : str
            The annotation key.

        Example::

            sch.unannotate(sch.get_block("C"), "meta_schedule.unroll_explicit")
        """
        func_name, node = self._target(block_or_loop)
        if ann_key not in node.annotations:
            raise self._error(f"unannotate: no annotation {ann_key!r} here; the annotations are "
                              f"{sorted(node.annotations)}", node)
        annotations = {k: v for k, v in node.annotations.items() if k != ann_key}
        self._replace(func_name, node, node.replace(annotations=annotations))
