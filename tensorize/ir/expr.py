"""Expressions of TensorIR.

Python operators on expressions build IR, as in TVM: ``i * 4 + j`` is ``Add(Mul(i, 4), j)``.
Integer constants fold (``IntImm(2) * 3`` is ``IntImm(6)``) and operand dtypes are matched the
way TVM matches them (a Python constant takes the other side's dtype; int32 meets int64 as int64).

>>> i = Var("i", "int32")
>>> e = i * 4 + 1
>>> type(e).__name__, e.dtype
('Add', 'int32')
"""
from __future__ import annotations

# The nodes live in expr_scalar.py and expr_compound.py, the builders behind Python operators in
# expr_build.py over the conversions of expr_convert.py; this module gathers them
# (``from tensorize.ir import expr as E``).
from .expr_compound import (  # noqa: F401
    BINARY_MATH, BITWISE, UNARY_MATH, BufferLoad, Broadcast, Call, CallEffectKind, CommReducer, IterVar, Let, Op,
    ProducerLoad, Ramp, Range, Reduce, Shuffle,
)
from .expr_scalar import (  # noqa: F401
    EQ, GE, GT, LE, LT, NE, Add, And, BinaryOpExpr, Cast, CmpOpExpr, Div, EqualOp, FloatImm, FloorDiv, FloorMod, IntImm,
    Max, Min, Mod, Mul, Not, NotEqualOp, Or, PointerType, PrimExpr, Select, SizeVar, StringImm, Sub, Var,
)
from .expr_build import (  # noqa: F401
    _arith, _compare, _fold, add, call_intrin, call_intrin_binary, ceildiv, div, floordiv, floormod, logical_and,
    logical_not, logical_or, max_value_expr, min_value_expr, mul, sub, truncdiv, truncmod,
)
from .expr_convert import (  # noqa: F401
    _is_python_number, _wrap_int, cast, const, convert, make_const, match_types,
)
from .node import Node, _set  # noqa: F401
