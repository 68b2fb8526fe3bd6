"""``tvm.tirx``: current Apache TVM's name for ``tvm.tir``; this module *is* ``tensorize.tir``.

Importing it replaces itself in ``sys.modules`` by ``tensorize.tir`` and its submodules, so
``from tensorize.tirx.expr import IntImm`` and ``tensorize.tirx.For`` name the same objects as
``tensorize.tir``.

>>> import tensorize.tirx, tensorize.tir
>>> tensorize.tirx is tensorize.tir
True
"""
import sys

from . import tir as _tir
from .tir import analysis, expr, stmt_functor, transform

for _sub in (analysis, expr, stmt_functor, transform):
    sys.modules[f"{__name__}.{_sub.__name__.rpartition('.')[2]}"] = _sub
sys.modules[__name__] = _tir
