"""The iteration domains of a block moved by ``compute_at``/``reverse_compute_at`` (TVM's
``CalculateBlockVarDomain``).

The moved block *provides* regions (its writes for ``compute_at``, its reads for
``reverse_compute_at``) and the blocks under the target loop *require* regions of the same buffers.
For each block iterator this module finds a domain ``dom`` whose instances cover the required
region, and a ``bound`` (from the buffer shape and the iterator's own domain) that the new loops may
overshoot; where the domain is not provably inside the bound, the caller adds a predicate.

Two ways to solve a buffer, as TVM:

- affine: the provided indices are single points forming a bijective iterator map of the block
  iterators (``B[vi // 16, vi % 16]``); the corners of the required region map back through the
  inverse map;
- dimension-wise: each provided index is matched alone: ``v``, ``v * c`` (also a range
  ``v * c : v * c + c``), ``x // c`` and ``x % c`` of those, and (ours) ``v + c`` and ``c - v``.
"""
from __future__ import annotations

from ...arith.int_set import NEG_INF, POS_INF, IntervalSet
from ...arith.iter_map import IterMapError, detect_iter_map
from ...arith.iter_map_inverse import inverse_affine_iter_map
from ...ir import expr as E
from ...ir.functor import collect_vars
from ...ir.op import max as op_max
from ...ir.op import min as op_min


class DomainError(Exception):
    """A provided index the solver cannot match (TVM: "BufferRegion pattern match failed")."""


# -- interval helpers -------------------------------------------------------------------------------
def _is_inf(x) -> bool:
    return x is POS_INF or x is NEG_INF


def _pick(x, y, ana, take_min: bool):
    """min/max of two interval ends, choosing one end when provable; open ends win a union."""
    if take_min and (x is NEG_INF or y is NEG_INF):
        return NEG_INF
    if not take_min and (x is POS_INF or y is POS_INF):
        return POS_INF
    if _is_inf(x):
        return y
    if _is_inf(y):
        return x
    if ana.can_prove(E.LE(x, y) if take_min else E.GE(x, y)):
        return x
    if ana.can_prove(E.LE(y, x) if take_min else E.GE(y, x)):
        return y
    return ana.simplify(op_min(x, y) if take_min else op_max(x, y))


def _set_union(a: IntervalSet | None, b: IntervalSet | None, ana) -> IntervalSet | None:
    """The hull of two intervals; None is the empty set."""
    if a is None:
        return b
    if b is None:
        return a
    return IntervalSet(_pick(a.min_value, b.min_value, ana, True), _pick(a.max_value, b.max_value, ana, False))


def _set_intersect(a: IntervalSet, b: IntervalSet, ana) -> IntervalSet:
    """The intersection of two intervals (open ends give way to finite ones)."""
    lo = a.min_value if b.min_value is NEG_INF else b.min_value if a.min_value is NEG_INF else _pick(
        a.min_value, b.min_value, ana, False)
    hi = a.max_value if b.max_value is POS_INF else b.max_value if a.max_value is POS_INF else _pick(
        a.max_value, b.max_value, ana, True)
    return IntervalSet(lo, hi)


def region_sets(ranges) -> list[IntervalSet]:
    """``[min, min + extent - 1]`` per axis of a region given as Ranges.

    Parameters
    ----------
    ranges : list of Range
        The region.

    Returns
    -------
    list of IntervalSet
        One interval per axis.
    """
    out = []
    for r in ranges:
        one = isinstance(r.extent, E.IntImm) and r.extent.value == 1
        out.append(IntervalSet(r.min, r.min if one else E.sub(E.add(r.min, r.extent), 1)))
    return out


def nd_union(a: list[IntervalSet] | None, b: list[IntervalSet], ana) -> list[IntervalSet]:
    """The axis-by-axis hull of two regions.

    Parameters
    ----------
    a : list of IntervalSet or None
        One region (None: nothing yet).
    b : list of IntervalSet
        Another.
    ana : Analyzer
        Picks the ends.

    Returns
    -------
    list of IntervalSet
        The hull.
    """
    if a is None:
        return b
    return [_set_union(x, y, ana) for x, y in zip(a, b)]


# -- the domain of one block iterator ---------------------------------------------------------------
class VarDomain:
    """TVM's ``BlockVarDomainInfo``: instances ``dom`` to run, clipped by predicates to ``bound``
    (None: nothing known yet / no clipping)."""

    __slots__ = ("dom", "bound")

    def __init__(self, dom: IntervalSet | None = None, bound: IntervalSet | None = None):
        self.dom, self.bound = dom, bound

    def union(self, other: "VarDomain", ana) -> None:
        """Relaxed union: ``(d0 ^ b0) v (d1 ^ b1)`` becomes ``(d0 v d1) ^ (b0 v b1)``.

        Parameters
        ----------
        other : VarDomain
            The domain to merge in.
        ana : Analyzer
            Picks the ends.
        """
        self.dom = _set_union(self.dom, other.dom, ana)
        self.bound = _set_union(self.bound, other.bound, ana)

    def simplify(self, ana) -> None:
        """Simplify the ends; drop the bound when the domain is inside it, or take the bound (or a
        constant intersection) as the domain when that is tighter.

        Parameters
        ----------
        ana : Analyzer
            Simplifies and proves.
        """
        def simp(s: IntervalSet) -> IntervalSet:
            return IntervalSet(*(x if _is_inf(x) else ana.simplify(x) for x in (s.min_value, s.max_value)))

        if self.dom is None:
            if self.bound is not None and self.bound.has_lower_bound() and self.bound.has_upper_bound():
                self.dom, self.bound = simp(self.bound), None
            return
        self.dom = simp(self.dom)
        if self.bound is None:
            return
        self.bound = simp(self.bound)
        meet = simp(_set_intersect(self.dom, self.bound, ana))
        if _same(self.dom.min_value, meet.min_value, ana) and _same(self.dom.max_value, meet.max_value, ana):
            self.bound = None
        elif _same(self.bound.min_value, meet.min_value, ana) and _same(self.bound.max_value, meet.max_value, ana):
            self.dom, self.bound = self.bound, None
        elif isinstance(meet.min_value, E.IntImm) and isinstance(meet.max_value, E.IntImm):
            self.dom, self.bound = meet, None


def _same(x, y, ana) -> bool:
    if _is_inf(x) or _is_inf(y):
        return x is y
    return ana.can_prove_equal(x, y)


# -- solving ----------------------------------------------------------------------------------------
def block_var_domains(iter_vars, provided: dict, required: dict, buffers: dict, ana,
                      solved: set | None = None) -> list[VarDomain]:
    """The domain of each block iterator covering the required regions (TVM's
    ``CalculateBlockVarDomain``).

    Parameters
    ----------
    iter_vars : list of IterVar
        The moved block's iterators.
    provided : dict
        ``id(buffer) -> list of IntervalSet``: what one instance of the block provides.
    required : dict
        ``id(buffer) -> list of IntervalSet``: what the other blocks need per iteration of the loop.
    buffers : dict
        ``id(buffer) -> Buffer``.
    ana : Analyzer
        Knows the bounds of the loops above the target loop (and the target loop).
    solved : set, optional
        Receives the iterators some provided index constrains.

    Returns
    -------
    list of VarDomain
        One per iterator, simplified, with a domain.

    Raises
    ------
    DomainError
        When a provided index matches none of the solvable forms.
    """
    doms = {iv.var: VarDomain() for iv in iter_vars}
    solved = set() if solved is None else solved
    for key, prov in provided.items():
        req = required.get(key)
        if req is None:
            continue
        buf = buffers[key]
        if not _solve_affine(buf, iter_vars, prov, req, ana, doms, solved):
            _solve_dimwise(buf, prov, req, ana, doms, solved)
    out = []
    for iv in iter_vars:
        info = doms[iv.var]
        own = IntervalSet(iv.dom.min, ana.simplify(E.sub(E.add(iv.dom.min, iv.dom.extent), 1)))
        info.bound = own if info.bound is None else _set_intersect(info.bound, own, ana)
        info.simplify(ana)
        out.append(info)
    return out


def _dim_max(buf, axis: int, ana):
    return ana.simplify(op_max(E.sub(buf.shape[axis], 1), 0))


def _solve_affine(buf, iter_vars, prov, req, ana, doms, solved: set) -> bool:
    """Invert a bijective map of single-point provided indices; False when it does not apply."""
    if not all(ana.can_prove_equal(s.min_value, s.max_value) for s in prov):
        return False
    if any(not (s.has_lower_bound() and s.has_upper_bound()) for s in req):
        return False
    res = detect_iter_map([s.min_value for s in prov], {iv.var: iv.dom for iv in iter_vars}, True, "bijective",
                          simplify_trivial_iterators=False, analyzer=ana)
    if res.errors or not res.indices:
        return False
    try:
        lo = inverse_affine_iter_map(res.indices, [s.min_value for s in req])
        hi = inverse_affine_iter_map(res.indices, [s.max_value for s in req])
        b_hi = inverse_affine_iter_map(res.indices, [_dim_max(buf, a, ana) for a in range(len(prov))])
        b_lo = inverse_affine_iter_map(res.indices, [E.make_const(s.dtype, 0) for s in buf.shape])
    except IterMapError:
        return False
    for var, v_lo in lo.items():
        v_hi = hi[var]
        dom = IntervalSet(ana.simplify(op_min(v_lo, v_hi)), ana.simplify(op_max(v_lo, v_hi)))
        bound = IntervalSet(ana.simplify(op_min(b_lo[var], b_hi[var])), ana.simplify(op_max(b_lo[var], b_hi[var])))
        doms[var].union(VarDomain(dom, bound), ana)
        solved.add(var)
    return True


def _solve_dimwise(buf, prov, req, ana, doms, solved: set) -> None:
    """Match each provided index alone."""
    for axis, (p, r) in enumerate(zip(prov, req)):
        if isinstance(p.min_value, E.IntImm) and ana.can_prove_equal(p.min_value, p.max_value):
            continue  # a constant index: nothing to solve
        if not any(v in doms for v in collect_vars(p.min_value)):
            continue  # no block iterator (a symbolic constant)
        var, info = _solve_dim(p, r, _dim_max(buf, axis, ana), ana, doms)
        if var in doms:
            doms[var].union(info, ana)
            solved.add(var)


def _solve_dim(prov: IntervalSet, req: IntervalSet, dim_max, ana, ivars):
    """``(iterator, VarDomain)`` for one axis (TVM's ``SolveBlockVarDomain``)."""
    p_min, p_max = ana.simplify(prov.min_value), ana.simplify(prov.max_value)
    r_min, r_max = (x if _is_inf(x) else ana.simplify(x) for x in (req.min_value, req.max_value))
    if isinstance(p_min, E.Mul):
        var, factor = (p_min.a, p_min.b) if p_min.a in ivars else (p_min.b, p_min.a)
        if var in ivars:
            dom = IntervalSet(_fdiv(r_min, factor, ana), _fdiv(r_max, factor, ana))
            return var, VarDomain(dom, IntervalSet(E.make_const(var.dtype, 0), _fdiv(dim_max, factor, ana)))
    if not ana.can_prove_equal(p_min, p_max):
        raise DomainError(f"the provided range [{p_min}, {p_max}] is not one point or an iterator times a constant")
    if isinstance(p_min, E.Var) and p_min in ivars:
        return p_min, VarDomain(IntervalSet(r_min, r_max), IntervalSet(E.make_const(p_min.dtype, 0), dim_max))
    if isinstance(p_min, E.FloorDiv) and ana.can_prove(E.GE(p_min.b, 1)):
        inner, fac = p_min.a, p_min.b
        lo = r_min if _is_inf(r_min) else E.mul(r_min, fac)
        hi = r_max if _is_inf(r_max) else ana.simplify(E.sub(E.add(E.mul(r_max, fac), fac), 1))
        if isinstance(inner, E.Var) and inner in ivars:
            bound_hi = ana.simplify(E.sub(E.add(E.mul(dim_max, fac), fac), 1))
            return inner, VarDomain(IntervalSet(lo, hi), IntervalSet(E.make_const(inner.dtype, 0), bound_hi))
        return _solve_dim(IntervalSet.single_point(inner), IntervalSet(lo, hi), dim_max, ana, ivars)
    if isinstance(p_min, E.FloorMod):
        inner = p_min.a
        if isinstance(inner, E.Var) and inner in ivars:
            return inner, VarDomain()  # x % c constrains nothing about x
        if ana.can_prove(E.GE(inner, 1)) and ana.can_prove(E.GE(p_min.b, 1)) and not _is_inf(r_min) and ana.can_prove(
                E.GE(r_min, 0)):
            return _solve_dim(IntervalSet.single_point(inner), IntervalSet(r_min, POS_INF), dim_max, ana, ivars)
    shifted = _shifted_var(p_min, ivars)
    if shifted is not None:
        return _solve_shifted(*shifted, r_min, r_max, dim_max, ana)
    raise DomainError(f"the index {p_min} is not an iterator, an iterator times a constant, a floordiv or a "
                      "floormod of those, or an iterator plus a constant")


def _fdiv(x, factor, ana):
    return x if _is_inf(x) else ana.simplify(E.floordiv(x, factor))


def _shifted_var(expr, ivars):
    """``(var, offset, sign)`` when ``expr`` is ``var + c``, ``var - c`` or ``c - var``."""
    if isinstance(expr, (E.Add, E.Sub)) and isinstance(expr.b, E.IntImm) and isinstance(expr.a, E.Var) and \
            expr.a in ivars:
        return expr.a, expr.b.value if isinstance(expr, E.Add) else -expr.b.value, 1
    if isinstance(expr, E.Sub) and isinstance(expr.a, E.IntImm) and isinstance(expr.b, E.Var) and expr.b in ivars:
        return expr.b, expr.a.value, -1
    return None


def _solve_shifted(var, offset: int, sign: int, r_min, r_max, dim_max, ana):
    """``var + offset`` (sign 1) or ``offset - var`` (sign -1) covering ``[r_min, r_max]``."""
    def back(x):
        if _is_inf(x):
            return x if sign == 1 else (NEG_INF if x is POS_INF else POS_INF)
        return ana.simplify(E.sub(x, offset) if sign == 1 else E.sub(E.make_const(var.dtype, offset), x))

    zero = E.make_const(var.dtype, 0)
    if sign == 1:
        return var, VarDomain(IntervalSet(back(r_min), back(r_max)), IntervalSet(back(zero), back(dim_max)))
    return var, VarDomain(IntervalSet(back(r_max), back(r_min)), IntervalSet(back(dim_max), back(zero)))
