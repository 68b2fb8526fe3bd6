"""``Call`` expressions to LLVM: math, bit operations, LLVM intrinsics by name, extern C functions,
``if_then_else``, ``reinterpret`` and pointer builtins.

Math maps to LLVM intrinsics (``llvm.sin.f32``; the backend turns the ones without instructions
into libm calls), to libm directly for functions LLVM has no intrinsic for (``log1p``, ...; vectors
call them lane by lane), or expands (``sigmoid``, ``rsqrt``, ``isnan``; float32 ``exp`` and ``erf`` as
vectorizable polynomials, ``fast_math.py``). float16 and
bfloat16 math runs in float32.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ...errors import TVMError
from ...ir import dtype as dt
from ...ir import expr as E
from .fast_math import fast_math
from .scalable import is_scalable_intrinsic
from .types import F32, I1, I32, constant, element_type, llvm_type, type_suffix

# tir op -> LLVM intrinsic base name (overloaded on the float type).
_INTRINSIC_MATH = {
    "exp": "llvm.exp", "exp2": "llvm.exp2", "exp10": "llvm.exp10", "log": "llvm.log", "log2": "llvm.log2",
    "log10": "llvm.log10", "sqrt": "llvm.sqrt", "fabs": "llvm.fabs", "floor": "llvm.floor", "ceil": "llvm.ceil",
    "trunc": "llvm.trunc", "round": "llvm.nearbyint", "nearbyint": "llvm.nearbyint", "sin": "llvm.sin",
    "cos": "llvm.cos", "tan": "llvm.tan", "sinh": "llvm.sinh", "cosh": "llvm.cosh", "tanh": "llvm.tanh",
    "asin": "llvm.asin", "acos": "llvm.acos", "atan": "llvm.atan", "pow": "llvm.pow",
    "copysign": "llvm.copysign", "atan2": "llvm.atan2",
}
# tir op -> libm function (the float32 variant adds "f").
_LIBM = {"erf": "erf", "log1p": "log1p", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh",
         "hypot": "hypot", "nextafter": "nextafter", "fmod": "fmod"}


def emit_call(cg, e: E.Call) -> ir.Value:
    """LLVM code for a ``Call`` node: built-in operators, math functions, LLVM intrinsics and externs.

    Parameters
    ----------
    cg : ExprCodegen
        The expression code generator.
    e : Call
        The call.

    Returns
    -------
    ir.Value
        The result.
    """
    name = e.op.name
    short = name[4:] if name.startswith("tir.") else name
    handler = _HANDLERS.get(short)
    if handler is not None:
        return handler(cg, e)
    if short in _INTRINSIC_MATH or short in _LIBM or short in _EXPANDED_MATH:
        return _math(cg, e, short)
    raise TVMError(f"LLVM codegen does not support the call {name!r}; supported: "
                   f"{', '.join(sorted(set(_HANDLERS) | set(_INTRINSIC_MATH) | set(_LIBM) | set(_EXPANDED_MATH)))}")


# -- math ----------------------------------------------------------------------------------------
def _math(cg, e: E.Call, short: str) -> ir.Value:
    dtype = e.args[0].dtype
    t = dt.parse(dtype)
    if t.code not in ("float", "bfloat"):
        raise TVMError(f"tir.{short} needs a floating-point argument, got {dtype}; cast it first (T.Cast('float32', x))")
    args = [cg.expr(a) for a in e.args]
    compute = dtype
    if t.code == "bfloat" or t.bits == 16:
        compute = dt.with_lanes("float32", t.lanes)
        args = [cg.cast(a, arg.dtype, compute) for a, arg in zip(args, e.args)]
    result = _math_in(cg, short, args, compute)
    if short in ("isnan", "isinf", "isfinite"):
        return result
    return cg.cast(result, compute, e.dtype)


def _math_in(cg, short: str, args: list, dtype: str) -> ir.Value:
    b = cg.builder
    value_type = args[0].type
    if short in _EXPANDED_MATH:
        return _EXPANDED_MATH[short](cg, args, dtype)
    expanded = fast_math(cg, short, args, dtype)
    if expanded is not None:
        return expanded
    if short in _INTRINSIC_MATH:
        return cg.call_overloaded(_INTRINSIC_MATH[short], value_type, [value_type] * len(args), args,
                                  arg_types_for_name=(value_type,))
    scalar = value_type.element if isinstance(value_type, ir.VectorType) else value_type
    function = _LIBM[short] + ("f" if scalar == F32 else "")
    callee = cg.ctx.declare(function, scalar, [scalar] * len(args), readnone=True)
    if not isinstance(value_type, ir.VectorType):
        return b.call(callee, args)
    result = ir.Constant(value_type, ir.Undefined)
    for lane in range(value_type.count):
        index = ir.Constant(I32, lane)
        lane_value = b.call(callee, [b.extract_element(a, index) for a in args])
        result = b.insert_element(result, lane_value, index)
    return result


def _one(cg, dtype: str):
    return constant(dtype, 1.0)


def _sigmoid(cg, args, dtype):
    b = cg.builder
    exp = _math_in(cg, "exp", [b.fneg(args[0])], dtype)
    return b.fdiv(_one(cg, dtype), b.fadd(_one(cg, dtype), exp))


def _rsqrt(cg, args, dtype):
    return cg.builder.fdiv(_one(cg, dtype), _math_in(cg, "sqrt", args, dtype))


def _isnan(cg, args, dtype):
    return cg.builder.fcmp_unordered("uno", args[0], args[0])


def _isinf(cg, args, dtype):
    magnitude = _math_in(cg, "fabs", args, dtype)
    return cg.builder.fcmp_ordered("==", magnitude, constant(dtype, float("inf")))


def _isfinite(cg, args, dtype):
    magnitude = _math_in(cg, "fabs", args, dtype)
    return cg.builder.fcmp_ordered("<", magnitude, constant(dtype, float("inf")))


_EXPANDED_MATH = {"sigmoid": _sigmoid, "rsqrt": _rsqrt, "isnan": _isnan, "isinf": _isinf, "isfinite": _isfinite}


# -- integer bit operations --------------------------------------------------------------------
def _binary_int(opname: str):
    def handler(cg, e):
        a, b = cg.expr(e.args[0]), cg.expr(e.args[1])
        if a.type != b.type and isinstance(a.type, ir.VectorType) and not isinstance(b.type, ir.VectorType):
            b = cg.splat(b, a.type.count)
        builder = cg.builder
        if opname == "shift_right":
            signed = dt.parse(e.args[0].dtype).code == "int"
            return builder.ashr(a, b) if signed else builder.lshr(a, b)
        return {"bitwise_and": builder.and_, "bitwise_or": builder.or_, "bitwise_xor": builder.xor,
                "shift_left": builder.shl}[opname](a, b)

    return handler


def _bitwise_not(cg, e):
    return cg.builder.not_(cg.expr(e.args[0]))


def _popcount(cg, e):
    value = cg.expr(e.args[0])
    return cg.call_overloaded("llvm.ctpop", value.type, [value.type], [value], arg_types_for_name=(value.type,))


def _clz(cg, e):
    value = cg.expr(e.args[0])
    return cg.call_overloaded("llvm.ctlz", value.type, [value.type, I1], [value, ir.Constant(I1, 0)],
                              arg_types_for_name=(value.type,))


# -- control and bits --------------------------------------------------------------------------
def _if_then_else(cg, e):
    cond_expr, then_expr, else_expr = e.args
    if isinstance(cond_expr, E.Broadcast):  # uniform across lanes: branch on the scalar
        cond_expr = cond_expr.value
    if dt.lanes_of(cond_expr.dtype) > 1:
        if (isinstance(then_expr, E.BufferLoad) and then_expr.predicate is None
                and dt.lanes_of(then_expr.buffer.dtype) == 1
                and dt.lanes_of(then_expr.dtype) == dt.lanes_of(cond_expr.dtype)):
            # Per-lane guard of a load: a masked load never touches the lanes the guard turns off.
            then_expr = E.BufferLoad(then_expr.buffer, then_expr.indices, cond_expr)
        return cg.builder.select(cg.expr(cond_expr), cg.expr(then_expr), cg.expr(else_expr))
    # Only the taken side runs: it may guard an out-of-bounds load.
    b = cg.builder
    cond = cg.expr(cond_expr)
    then_block = b.append_basic_block("if_then")
    else_block = b.append_basic_block("if_else")
    end_block = b.append_basic_block("if_end")
    b.cbranch(cond, then_block, else_block)
    b.position_at_end(then_block)
    then_value = cg.expr(then_expr)
    then_end = b.block
    b.branch(end_block)
    b.position_at_end(else_block)
    else_value = cg.expr(else_expr)
    else_end = b.block
    b.branch(end_block)
    b.position_at_end(end_block)
    phi = b.phi(then_value.type)
    phi.add_incoming(then_value, then_end)
    phi.add_incoming(else_value, else_end)
    return phi


def _likely(cg, e):
    cond = cg.expr(e.args[0])
    if cond.type != I1:
        return cond
    return cg.call_overloaded("llvm.expect", I1, [I1, I1], [cond, ir.Constant(I1, 1)], arg_types_for_name=(I1,))


def _reinterpret(cg, e):
    value = cg.expr(e.args[0])
    target = llvm_type(e.dtype)
    if value.type == target:
        return value
    if isinstance(target, ir.PointerType):
        return cg.builder.inttoptr(value, target)
    if isinstance(value.type, ir.PointerType):
        return cg.builder.ptrtoint(value, target)
    return cg.builder.bitcast(value, target)


def _call_type(dtype: str) -> ir.Type:
    return ir.VoidType() if dtype == "void" else llvm_type(dtype)


def _extern(pure: bool):
    def handler(cg, e):
        name = _string_arg(e, "call_extern")
        args = [cg.expr(a) for a in e.args[1:]]
        callee = cg.ctx.declare(name, _call_type(e.dtype), [a.type for a in args], readnone=pure)
        return cg.builder.call(callee, args)

    return handler


def _llvm_intrin(cg, e):
    name = _string_arg(e, "call_llvm_intrin")
    args = [cg.expr(a) for a in e.args[1:]]
    if is_scalable_intrinsic(name) and any(isinstance(a.type, ir.VectorType) for a in args):
        # An SVE intrinsic called with fixed vectors: go through a bridge (see scalable.py).
        callee = cg.ctx.scalable_bridges.declare(cg.ctx, name, _call_type(e.dtype), [a.type for a in args])
        return cg.builder.call(callee, args)
    callee = cg.ctx.declare(name, _call_type(e.dtype), [a.type for a in args])
    return cg.builder.call(callee, args)


def _string_arg(e, what: str) -> str:
    if not e.args or not isinstance(e.args[0], E.StringImm):
        raise TVMError(f"{e.op.name} needs the function name as its first argument (a string)")
    return e.args[0].value


def _access_ptr(cg, e):
    type_annotation, data, offset = e.args[0], e.args[1], e.args[2]
    element = element_type(type_annotation.dtype, True)
    return cg.builder.gep(cg.expr(data), [cg.expr(offset)], source_etype=element)


def _address_of(cg, e):
    load = e.args[0]
    if not isinstance(load, E.BufferLoad):
        raise TVMError("tir.address_of takes a buffer element, e.g. T.address_of(A[i])")
    base = cg._base_pointer(load.buffer)  # noqa: SLF001 - same codegen object
    index = cg._flat_index(load.buffer, load.indices)  # noqa: SLF001
    if isinstance(index, E.Ramp):
        index = index.base
    return cg.builder.gep(base, [cg.expr(index)], source_etype=element_type(load.buffer.dtype, True))


def _vector_half(high: bool):
    def handler(cg, e):
        value = cg.expr(e.args[0])
        lanes = value.type.count
        half = lanes // 2
        start = half if high else 0
        return cg.builder.shuffle_vector(value, ir.Constant(value.type, ir.Undefined),
                                         ir.Constant(ir.VectorType(I32, half), list(range(start, start + half))))

    return handler


def _vector_combine(cg, e):
    a, b = cg.expr(e.args[0]), cg.expr(e.args[1])
    lanes = a.type.count + b.type.count
    return cg.builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(I32, lanes), list(range(lanes))))


def _no_op(cg, e):
    return ir.Constant(I32, 0)


def _undef(cg, e):
    return ir.Constant(llvm_type(e.dtype), ir.Undefined)


def _prefetch(cg, e):
    return ir.Constant(I32, 0)


_HANDLERS = {
    "bitwise_and": _binary_int("bitwise_and"), "bitwise_or": _binary_int("bitwise_or"),
    "bitwise_xor": _binary_int("bitwise_xor"), "shift_left": _binary_int("shift_left"),
    "shift_right": _binary_int("shift_right"), "bitwise_not": _bitwise_not, "popcount": _popcount, "clz": _clz,
    "if_then_else": _if_then_else, "likely": _likely, "reinterpret": _reinterpret,
    "call_extern": _extern(False), "call_pure_extern": _extern(True),
    "call_llvm_intrin": _llvm_intrin, "call_llvm_pure_intrin": _llvm_intrin,
    "tvm_access_ptr": _access_ptr, "address_of": _address_of,
    "vectorlow": _vector_half(False), "vectorhigh": _vector_half(True), "vectorcombine": _vector_combine,
    "assume": _no_op, "undef": _undef, "prefetch": _prefetch,
    # GPU synchronisation in an emulated GPU program (its threads run one after another): nothing to do
    "tvm_storage_sync": _no_op, "ptx_commit_group": _no_op, "ptx_wait_group": _no_op,
}

__all__ = ["emit_call", "type_suffix"]
