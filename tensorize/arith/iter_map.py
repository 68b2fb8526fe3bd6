"""Affine iterator maps (``tvm.arith.detect_iter_map`` and friends).

An index expression over loop iterators is described as an ``IterSumExpr``: a sum of
``IterSplitExpr(source, lower_factor, extent, scale)`` terms plus a constant ``base``, where a split
stands for ``floormod(floordiv(source, lower_factor), extent) * scale`` and ``source`` is an
``IterMark`` (an input iterator, or a fused sum of splits, with its extent).

>>> from tensorize.ir.expr import Var, Range
>>> i, j = Var("i"), Var("j")
>>> res = detect_iter_map([i * 4 + j], {i: Range(0, 8), j: Range(0, 4)})
>>> res.errors, int(res.indices[0].args[0].extent)
([], 32)

Extents, factors, scales and bases must be constants; symbolic shapes are reported as errors.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from ..ir import expr as E
from .analyzer import Analyzer


class IterMark:
    """An iterator to be split: ``source`` (a ``Var`` or an ``IterSumExpr`` of fused splits) ranging
    over ``[0, extent)``."""

    __slots__ = ("source", "extent")

    def __init__(self, source, extent):
        self.source, self.extent = source, E.convert(extent)

    def __repr__(self):
        return f"IterMark({_show(self.source)}, extent={int(self.extent)})"


class IterSplitExpr:
    """``floormod(floordiv(source, lower_factor), extent) * scale`` for an ``IterMark`` source."""

    __slots__ = ("source", "lower_factor", "extent", "scale", "dtype")

    def __init__(self, source: IterMark, lower_factor=1, extent=None, scale=1, dtype: str = "int32"):
        self.source = source
        self.lower_factor = E.IntImm(dtype, int(lower_factor))
        self.extent = E.IntImm(dtype, int(source.extent if extent is None else extent))
        self.scale = E.IntImm(dtype, int(scale))
        self.dtype = dtype

    def _parts(self):
        return id(self.source), int(self.lower_factor), int(self.extent)

    def __repr__(self):
        return f"IterSplit({_show(self.source.source)}, lower_factor={int(self.lower_factor)}, extent={int(self.extent)}, scale={int(self.scale)})"


class IterSumExpr:
    """``sum(args) + base``: the affine form of one index."""

    __slots__ = ("args", "base", "dtype")

    def __init__(self, args: Sequence[IterSplitExpr], base=0, dtype: str = "int32"):
        self.args = list(args)
        self.base = E.IntImm(dtype, int(base)) if not isinstance(base, E.PrimExpr) else base
        self.dtype = dtype

    def __repr__(self):
        return "IterSum(" + " + ".join([repr(a) for a in self.args] + [str(int(self.base))]) + ")"


def _show(src):
    return src.name if isinstance(src, E.Var) else repr(src)


class IterMapResult:
    """What ``detect_iter_map`` found: ``indices`` (one ``IterSumExpr`` per index) or, on failure,
    no indices and the reasons in ``errors``."""

    __slots__ = ("indices", "errors", "padding_predicate")

    def __init__(self, indices, errors, padding_predicate=None):
        self.indices, self.errors = indices, errors
        self.padding_predicate = padding_predicate if padding_predicate is not None else E.IntImm("bool", False)

    def __len__(self):
        return len(self.indices)

    def __getitem__(self, i):
        return self.indices[i]


class IterMapError(Exception):
    """Why an index is not an affine iterator map (raised internally, reported in ``errors``)."""


class _Rewriter:
    def __init__(self, input_iters: Mapping, simplify_trivial: bool, analyzer: Analyzer):
        self.ana = analyzer
        self.var_marks: dict = {}   # Var -> (IterMark, min)
        self.consts: dict = {}      # Var -> value (trivial iterators)
        self.fused: dict = {}       # key of a fused sum -> IterMark
        for var, dom in input_iters.items():
            lo, ext = analyzer.simplify(dom.min), analyzer.simplify(dom.extent)
            if not isinstance(lo, E.IntImm) or not isinstance(ext, E.IntImm):
                raise IterMapError(f"iterator {var.name} has a symbolic domain; only constant domains are supported")
            if ext.value == 1 and simplify_trivial:
                self.consts[var] = lo.value
            elif ext.value < 1:
                raise IterMapError(f"iterator {var.name} has an empty domain (extent {ext.value})")
            else:
                self.var_marks[var] = (IterMark(var, ext.value), lo.value)

    # -- expression -> (splits, base) where splits is a list of (IterSplitExpr with scale) ----------
    def rewrite(self, e) -> tuple[list, int]:
        t = type(e)
        if t is E.IntImm:
            return [], e.value
        if isinstance(e, E.Var):
            if e in self.consts:
                return [], self.consts[e]
            if e in self.var_marks:
                mark, lo = self.var_marks[e]
                return [IterSplitExpr(mark, 1, mark.extent, 1, e.dtype)], lo
            raise IterMapError(f"{e.name} is not an input iterator; only iterators and constants may appear")
        if t is E.Add or t is E.Sub:
            a, ba = self.rewrite(e.a)
            b, bb = self.rewrite(e.b)
            sign = 1 if t is E.Add else -1
            return _merge(a, [_scaled(s, sign) for s in b]), ba + sign * bb
        if t is E.Mul:
            a, ba = self.rewrite(e.a)
            b, bb = self.rewrite(e.b)
            if a and b:
                raise IterMapError("product of two iterator expressions is not affine")
            if b:
                a, ba, b, bb = b, bb, a, ba
            return [s2 for s2 in (_scaled(s, bb) for s in a) if int(s2.scale) != 0], ba * bb
        if t is E.FloorDiv or t is E.FloorMod:
            if not isinstance(e.b, E.IntImm) or e.b.value <= 0:
                raise IterMapError(f"{t.__name__} by a non-constant or non-positive divisor is not affine")
            return self.divide(self.rewrite(e.a), e.b.value, t is E.FloorDiv)
        raise IterMapError(f"{t.__name__} is not an affine iterator expression")

    def divide(self, sum_, c: int, is_div: bool):
        splits, base = sum_
        if not splits:
            return [], (base // c if is_div else base % c)
        split, scale = self.fuse(splits)
        if scale % c == 0:  # (split * k * c + base) / c
            if is_div:
                return [_scaled(split, scale // c)], base // c
            return [], base % c
        if c % scale != 0 or base % scale != 0:
            raise IterMapError(f"cannot divide an iterator of scale {scale} by {c}")
        c2, b2 = c // scale, base // scale
        if b2 % c2 != 0:
            raise IterMapError(f"offset {base} is not a multiple of the divisor {c}; the split is not affine")
        ext = int(split.extent)
        lf = int(split.lower_factor)
        if lf == 1 and ext == int(split.source.extent) and isinstance(split.source.source, IterSumExpr):
            pieces = self._pieces_at(split.source.source, c2, is_div)
            if pieces is not None:
                return [_scaled(p, scale) for p in pieces], (b2 // c2 if is_div else 0)
        if ext % c2 != 0:
            raise IterMapError(f"extent {ext} is not divisible by {c2}; the split does not partition the iterator")
        if is_div:
            if ext == c2:  # floordiv(i, 4) with i < 4: always 0, no iterator left (not a piece of extent 1)
                return [], b2 // c2
            return [IterSplitExpr(split.source, lf * c2, ext // c2, 1, split.dtype)], b2 // c2
        return [IterSplitExpr(split.source, lf, c2, scale, split.dtype)], 0

    @staticmethod
    def _pieces_at(fused: IterSumExpr, c: int, is_div: bool):
        """The pieces of a fused sum above (``is_div``) or below a boundary at ``c``, or None when
        ``c`` does not fall between two pieces: floordiv(i * 4 + j, 4) -> i when j has extent 4."""
        product = 1
        ascending = list(reversed(fused.args))
        for n, piece in enumerate(ascending):
            if product == c:
                if is_div:
                    return [_scaled(p, int(p.scale) // c, absolute=True) for p in reversed(ascending[n:])]
                return list(reversed(ascending[:n]))
            if product > c:
                return None
            product *= int(piece.extent)
        return None

    def fuse(self, splits) -> tuple[IterSplitExpr, int]:
        """One split (scale 1) and a scale equal to the sum of ``splits``, or IterMapError."""
        if len(splits) == 1:
            s = splits[0]
            if int(s.scale) <= 0:
                raise IterMapError("negative iterator scale: the map is not increasing")
            return _scaled(s, 1, absolute=True), int(s.scale)
        if any(int(s.scale) <= 0 for s in splits):
            raise IterMapError("negative iterator scale in a fused sum")
        base_scale = min(int(s.scale) for s in splits)
        chain, expected, rest = [], base_scale, list(splits)
        while rest:
            matches = [s for s in rest if int(s.scale) == expected]
            if len(matches) != 1:
                if matches:
                    raise IterMapError(f"two iterators share scale {expected}: they overlap")
                raise IterMapError(f"iterators do not fuse: nothing has scale {expected} (scales {[int(s.scale) for s in splits]})")
            chain.append(matches[0])
            rest.remove(matches[0])
            expected *= int(matches[0].extent)
        total = expected // base_scale
        dtype = chain[0].dtype
        # Consecutive pieces of one mark re-form a single split of it: floordiv(i, 4) * 4 + floormod(i, 4) -> i.
        if all(s.source is chain[0].source for s in chain) and all(
                int(a.lower_factor) * int(a.extent) == int(b.lower_factor) for a, b in zip(chain, chain[1:])):
            return IterSplitExpr(chain[0].source, chain[0].lower_factor, total, 1, dtype), base_scale
        key = tuple((id(s.source), int(s.lower_factor), int(s.extent), int(s.scale) // base_scale) for s in chain)
        mark = self.fused.get(key)
        if mark is None:
            normalized = [_scaled(s, int(s.scale) // base_scale, absolute=True) for s in reversed(chain)]
            mark = self.fused[key] = IterMark(IterSumExpr(normalized, 0, dtype), total)
        return IterSplitExpr(mark, 1, mark.extent, 1, dtype), base_scale

    def apply_predicate(self, predicate) -> None:
        """Use ``fused < c`` conjuncts to shrink the extent of the fused iterator they bound."""
        predicate = self.ana.simplify(predicate)
        if isinstance(predicate, E.IntImm):
            if not predicate.value:
                raise IterMapError("the predicate is always false")
            return
        conds = []
        _conjuncts(predicate, conds)
        for cond in conds:
            if type(cond) not in (E.LT, E.LE) or not isinstance(cond.b, E.IntImm):
                raise IterMapError("only predicates of the form `fused_iterators < constant` are supported")
            limit = cond.b.value + (1 if type(cond) is E.LE else 0)
            splits, base = self.rewrite(cond.a)
            if not splits:
                continue
            split, scale = self.fuse(splits)
            if scale != 1 or int(split.lower_factor) != 1 or int(split.extent) != int(split.source.extent):
                raise IterMapError("a predicate must bound a whole fused iterator with unit scale")
            new_extent = limit - base
            if new_extent < int(split.source.extent):
                if new_extent <= 0:
                    raise IterMapError("the predicate leaves no iterations")
                split.source.extent = E.IntImm(split.dtype, new_extent)


def _conjuncts(cond, out):
    if type(cond) is E.And:
        _conjuncts(cond.a, out)
        _conjuncts(cond.b, out)
    else:
        out.append(cond)


def _scaled(s: IterSplitExpr, k: int, absolute: bool = False) -> IterSplitExpr:
    scale = k if absolute else int(s.scale) * k
    return IterSplitExpr(s.source, s.lower_factor, s.extent, scale, s.dtype)


def _merge(a: list, b: list) -> list:
    """Concatenate split lists, adding the scales of identical splits."""
    out = list(a)
    for s in b:
        for n, t in enumerate(out):
            if t._parts() == s._parts():
                scale = int(t.scale) + int(s.scale)
                out[n] = _scaled(t, scale, absolute=True)
                break
        else:
            out.append(s)
    return [s for s in out if int(s.scale) != 0]


def _check_mapping(indices: list, var_marks: dict, bijective: bool) -> None:
    """Each mark's pieces must not overlap; a bijective map also covers each mark and every iterator."""
    uses: dict[int, tuple] = {}
    seen_fused: set[int] = set()
    stack = [s for index in indices for s in index.args]
    while stack:
        s = stack.pop()
        mark = s.source
        uses.setdefault(id(mark), (mark, []))[1].append((int(s.lower_factor), int(s.extent)))
        if isinstance(mark.source, IterSumExpr) and id(mark) not in seen_fused:
            seen_fused.add(id(mark))
            stack.extend(mark.source.args)
    for mark, pieces in uses.values():
        covered = 1
        for lf, ext in sorted(pieces):
            if lf < covered or lf % covered != 0:
                raise IterMapError(f"iterator {_show(mark.source)} is used by overlapping pieces {sorted(pieces)}")
            if bijective and lf != covered:
                raise IterMapError(f"iterator {_show(mark.source)} is not fully covered by {sorted(pieces)}")
            covered = lf * ext
        if bijective and covered != int(mark.extent):
            raise IterMapError(f"iterator {_show(mark.source)} (extent {int(mark.extent)}) is only covered up to {covered}")
    if bijective:
        for var, (mark, _) in var_marks.items():
            if id(mark) not in uses:
                raise IterMapError(f"iterator {var.name} is not used: the map is not bijective")


def detect_iter_map(indices: Sequence, input_iters: Mapping, predicate=True, check_level: str = "surjective",
                    simplify_trivial_iterators: bool = True, analyzer: Analyzer | None = None) -> IterMapResult:
    """Describe ``indices`` as affine maps of ``input_iters`` (``{Var: Range}``).

    ``check_level="bijective"`` also requires that every iterator is used and the map is
    one-to-one; ``"surjective"`` only requires that independent pieces do not overlap. On failure
    the result has no indices and ``errors`` says why.

    Parameters
    ----------
    indices : list of PrimExpr
        The indices.
    input_iters : dict of Var to Range
        The iterators and their ranges.
    predicate : PrimExpr or bool
        A condition the iterators satisfy.
    check_level : str
        ``"surjective"`` or ``"bijective"``.
    simplify_trivial_iterators : bool
        Replace iterators of extent 1 by their min.
    analyzer : Analyzer, optional
        Knows the variables' bounds (a fresh one when None).

    Returns
    -------
    IterMapResult
        The maps, or the errors.

    Examples
    --------
    >>> from tensorize.ir.expr import Var, Range
    >>> i = Var("i")
    >>> detect_iter_map([i // 4, i % 4], {i: Range(0, 16)}, check_level="bijective").errors
    []
    >>> detect_iter_map([i % 4, i % 8], {i: Range(0, 16)}).errors[0][:8]
    'iterator'
    """
    if check_level not in ("surjective", "bijective", "injective", "no_check"):
        raise ValueError(f"unknown check_level {check_level!r}; use 'surjective' or 'bijective'")
    analyzer = analyzer or Analyzer()
    try:
        rw = _Rewriter(input_iters, simplify_trivial_iterators, analyzer)
        rw.apply_predicate(E.convert(predicate))
        results = []
        for index in indices:
            index = E.convert(index)
            splits, base = rw.rewrite(index)
            if splits:
                split, scale = rw.fuse(splits)
                splits = [_scaled(split, scale, absolute=True)]
            results.append(IterSumExpr(splits, base, index.dtype))
        if check_level != "no_check":
            _check_mapping(results, rw.var_marks, check_level == "bijective")
    except IterMapError as err:
        return IterMapResult([], [str(err)])
    return IterMapResult(results, [])


def normalize_iter_map_to_expr(expr):
    """The plain expression an ``IterSumExpr``/``IterSplitExpr``/``IterMark`` stands for.

    Parameters
    ----------
    expr : IterSumExpr, IterSplitExpr or IterMark
        The iterator expression.

    Returns
    -------
    PrimExpr
        The expression.
    """
    if isinstance(expr, IterMark):
        return _source_expr(expr)
    if isinstance(expr, IterSplitExpr):
        src = _source_expr(expr.source)
        lf, ext, scale = int(expr.lower_factor), int(expr.extent), int(expr.scale)
        value = src if lf == 1 else E.floordiv(src, lf)
        if lf * ext < int(expr.source.extent):  # the piece stops below the top of its source
            value = E.floormod(value, ext)
        return E.mul(value, scale)
    if isinstance(expr, IterSumExpr):
        value = None
        for arg in expr.args:
            term = normalize_iter_map_to_expr(arg)
            value = term if value is None else E.add(value, term)
        if value is None:
            return expr.base
        return E.add(value, expr.base)
    return expr


def _source_expr(mark: IterMark):
    return mark.source if isinstance(mark.source, E.Var) else normalize_iter_map_to_expr(mark.source)


def iter_map_simplify(indices: Sequence, input_iters: Mapping, predicate=True, check_level: str = "surjective",
                      simplify_trivial_iterators: bool = True) -> list:
    """``indices`` rewritten through their iterator map (``floordiv(i*4 + j, 4)`` -> ``i``); indices
    that are not an affine map come back unchanged.

    Parameters
    ----------
    indices : list of PrimExpr
        The indices.
    input_iters : dict of Var to Range
        The iterators and their ranges.
    predicate : PrimExpr or bool
        A condition the iterators satisfy.
    check_level : str
        ``"surjective"`` or ``"bijective"``.
    simplify_trivial_iterators : bool
        Replace iterators of extent 1 by their min.

    Returns
    -------
    list of PrimExpr
        The indices.

    Examples
    --------
    >>> i, j = tvm.tir.Var("i", "int32"), tvm.tir.Var("j", "int32")
    >>> dom = {i: tvm.ir.Range(0, 8), j: tvm.ir.Range(0, 4)}
    >>> tvm.arith.iter_map_simplify([(i * 4 + j) // 4], dom)
    [i]
    """
    res = detect_iter_map(indices, input_iters, predicate, check_level, simplify_trivial_iterators)
    if res.errors:
        return [E.convert(i) for i in indices]
    ana = Analyzer()
    for var, dom in input_iters.items():
        ana.bind(var, dom)
    return [ana.simplify(normalize_iter_map_to_expr(i)) for i in res.indices]
