"""TensorIR expressions as CUDA C: the expression half of the CUDA source generator.

>>> from tensorize.ir import expr as E
>>> x = E.Var("x", "int32")
>>> CudaExprPrinter().expr(E.FloorDiv(x + 3, 4))
'((x + 3) >> 2)'
"""
from __future__ import annotations

from ...errors import TVMError
from ...ir import dtype as dt
from ...ir import expr as E

_C_TYPES = {
    "bool": "bool", "int8": "signed char", "uint8": "unsigned char", "int16": "short", "uint16": "unsigned short",
    "int32": "int", "uint32": "unsigned int", "int64": "long long", "uint64": "unsigned long long",
    "float16": "half", "bfloat16": "nv_bfloat16", "float32": "float", "float64": "double", "handle": "void*",
}
_BINARY = {"Add": "+", "Sub": "-", "Mul": "*", "EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">",
           "GE": ">=", "And": "&&", "Or": "||"}
_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "shift_left": "<<", "shift_right": ">>"}
_MATH = {"exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "tanh", "fabs", "floor",
         "ceil", "round", "nearbyint", "trunc", "erf", "sin", "cos", "tan", "sinh", "cosh", "asin", "acos",
         "atan", "pow", "atan2", "fmod"}


def c_type(dtype: str) -> str:
    """The CUDA C type of a scalar ``dtype``; vector dtypes are not generated.

    Parameters
    ----------
    dtype : str
        A scalar dtype, e.g. ``"float16"``.

    Returns
    -------
    str
        The C type, e.g. ``"half"``.

    Raises
    ------
    TVMError
        For a vector dtype or one with no C type.
    """
    if dt.lanes_of(dtype) != 1:
        raise TVMError(f"CUDA codegen emits scalar code; the vector dtype {dtype} reached it. Do not vectorize "
                       "loops of GPU kernels (bind them to threads instead)")
    name = str(dtype)
    if name not in _C_TYPES:
        raise TVMError(f"CUDA codegen has no C type for dtype {dtype}")
    return _C_TYPES[name]


def _is_power_of_two(value) -> bool:
    return isinstance(value, E.IntImm) and value.value > 0 and value.value & (value.value - 1) == 0


class CudaExprPrinter:
    """Prints expressions; ``names`` maps each Var to its C identifier (filled by the statement printer)."""

    def __init__(self):
        self.names: dict = {}
        self.call_hooks: dict = {}  # op name -> f(printer, call) -> str (warp-level calls, see source.py)

    def name_of(self, var) -> str:
        """The C identifier of ``var``, made unique on first use.

        Parameters
        ----------
        var : Var
            A variable of the program.

        Returns
        -------
        str
            Its identifier (the variable's name, sanitised, with a suffix when taken).
        """
        if var not in self.names:
            base = "".join(c if c.isalnum() or c == "_" else "_" for c in var.name) or "v"
            taken = set(self.names.values())
            name, i = base, 1
            while name in taken:
                name, i = f"{base}_{i}", i + 1
            self.names[var] = name
        return self.names[var]

    def expr(self, e) -> str:
        """The CUDA C text of expression ``e``.

        Parameters
        ----------
        e : PrimExpr
            The expression.

        Returns
        -------
        str
            Its C text.

        Raises
        ------
        TVMError
            For an expression kind the CUDA codegen does not support.
        """
        method = getattr(self, "print_" + type(e).__name__, None)
        if method is None:
            kind = type(e).__name__
            if kind in _BINARY:
                return f"({self.expr(e.a)} {_BINARY[kind]} {self.expr(e.b)})"
            raise TVMError(f"CUDA codegen does not support the expression {kind}")
        return method(e)

    def print_Var(self, e):
        return self.name_of(e)

    print_SizeVar = print_Var

    def print_IntImm(self, e):
        if e.dtype == "bool":
            return "true" if e.value else "false"
        if e.dtype in ("int64", "uint64"):
            return f"{e.value}LL"
        if e.dtype == "int32" or e.dtype == "uint32":
            return str(e.value)
        return f"(({c_type(e.dtype)}){e.value})"

    def print_FloatImm(self, e):
        value = float(e.value)
        if value != value:
            text = "__int_as_float(0x7fc00000)"
        elif value in (float("inf"), float("-inf")):
            text = ("-" if value < 0 else "") + "__int_as_float(0x7f800000)"
        else:
            text = repr(value)
        if e.dtype == "float32":
            return f"{text}f" if "__" not in text else text
        if e.dtype == "float64":
            return text
        return f"(({c_type(e.dtype)})({text}f))"

    def print_StringImm(self, e):
        return '"' + e.value.replace('"', '\\"') + '"'

    def print_Cast(self, e):
        return f"(({c_type(e.dtype)}){self.expr(e.value)})"

    def print_Div(self, e):
        return f"({self.expr(e.a)} / {self.expr(e.b)})"

    def print_Mod(self, e):
        if dt.is_float(e.dtype):
            return f"fmodf({self.expr(e.a)}, {self.expr(e.b)})"
        return f"({self.expr(e.a)} % {self.expr(e.b)})"

    def print_FloorDiv(self, e):
        if dt.is_float(e.dtype):
            return f"floorf({self.expr(e.a)} / {self.expr(e.b)})"
        if _is_power_of_two(e.b):
            return f"({self.expr(e.a)} >> {e.b.value.bit_length() - 1})"
        a, b = self.expr(e.a), self.expr(e.b)
        return f"(({a}) / ({b}) - ((({a}) % ({b}) != 0) && ((({a}) < 0) != (({b}) < 0))))"

    def print_FloorMod(self, e):
        if dt.is_float(e.dtype):
            a, b = self.expr(e.a), self.expr(e.b)
            return f"({a} - floorf({a} / {b}) * {b})"
        if _is_power_of_two(e.b):
            return f"({self.expr(e.a)} & {e.b.value - 1})"
        a, b = self.expr(e.a), self.expr(e.b)
        return f"(((({a}) % ({b})) + ({b})) % ({b}))"

    def print_Min(self, e):
        return f"min({self.expr(e.a)}, {self.expr(e.b)})"

    def print_Max(self, e):
        return f"max({self.expr(e.a)}, {self.expr(e.b)})"

    def print_Not(self, e):
        return f"(!{self.expr(e.a)})"

    def print_Select(self, e):
        return f"({self.expr(e.condition)} ? {self.expr(e.true_value)} : {self.expr(e.false_value)})"

    def print_Let(self, e):
        raise TVMError("CUDA codegen does not print Let expressions; lowering turns them into LetStmts")

    def print_BufferLoad(self, e):
        if len(e.indices) != 1:
            raise TVMError(f"CUDA codegen takes flattened buffers; {e.buffer.name} has {len(e.indices)} indices")
        return f"{self.name_of(e.buffer.data)}[{self.expr(e.indices[0])}]"

    def print_Call(self, e):
        name = e.op.name[4:] if e.op.name.startswith("tir.") else e.op.name
        hook = self.call_hooks.get(name)
        if hook is not None:
            return hook(self, e)
        if name == "tvm_access_ptr":
            return f"(({c_type(e.args[0].dtype)}*){self.expr(e.args[1])} + {self.expr(e.args[2])})"
        args = [self.expr(a) for a in e.args]
        if name == "if_then_else":
            return f"({args[0]} ? {args[1]} : {args[2]})"
        if name in ("likely", "assume"):
            return args[0]
        if name in _MATH:
            suffix = "f" if e.dtype == "float32" else ""
            if e.dtype == "float16":
                return f"((half){name}f((float){args[0]}))"
            return f"{name}{suffix}({', '.join(args)})"
        if name == "sigmoid":
            return f"(1.0f / (1.0f + expf(-{args[0]})))"
        if name in _BITWISE:
            return f"({args[0]} {_BITWISE[name]} {args[1]})"
        if name == "bitwise_not":
            return f"(~{args[0]})"
        if name == "address_of":
            return f"(&{args[0]})"
        if name in ("call_extern", "call_pure_extern"):
            return f"{e.args[0].value}({', '.join(args[1:])})"
        if name == "tvm_storage_sync":
            return "__syncthreads()"
        if name == "ptx_commit_group":
            return "tz_cp_async_commit()"
        if name == "ptx_wait_group":
            return f"tz_cp_async_wait<{int(e.args[0].value)}>()"
        if name == "reinterpret":
            return f"(*({c_type(e.dtype)}*)(&{args[0]}))"
        raise TVMError(f"CUDA codegen does not support the call {e.op.name}")
