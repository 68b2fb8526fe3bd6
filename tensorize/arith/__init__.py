"""``tvm.arith``: the integer arithmetic engine (simplification, bounds, iterator maps, regions).

>>> import tensorize as tvm
>>> from tensorize.ir.expr import Var
>>> ana = tvm.arith.Analyzer()
>>> x = Var("x")
>>> ana.simplify(x * 1 + 0).same_as(x)
True
"""
from .analyzer import Analyzer
from .bound import ConstIntBound
from .evaluate import evaluate
from .iter_map import (
    IterMapResult, IterMark, IterSplitExpr, IterSumExpr, detect_iter_map, iter_map_simplify, normalize_iter_map_to_expr,
)
from .int_set import IntervalSet
from .region import region_covers, region_union, relax_region
from .subspace import subspace_divide

__all__ = [
    "Analyzer", "ConstIntBound", "evaluate", "IterMapResult", "IterMark", "IterSplitExpr", "IterSumExpr",
    "detect_iter_map", "iter_map_simplify", "normalize_iter_map_to_expr", "subspace_divide",
    "IntervalSet", "relax_region", "region_union", "region_covers",
]
