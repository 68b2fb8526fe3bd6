"""``rewrite_parallel_vectorize_unroll``: the root block's parallel / vectorize / unroll budgets
(set by the ``parallel_vectorize_unroll`` rule) become loop kinds."""
from __future__ import annotations

from tensorize.ir.stmt import BlockRealize, For, ForKind
from tensorize.schedule.analysis import block_realizes_under

from ..schedule_rule.analysis import AUTO_TENSORIZE, is_leaf
from ..schedule_rule.parallel_vectorize_unroll import PARALLEL, UNROLL, VECTORIZE
from .base import POSTPROCS, Postproc
from .loops import loop_var_kinds, nest_blocks, under_annotated

__all__ = ["RewriteParallelVectorizeUnroll"]


#: Most explicitly unrolled steps of a nest whose innermost loop is not vectorized / is vectorized.
SCALAR_UNROLL_CAP = 64
UNROLL_CAP = 128


@POSTPROCS.register("rewrite_parallel_vectorize_unroll")
class RewriteParallelVectorizeUnroll(Postproc):
    """For each loop nest under the root block:

    * parallel: fuse the outermost loops that are spatial for every block of the nest until their product
      exceeds ``meta_schedule.parallel`` (the loop that crosses it included, as TVM does), and ``parallel``
      them;
    * vectorize: per computing block, the innermost spatial loop that holds only that block (with
      the unit loops under it fused in), if its extent is within ``meta_schedule.vectorize``;
    * unroll: per block, ``unroll`` the serial loops from the inside out (a vectorized loop counts as
      one step) while the number of unrolled steps stays within ``meta_schedule.unroll_explicit``.

    The root annotations are removed. Blocks under a ``meta_schedule.auto_tensorize`` block are not
    vectorized (their body becomes the intrinsic's implementation).
    """

    def apply(self, sch, ctx) -> None:
        """See ``Postproc.apply``: rewrite ``sch`` in place or raise ``PostprocError``."""
        for func_name in sch.mod.function_names():
            root_realize = sch.mod[func_name].body
            if not isinstance(root_realize, BlockRealize):
                continue
            ann = root_realize.block.annotations
            if not any(k in ann for k in (PARALLEL, VECTORIZE, UNROLL)):
                continue
            root = sch.get_block(root_realize.block.name_hint, func_name)
            max_par, max_vec, max_unroll = (int(ann.get(k, 0)) for k in (PARALLEL, VECTORIZE, UNROLL))
            for key in (PARALLEL, VECTORIZE, UNROLL):
                if key in ann:
                    sch.unannotate(root, key)
            lanes = ctx.vector_lanes("float32") if ctx is not None else 8
            for nest_head in self._nest_heads(sch, func_name):
                self._rewrite_nest(sch, func_name, nest_head, max_par, max_vec, max_unroll, lanes)

    @staticmethod
    def _nest_heads(sch, func_name) -> list[str]:
        """One block name per loop nest under the root (the first block of each outermost loop)."""
        index = sch._index(func_name)
        heads, seen = [], set()
        for realize in block_realizes_under(sch.mod[func_name].body.block.body):
            loops = index.loops_of(realize)
            key = id(loops[0]) if loops else id(realize)
            if key not in seen:
                seen.add(key)
                heads.append(realize.block.name_hint)
        return heads

    # -- per nest ---------------------------------------------------------------------------------
    def _rewrite_nest(self, sch, func_name, head_name, max_par, max_vec, max_unroll, lanes) -> None:
        index = sch._index(func_name)
        head = index.block(head_name)
        top = index.loops_of(head)
        if not top:
            return
        outer = top[0]
        realizes = nest_blocks(outer)
        names = [r.block.name_hint for r in realizes]
        if max_par > 0:
            kinds: dict[int, set] = {}
            for r in realizes:
                loop_var_kinds(r, kinds)
            self._parallel(sch, func_name, head_name, top, kinds, max_par)
        for name in names:
            index = sch._index(func_name)
            realize = index.block(name)
            if realize is None or not (is_leaf(realize.block) or AUTO_TENSORIZE in realize.block.annotations):
                continue
            tensorized = under_annotated(index, realize, AUTO_TENSORIZE)
            if max_vec > 0 and not tensorized and is_leaf(realize.block):
                self._vectorize(sch, func_name, name, max_vec, lanes)
            if max_unroll > 0 and (not tensorized or AUTO_TENSORIZE in realize.block.annotations):
                self._unroll(sch, func_name, name, max_unroll)

    @staticmethod
    def _parallel(sch, func_name, head_name, top, kinds, max_par) -> None:
        chosen, product = 0, 1
        for i, loop in enumerate(top):
            if loop.kind != ForKind.SERIAL or kinds.get(id(loop.loop_var), {"S"}) - {"S"}:
                break
            # TVM's rule: the loop that crosses the limit is fused in too, then fusing stops (else a nest
            # whose first loop alone exceeds the limit, a 112-row conv, would get no parallel loop at all)
            chosen, product = chosen + 1, product * int(loop.extent)
            if product > max_par or not isinstance(loop.body, For):
                break  # past the limit, or the next loop is not the only child
        if chosen == 0 or product == 1:
            return
        loops = sch.get_loops(sch.get_block(head_name, func_name))[:chosen]
        sch.parallel(sch.fuse(*loops) if len(loops) > 1 else loops[0])

    @staticmethod
    def _vectorize(sch, func_name, name, max_vec, lanes) -> None:
        index = sch._index(func_name)
        realize = index.block(name)
        loops = index.loops_of(realize)
        kinds = loop_var_kinds(realize)
        take, product = 0, 1
        child = realize
        for loop in reversed(loops):
            if loop.body is not child or loop.kind != ForKind.SERIAL or kinds.get(id(loop.loop_var), set()) != {"S"}:
                break
            extent = int(loop.extent)
            if product * extent > max_vec or (take and product > 1):
                break  # only unit loops are fused onto the innermost one (a fused 2-D tile would gather)
            take, product, child = take + 1, product * extent, loop
        if take == 0 or product < 2:
            return
        handles = sch.get_loops(sch.get_block(name, func_name))[-take:]
        sch.vectorize(sch.fuse(*handles) if take > 1 else handles[0])

    @staticmethod
    def _unroll(sch, func_name, name, max_unroll) -> None:
        index = sch._index(func_name)
        realize = index.block(name)
        loops = index.loops_of(realize)
        chosen, steps, child = [], 1, realize
        # Explicit unrolling copies the body: hundreds of copies give LLVM one huge basic block whose
        # SLP vectorizer and scheduler take seconds to minutes (one 512-step scalar candidate did not
        # finish in 5 minutes; 512-step vector bodies made conv2d builds ~3 s each).
        cap = UNROLL_CAP if loops and loops[-1].kind == ForKind.VECTORIZED else SCALAR_UNROLL_CAP
        max_unroll = min(max_unroll, cap)
        for pos in range(len(loops) - 1, -1, -1):
            loop = loops[pos]
            if loop.body is not child:
                break
            child = loop
            if loop.kind == ForKind.VECTORIZED:
                continue
            if loop.kind == ForKind.UNROLLED:
                steps *= int(loop.extent)
                continue
            if loop.kind != ForKind.SERIAL:
                break
            extent = int(loop.extent)
            if steps * extent > max_unroll:
                break
            steps *= extent
            if extent > 1:
                chosen.append(pos)
        if not chosen:
            return
        handles = sch.get_loops(sch.get_block(name, func_name))
        for pos in chosen:
            sch.unroll(handles[pos])
