"""``tvm.topi``: ready-made tensor-expression operators (those TVM's schedule tests build on).

>>> from tensorize import te, topi
>>> A = te.placeholder((2, 5), dtype="int32")
>>> topi.argmax(A, axis=1).shape
(2,)
"""
from .reduction import argmax, argmin

__all__ = ["argmax", "argmin"]
