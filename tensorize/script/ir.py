"""The ``I`` namespace of TVMScript: ``from tensorize.script import ir as I``.

>>> from tensorize.script import ir as I, tir as T
>>> @I.ir_module
... class Module:
...     @T.prim_func
...     def main(A: T.Buffer((4,), "float32")):
...         for i in range(4):
...             A[i] = T.float32(0)
>>> type(Module).__name__
'IRModule'
"""
from ..ir.function import GlobalVar, IRModule  # noqa: F401
from .parser.entry import ir_module

__all__ = ["ir_module", "GlobalVar", "IRModule"]
