"""``subspace_divide``: split block bindings into an outer part (over the outer loops) and an inner
part (over ``sub_iters``), as ``blockize`` and ``tensorize`` need.

Each binding ``b`` becomes ``outer * inner_extent + inner`` with ``outer`` ranging over the outer
loops only and ``inner`` over the inner loops only.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from ..ir import expr as E
from .iter_map import IterMapError, IterMark, IterSplitExpr, IterSumExpr, detect_iter_map


class _Part:
    """``value = outer * inner_extent + inner``, each side an IterSumExpr with its extent."""

    __slots__ = ("outer", "outer_extent", "inner", "inner_extent")

    def __init__(self, outer, outer_extent, inner, inner_extent):
        self.outer, self.outer_extent, self.inner, self.inner_extent = outer, outer_extent, inner, inner_extent


def _empty(dtype):
    return IterSumExpr([], 0, dtype)


def _divide_mark(mark: IterMark, sub: set, dtype: str, memo: dict) -> _Part:
    if id(mark) in memo:
        return memo[id(mark)]
    ext = int(mark.extent)
    whole = IterSumExpr([IterSplitExpr(mark, 1, ext, 1, dtype)], 0, dtype)
    if isinstance(mark.source, E.Var):
        part = _Part(_empty(dtype), 1, whole, ext) if id(mark.source) in sub else _Part(whole, ext, _empty(dtype), 1)
    else:
        # A fused mark: its pieces (highest scale first) must be outer pieces above inner pieces.
        outer_args, inner_args, inner_ext = [], [], 1
        pieces = [(_divide_split(s, sub, dtype, memo), s) for s in mark.source.args]
        for part, s in reversed(pieces):  # lowest scale first
            if part.outer_extent == 1 and part.inner_extent == 1:
                continue
            if part.outer_extent == 1:
                if outer_args:
                    raise IterMapError("an inner iterator sits above an outer one in a fused binding")
                inner_args.extend(_rescale(part.inner, int(s.scale)))
                inner_ext *= part.inner_extent
            elif part.inner_extent == 1:
                outer_args.extend(_rescale(part.outer, int(s.scale)))
            else:
                raise IterMapError("a fused binding mixes inner and outer iterators inside one piece")
        outer_args.reverse()  # highest scale first, as printed
        inner_args.reverse()
        outer_ext = ext // inner_ext
        if outer_ext * inner_ext != ext:
            raise IterMapError("the inner iterators do not divide the fused extent")
        if inner_ext == 1:
            part = _Part(whole, ext, _empty(dtype), 1)
        elif outer_ext == 1:
            part = _Part(_empty(dtype), 1, whole, ext)
        else:
            outer_args = _rescale(IterSumExpr(outer_args, 0, dtype), 1, divide_by=inner_ext)
            part = _Part(_fuse_sum(outer_args, outer_ext, dtype), outer_ext, _fuse_sum(inner_args, inner_ext, dtype), inner_ext)
    memo[id(mark)] = part
    return part


def _fuse_sum(args, ext, dtype):
    if len(args) <= 1:
        return IterSumExpr(args, 0, dtype)
    mark = IterMark(IterSumExpr(args, 0, dtype), ext)
    return IterSumExpr([IterSplitExpr(mark, 1, ext, 1, dtype)], 0, dtype)


def _rescale(sum_expr: IterSumExpr, k: int, divide_by: int = 1) -> list:
    out = []
    for s in sum_expr.args:
        scale = int(s.scale) * k
        if scale % divide_by:
            raise IterMapError("outer scale is not a multiple of the inner extent")
        out.append(IterSplitExpr(s.source, s.lower_factor, s.extent, scale // divide_by, s.dtype))
    return out


def _divide_split(split: IterSplitExpr, sub: set, dtype: str, memo: dict) -> _Part:
    """Divide ``split`` ignoring its scale."""
    part = _divide_mark(split.source, sub, dtype, memo)
    lf, ext, total = int(split.lower_factor), int(split.extent), int(split.source.extent)
    if lf == 1 and ext == total:
        return part
    inner_ext = part.inner_extent
    if inner_ext == 1:
        whole = IterSumExpr([IterSplitExpr(split.source, lf, ext, 1, dtype)], 0, dtype)
        return _Part(whole, ext, _empty(dtype), 1)
    if part.outer_extent == 1:
        whole = IterSumExpr([IterSplitExpr(split.source, lf, ext, 1, dtype)], 0, dtype)
        return _Part(_empty(dtype), 1, whole, ext)
    if lf % inner_ext == 0:  # entirely within the outer digits
        outer_mark = IterMark(part.outer, part.outer_extent)
        return _Part(IterSumExpr([IterSplitExpr(outer_mark, lf // inner_ext, ext, 1, dtype)], 0, dtype), ext, _empty(dtype), 1)
    if inner_ext % (lf * ext) == 0:  # entirely within the inner digits
        inner_mark = IterMark(part.inner, inner_ext)
        return _Part(_empty(dtype), 1, IterSumExpr([IterSplitExpr(inner_mark, lf, ext, 1, dtype)], 0, dtype), ext)
    if inner_ext % lf == 0 and (lf * ext) % inner_ext == 0:  # low digits inner, high digits outer
        in_ext, out_ext = inner_ext // lf, lf * ext // inner_ext
        inner_mark, outer_mark = IterMark(part.inner, inner_ext), IterMark(part.outer, part.outer_extent)
        return _Part(IterSumExpr([IterSplitExpr(outer_mark, 1, out_ext, 1, dtype)], 0, dtype), out_ext,
                     IterSumExpr([IterSplitExpr(inner_mark, lf, in_ext, 1, dtype)], 0, dtype), in_ext)
    raise IterMapError("a split straddles the boundary between inner and outer iterators")


def subspace_divide(bindings: Sequence, input_iters: Mapping, sub_iters: Sequence, predicate=True,
                    check_level: str = "surjective", simplify_trivial_iterators: bool = True) -> list:
    """Divide each binding into ``[IterMark(outer, outer_extent), IterMark(inner, inner_extent)]``.

    The last entry holds the predicates: ``[IterMark(None, outer_predicate), IterMark(None, inner_predicate)]``.
    Returns ``[]`` when the bindings are not affine or do not divide.

    Parameters
    ----------
    bindings : list of PrimExpr
        The block bindings.
    input_iters : dict of Var to Range
        The iterators and their ranges.
    sub_iters : list of Var
        The inner iterators.
    predicate : PrimExpr or bool
        A condition the iterators satisfy.
    check_level : str
        ``"surjective"`` or ``"bijective"``.
    simplify_trivial_iterators : bool
        Replace iterators of extent 1 by their min.

    Returns
    -------
    list of list of IterMark
        One ``[outer, inner]`` pair per binding, then the predicates; empty when not divisible.

    Examples
    --------
    >>> from tensorize.ir.expr import Var, Range
    >>> io, ii = Var("io"), Var("ii")
    >>> res = subspace_divide([io * 4 + ii], {io: Range(0, 8), ii: Range(0, 4)}, [ii])
    >>> [int(m.extent) for m in res[0]]
    [8, 4]
    """
    res = detect_iter_map(bindings, input_iters, predicate, check_level, simplify_trivial_iterators)
    if res.errors:
        return []
    sub = {id(v) for v in sub_iters}
    memo: dict = {}
    out = []
    try:
        for index in res.indices:
            dtype = index.dtype
            base = int(index.base)
            if not index.args:
                out.append([IterMark(_empty(dtype), 1), IterMark(IterSumExpr([], base, dtype), 1)])
                continue
            split = index.args[0]
            part = _divide_split(split, sub, dtype, memo)
            scale = int(split.scale)
            if part.inner_extent == 1:
                outer = IterSumExpr(_rescale(part.outer, scale), base, dtype)
                out.append([IterMark(outer, part.outer_extent), IterMark(_empty(dtype), 1)])
            elif part.outer_extent == 1:
                inner = IterSumExpr(_rescale(part.inner, scale), base, dtype)
                out.append([IterMark(_empty(dtype), 1), IterMark(inner, part.inner_extent)])
            else:
                if scale != 1 or base != 0:
                    raise IterMapError("a binding mixing inner and outer iterators must have unit scale and no offset")
                out.append([IterMark(part.outer, part.outer_extent), IterMark(part.inner, part.inner_extent)])
        out.append(_divide_predicate(predicate, sub))
    except IterMapError:
        return []
    return out


def _divide_predicate(predicate, sub: set) -> list:
    from ..ir.functor import collect_vars

    conds: list = []
    stack = [E.convert(predicate)]
    while stack:
        c = stack.pop()
        if type(c) is E.And:
            stack += [c.a, c.b]
        elif not (isinstance(c, E.IntImm) and c.value):
            conds.append(c)
    outer, inner = E.IntImm("bool", True), E.IntImm("bool", True)
    for c in conds:
        kinds = {id(v) in sub for v in collect_vars(c)}
        if kinds == {True}:
            inner = E.logical_and(inner, c)
        elif kinds <= {False}:
            outer = E.logical_and(outer, c)
        else:
            raise IterMapError("a predicate mixes inner and outer iterators")
    return [IterMark(None, outer), IterMark(None, inner)]
