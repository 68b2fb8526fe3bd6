"""``tvm.tir.expr``: the expression nodes."""
from ..ir.expr import *  # noqa: F401,F403
