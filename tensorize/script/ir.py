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
import inspect

from ..ir.function import GlobalVar, IRModule, PrimFunc  # noqa: F401


def ir_module(cls=None, *, s_tir: bool = False, check_well_formed: bool = True) -> IRModule:
    """``@I.ir_module class Module:`` -> an ``IRModule`` of the class's ``@T.prim_func`` methods, in order.

    Parameters
    ----------
    cls : type
        A class whose methods are decorated with ``@T.prim_func`` (already parsed to ``PrimFunc``).

    Returns
    -------
    IRModule
        The module of those functions, named after the methods.

    Examples
    --------
    >>> from tensorize.script import ir as I, tir as T
    >>> @I.ir_module
    ... class Module:
    ...     @T.prim_func
    ...     def main(A: T.Buffer((4,), "float32")):
    ...         for i in range(4):
    ...             A[i] = T.float32(0)
    >>> Module.function_names()
    ['main']
    """
    if cls is None:  # ``@I.ir_module(s_tir=True)``: the options are those of the functions inside
        return ir_module
    if isinstance(cls, IRModule):
        return cls
    if not inspect.isclass(cls):
        raise TypeError(f"@I.ir_module decorates a class, not a {type(cls).__name__}")
    functions = {name: value for name, value in vars(cls).items() if isinstance(value, PrimFunc)}
    return IRModule(functions)

__all__ = ["ir_module", "GlobalVar", "IRModule"]
