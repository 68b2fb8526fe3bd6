"""``IndexMap``: a function from indices to indices, written as a Python lambda
(``tvm.tir.IndexMap``). Used by ``transform_layout`` and ``transform_block_layout``.

>>> m = IndexMap.from_func(lambda i, j: (i // 16, j // 4, i % 16, j % 4))
>>> str(m)
'lambda i, j: (i // 16, j // 4, i % 16, j % 4)'
>>> [int(x) for x in m.map_shape([64, 32])]
[4, 8, 16, 4]
"""
from __future__ import annotations

import inspect
from typing import Callable, Sequence

from ..ir import expr as E
from ..ir.functor import substitute
from ..ir.node import Node, _set
from .analyzer import Analyzer
from .iter_map import detect_iter_map


class IndexMap(Node):
    """``final_indices`` as expressions of the variables ``initial_indices``."""

    __slots__ = ("initial_indices", "final_indices", "inverse_index_map")
    _fields = ("initial_indices", "final_indices")
    _type_key = "tir.IndexMap"

    def __init__(self, initial_indices: Sequence[E.Var], final_indices: Sequence, inverse_index_map=None, span=None):
        _set(self, "initial_indices", tuple(initial_indices))
        _set(self, "final_indices", tuple(E.convert(f) for f in final_indices))
        _set(self, "inverse_index_map", inverse_index_map)
        _set(self, "span", span)

    @staticmethod
    def from_func(mapping_function: Callable, ndim: int | None = None, inverse_index_map=None,
                  index_dtype: str = "int32") -> "IndexMap":
        """The map computed by ``mapping_function`` (one parameter per index, or ``*args`` with
        ``ndim``) returning an index or a tuple/list of indices.

        Parameters
        ----------
        mapping_function : callable
            Initial indices to final indices.
        ndim : int, optional
            The number of indices of a ``*args`` function.
        inverse_index_map : IndexMap or callable, optional
            Accepted for TVM compatibility.
        index_dtype : str
            The dtype of the index variables.

        Returns
        -------
        IndexMap
            The map.

        Examples
        --------
        >>> m = tvm.tir.IndexMap.from_func(lambda i, j: (j, i // 4, i % 4))
        >>> [int(x) for x in m.map_shape([8, 3])]
        [3, 2, 4]
        >>> m = tvm.tir.IndexMap.from_func(lambda *rest, k: [*rest, k // 4, k % 4], ndim=3)
        >>> [int(x) for x in m.map_shape([2, 3, 8])]
        [2, 3, 2, 4]
        """
        params = list(inspect.signature(mapping_function).parameters.values())
        names, varargs = [], False
        kwonly = [p.name for p in params if p.kind == p.KEYWORD_ONLY]  # TVM: `*rest, k` names the last indices
        for p in params:
            if p.kind == p.VAR_POSITIONAL:
                varargs = True
            elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                names.append(p.name)
        if varargs:
            if ndim is None:
                raise ValueError("a mapping function with *args needs ndim= to know how many indices it takes")
            names += [f"i{k}" for k in range(ndim - len(names) - len(kwonly))]
        elif ndim is not None and ndim != len(names) + len(kwonly):
            raise ValueError(f"the mapping function takes {len(names)} indices but the buffer has {ndim} dimensions")
        variables = [E.Var(n, index_dtype) for n in names]
        kw_vars = {n: E.Var(n, index_dtype) for n in kwonly}
        out = mapping_function(*variables, **kw_vars)
        variables += list(kw_vars.values())
        if not isinstance(out, (list, tuple)):
            out = [out]
        inverse = None
        if inverse_index_map is not None:
            inverse = inverse_index_map if isinstance(inverse_index_map, IndexMap) else IndexMap.from_func(
                inverse_index_map, len(out), index_dtype=index_dtype)
        return IndexMap(variables, [E.convert(x) for x in out], inverse)

    # -- applying ------------------------------------------------------------------------------
    def map_indices(self, indices: Sequence, analyzer=None) -> list:
        """The final indices for ``indices`` (simplified).

        Parameters
        ----------
        indices : list of PrimExpr
            The initial indices.
        analyzer : Analyzer, optional
            Knows the variables' bounds (a fresh one when None).

        Returns
        -------
        list of PrimExpr
            The final indices.
        """
        if len(indices) != len(self.initial_indices):
            raise ValueError(f"the index map takes {len(self.initial_indices)} indices, got {len(indices)}")
        ana = analyzer or Analyzer()
        vmap = dict(zip(self.initial_indices, [E.convert(i) for i in indices]))
        return [ana.simplify(substitute(f, vmap)) for f in self.final_indices]

    def map_shape(self, shape: Sequence) -> list:
        """The shape of the transformed buffer: one past the largest value of each final index when
        the initial indices range over ``shape``.

        Parameters
        ----------
        shape : list of int or PrimExpr
            The initial shape.

        Returns
        -------
        list of PrimExpr
            The final shape.
        """
        if len(shape) != len(self.initial_indices):
            raise ValueError(f"the index map takes {len(self.initial_indices)} indices, got a shape of {len(shape)}")
        ana = Analyzer()
        for v, s in zip(self.initial_indices, shape):
            ana.bind(v, E.Range.from_min_extent(0, s))
        out = []
        for f in self.final_indices:
            b = ana.const_int_bound(f)
            if b.min_value < 0:
                raise ValueError(f"the final index {f} can be negative ({b.min_value}) over the shape {list(shape)}")
            out.append(E.IntImm(f.dtype, b.max_value + 1))
        return out

    def is_bijective_on(self, shape: Sequence) -> bool:
        """Whether the map is a bijection from ``shape`` onto its final shape.

        Parameters
        ----------
        shape : list of int or PrimExpr
            The initial shape.

        Returns
        -------
        bool
            True when bijective.
        """
        return self._iter_map(shape) is not None and _product(self.map_shape(shape)) == _product(shape)

    def _iter_map(self, shape, simplify_trivial_iterators: bool = True):
        iters = {v: E.Range.from_min_extent(0, s) for v, s in zip(self.initial_indices, shape)}
        res = detect_iter_map(list(self.final_indices), iters, check_level="bijective",
                              simplify_trivial_iterators=simplify_trivial_iterators)
        return None if res.errors else res

    def inverse(self, shape: Sequence, keep_unit_indices: bool = False) -> "IndexMap":
        """The inverse map, valid on ``shape`` (the initial shape); the map must be bijective there.

        Parameters
        ----------
        shape : list of int or PrimExpr
            The initial shape.
        keep_unit_indices : bool
            As TVM's ``IndexMap.inverse``: an index of extent 1 stays a variable of the inverse
            (``lambda j, i: (i, j)`` for ``lambda i, j: (j, i)`` on ``[1, n]``) instead of folding to 0.

        Returns
        -------
        IndexMap
            The inverse.
        """
        if self.inverse_index_map is not None:
            return self.inverse_index_map
        res = self._iter_map(shape, simplify_trivial_iterators=not keep_unit_indices)
        new_shape = self.map_shape(shape)
        if res is None or _product(new_shape) != _product(shape):
            raise ValueError(f"index map {self} is not bijective on the shape {list(shape)}, so it has no inverse")
        ys = [E.Var(f"i{k}", f.dtype) for k, f in enumerate(self.final_indices)]
        pieces: dict[int, list] = {id(v): [] for v in self.initial_indices}

        def split_sum(total, args):
            top = max(args, key=lambda s: int(s.scale))
            for split in args:
                value = E.floordiv(total, int(split.scale))
                if split is not top:
                    value = E.floormod(value, int(split.extent))
                assign(split, value)

        def assign(split, value):
            src = split.source.source
            if isinstance(src, E.Var) and id(src) in pieces:
                pieces[id(src)].append((value, int(split.lower_factor)))
            elif int(split.lower_factor) == 1 and int(split.extent) == int(split.source.extent) and src.args:
                split_sum(value, src.args)
            else:
                raise ValueError(f"index map {self} splits a fused index; its inverse is not supported")

        for y, index in zip(ys, res.indices):
            if index.args:
                split_sum(E.sub(y, index.base) if int(index.base) else y, index.args)
        ana = Analyzer()
        for y, s in zip(ys, new_shape):
            if not (keep_unit_indices and isinstance(s, E.IntImm) and s.value == 1):
                ana.bind(y, E.Range.from_min_extent(0, s))
        finals = []
        for v in self.initial_indices:
            total = E.make_const(v.dtype, 0)
            for value, lf in pieces[id(v)]:
                total = E.add(total, E.mul(value, lf))
            finals.append(ana.simplify(total))
        return IndexMap(ys, finals, self)

    def is_equivalent_to(self, other: "IndexMap") -> bool:
        """Whether both maps compute the same final indices from the same number of initial ones.

        Parameters
        ----------
        other : IndexMap
            Another map.

        Returns
        -------
        bool
            True when equivalent.
        """
        if len(self.initial_indices) != len(other.initial_indices) or len(self.final_indices) != len(other.final_indices):
            return False
        vmap = dict(zip(other.initial_indices, self.initial_indices))
        ana = Analyzer()
        return all(ana.can_prove_equal(a, substitute(b, vmap)) for a, b in zip(self.final_indices, other.final_indices))

    # -- text and serialisation ----------------------------------------------------------------
    def __str__(self) -> str:
        return self.script()  # ``lambda i, j: (...)``, printed by the registered TVMScript printer

    __repr__ = __str__

    def to_json(self) -> dict:
        """The map as JSON-ready data (for traces).

        Returns
        -------
        dict
            The data.
        """
        names = {id(v): k for k, v in enumerate(self.initial_indices)}
        return {"vars": [[v.name, v.dtype] for v in self.initial_indices],
                "final": [_expr_to_json(f, names) for f in self.final_indices]}

    @staticmethod
    def from_json(data: dict) -> "IndexMap":
        """The map written by ``to_json``.

        Parameters
        ----------
        data : dict
            ``to_json`` output.

        Returns
        -------
        IndexMap
            The map.
        """
        variables = [E.Var(n, d) for n, d in data["vars"]]
        return IndexMap(variables, [_expr_from_json(f, variables) for f in data["final"]])


def _product(shape) -> int | None:
    total = 1
    for s in shape:
        if not isinstance(s, (int, E.IntImm)):
            return None
        total *= int(s)
    return total


_OPS = {"add": E.add, "sub": E.sub, "mul": E.mul, "floordiv": E.floordiv, "floormod": E.floormod,
        "min": E.min_value_expr, "max": E.max_value_expr}
_CLASS_OPS = {E.Add: "add", E.Sub: "sub", E.Mul: "mul", E.FloorDiv: "floordiv", E.FloorMod: "floormod",
              E.Min: "min", E.Max: "max"}


def _expr_to_json(e, names):
    if isinstance(e, E.Var):
        if id(e) not in names:
            raise ValueError(f"index map uses the free variable {e.name}; only its own indices can be serialised")
        return ["var", names[id(e)]]
    if isinstance(e, E.IntImm):
        return ["int", e.dtype, e.value]
    op = _CLASS_OPS.get(type(e))
    if op is None:
        raise ValueError(f"cannot serialise {type(e).__name__} in an index map")
    return [op, _expr_to_json(e.a, names), _expr_to_json(e.b, names)]


def _expr_from_json(data, variables):
    kind = data[0]
    if kind == "var":
        return variables[data[1]]
    if kind == "int":
        return E.IntImm(data[1], data[2])
    return _OPS[kind](_expr_from_json(data[1], variables), _expr_from_json(data[2], variables))

