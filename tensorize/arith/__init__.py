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

__all__ = ["Analyzer", "ConstIntBound", "evaluate"]
