"""The Python backend: runs any PrimFunc (with blocks, or lowered, vector code included) on numpy
arrays, for checking other backends and intrinsic descriptions (``run_prim_func``)."""
from .interpreter import CompiledPrimFunc, InterpreterError, Pointer, compile_prim_func, run_prim_func

__all__ = ["CompiledPrimFunc", "InterpreterError", "Pointer", "compile_prim_func", "run_prim_func"]
