"""``tvm.tirx``: current Apache TVM's name for ``tvm.tir``, with the same names and submodules.

``from tensorize import tirx`` gives ``tensorize.tir`` itself; importing this module (as
``from tensorize.tirx.expr import IntImm`` does) makes its submodules ``expr``, ``stmt_functor``,
``analysis`` and ``transform`` importable under ``tensorize.tirx`` too, as the very modules of
``tensorize.tir``.

>>> from tensorize.tirx.expr import IntImm
>>> import tensorize.tir
>>> IntImm is tensorize.tir.IntImm and tensorize.tirx.For is tensorize.tir.For
True
"""
import sys

from . import tir as _tir
from .tir import *  # noqa: F401,F403
from .tir import analysis, expr, stmt_functor, transform

for _sub in (analysis, expr, stmt_functor, transform):
    sys.modules[f"{__name__}.{_sub.__name__.rpartition('.')[2]}"] = _sub


def __getattr__(name):
    return getattr(_tir, name)
