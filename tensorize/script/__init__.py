"""TVMScript: write TensorIR as Python (parser) and print it back (printer).

>>> from tensorize.script import tir as T, ir as I
>>> import tensorize as tvm
>>> @tvm.script.ir_module
... class MyModule:
...     @T.prim_func
...     def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
...         for i in range(8):
...             with T.block("B"):
...                 vi = T.axis.spatial(8, i)
...                 B[vi] = A[vi] + 1.0
>>> [r.buffer.name for r in MyModule["main"].body.block.body.body.block.reads]
['A']
"""
from . import ir, tir  # noqa: F401
from .parser.entry import from_source, ir_module  # noqa: F401

__all__ = ["ir", "tir", "ir_module", "from_source"]


def __getattr__(name):
    # The printer module is written separately; load it on first use.
    if name == "printer":
        import importlib

        return importlib.import_module(".printer", __name__)
    raise AttributeError(f"module 'tensorize.script' has no attribute {name!r}")
