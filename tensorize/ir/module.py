"""``tvm.ir.module``: where TVM users import ``IRModule`` from."""
from .function import IRModule

__all__ = ["IRModule"]
