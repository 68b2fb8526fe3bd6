"""Expressions to LLVM IR: arithmetic with TVM semantics, casts and vectors (buffer accesses are in
``memory.py``, calls in ``calls.py``).

Semantics worth knowing:
- ``floordiv``/``floormod`` round toward minus infinity (fixed up from ``sdiv``/``srem``; by a positive
  constant the fix-up needs only the remainder's sign, and by a power of two they are ``ashr``/``and``);
  ``Div``/``Mod`` on integers truncate (C semantics).
- Signed 32/64-bit ``+ - *`` carry ``nsw`` as in TVM (index arithmetic); narrower integers wrap.
- ``fadd``/``fsub``/``fmul`` carry ``contract``: multiply-adds may fuse into FMA instructions.
- ``bfloat16`` values are ``i16`` bit patterns: arithmetic runs in float32 and rounds back to
  nearest-even.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ...errors import TVMError
from ...ir import dtype as dt
from ...ir import expr as E
from .types import F32, I16, I32, PTR, constant, element_type, is_floating, is_signed, llvm_type


def _positive_constant(e) -> int | None:
    """The value of ``e`` when it is a positive integer constant (or a broadcast of one), else None: floor
    division and remainder by it need no sign fix-up of the divisor (index arithmetic divides by tile sizes)."""
    while isinstance(e, E.Broadcast):
        e = e.value
    if isinstance(e, E.IntImm) and e.value > 0:
        return int(e.value)
    return None


def _lanes(value: ir.Value) -> int:
    return value.type.count if isinstance(value.type, ir.VectorType) else 1


def splat_type(scalar: ir.Type, lanes: int) -> ir.Type:
    """``scalar`` itself for one lane, else a vector of ``lanes`` of it.

    Parameters
    ----------
    scalar : ir.Type
        The element type.
    lanes : int
        The lanes.

    Returns
    -------
    ir.Type
        The type.
    """
    return scalar if lanes == 1 else ir.VectorType(scalar, lanes)


class ExprCodegen:
    """Mixin of ``FunctionCodegen``: ``self.expr(e)`` emits an expression and returns its LLVM value."""

    builder: ir.IRBuilder
    vars: dict

    def expr(self, e) -> ir.Value:
        """LLVM code for an expression (through its ``visit``-style method).

        Parameters
        ----------
        e : PrimExpr
            The expression.

        Returns
        -------
        ir.Value
            The value.
        """
        method = self._expr_methods.get(type(e))
        if method is None:
            method = None
            for cls in type(e).__mro__:
                method = getattr(type(self), "emit_" + cls.__name__, None)
                if method is not None:
                    break
            if method is None:
                raise TVMError(f"LLVM codegen does not support the expression {type(e).__name__}; "
                               "run tvm.lower before building")
            self._expr_methods[type(e)] = method
        return method(self, e)

    _expr_methods: dict = {}

    # -- leaves -----------------------------------------------------------------------------
    def emit_IntImm(self, e):
        return constant(e.dtype, e.value)

    def emit_FloatImm(self, e):
        return constant(e.dtype, e.value)

    def emit_StringImm(self, e):
        return self.ctx.string_constant(e.value)

    def emit_Var(self, e):
        value = self.vars.get(e)
        if value is None:
            raise TVMError(f"variable {e.name!r} is used but never defined in {self.name}: the program is not "
                           "well formed (a loop variable used outside its loop, or a missing parameter)")
        return value

    # -- casts ------------------------------------------------------------------------------
    def emit_Cast(self, e):
        return self.cast(self.expr(e.value), e.value.dtype, e.dtype)

    def cast(self, value: ir.Value, src: str, dst: str) -> ir.Value:
        """Convert ``value`` from dtype ``src`` to dtype ``dst`` (integer, float and bfloat16 conversions).

        Parameters
        ----------
        value : ir.Value
            The LLVM value.
        src : str
            Its dtype.
        dst : str
            The wanted dtype.

        Returns
        -------
        ir.Value
            The converted value.
        """
        if src == dst:
            return value
        b = self.builder
        s, d = dt.parse(src), dt.parse(dst)
        if s.lanes != d.lanes:
            if s.lanes == 1:
                return self.splat(self.cast(value, src, dt.element_of(dst)), d.lanes)
            raise TVMError(f"cannot cast {src} to {dst}: lane counts differ")
        lanes = d.lanes
        f32 = dt.with_lanes("float32", lanes)
        if s.code == "bfloat":
            return self.cast(self.bf16_to_f32(value), f32, dst)
        if d.code == "bfloat":
            return self.f32_to_bf16(self.cast(value, src, f32))
        target = llvm_type(dst)
        if d.code == "bool":
            if s.code == "float":
                return b.fcmp_unordered("!=", value, ir.Constant(value.type, None))
            if s.code == "handle":
                return b.icmp_unsigned("!=", value, ir.Constant(PTR, None))
            return b.icmp_unsigned("!=", value, ir.Constant(value.type, None))
        if s.code == "handle" or d.code == "handle":
            return b.ptrtoint(value, target) if s.code == "handle" else b.inttoptr(value, target)
        if s.code in ("int", "uint", "bool"):
            if d.code in ("int", "uint"):
                if s.bits == d.bits:
                    return value
                if s.bits > d.bits:
                    return b.trunc(value, target)
                return b.sext(value, target) if s.code == "int" else b.zext(value, target)
            return b.sitofp(value, target) if s.code == "int" else b.uitofp(value, target)
        # float source
        if d.code in ("int", "uint"):
            return b.fptosi(value, target) if d.code == "int" else b.fptoui(value, target)
        if s.bits < d.bits:
            return b.fpext(value, target)
        return b.fptrunc(value, target)

    def bf16_to_f32(self, value: ir.Value) -> ir.Value:
        """Widen bfloat16 bits to float32 (a shift into the high half).

        Parameters
        ----------
        value : ir.Value
            The LLVM value.

        Returns
        -------
        ir.Value
            The float32 value.
        """
        b, lanes = self.builder, _lanes(value)
        wide = b.zext(value, splat_type(I32, lanes))
        shifted = b.shl(wide, self.splat(ir.Constant(I32, 16), lanes))
        return b.bitcast(shifted, splat_type(F32, lanes))

    def f32_to_bf16(self, value: ir.Value) -> ir.Value:
        """Round float32 to bfloat16 bits, to nearest even; NaN stays a quiet NaN.

        Parameters
        ----------
        value : ir.Value
            The LLVM value.

        Returns
        -------
        ir.Value
            The bfloat16 bits (i16).
        """
        b, lanes = self.builder, _lanes(value)
        i32 = splat_type(I32, lanes)
        bits = b.bitcast(value, i32)
        lsb = b.and_(b.lshr(bits, self.splat(ir.Constant(I32, 16), lanes)), self.splat(ir.Constant(I32, 1), lanes))
        rounded = b.add(b.add(bits, self.splat(ir.Constant(I32, 0x7FFF), lanes)), lsb)
        high = b.trunc(b.lshr(rounded, self.splat(ir.Constant(I32, 16), lanes)), splat_type(I16, lanes))
        is_nan = b.fcmp_unordered("uno", value, value)
        return b.select(is_nan, self.splat(ir.Constant(I16, 0x7FC0), lanes), high)

    def splat(self, scalar: ir.Value, lanes: int) -> ir.Value:
        """A vector of ``lanes`` copies of ``scalar`` (``scalar`` itself for one lane).

        Parameters
        ----------
        scalar : ir.Value
            The scalar.
        lanes : int
            The lanes.

        Returns
        -------
        ir.Value
            The vector.
        """
        if lanes == 1:
            return scalar
        if isinstance(scalar, ir.Constant):
            return ir.Constant(ir.VectorType(scalar.type, lanes), [scalar] * lanes)
        b = self.builder
        vector_type = ir.VectorType(scalar.type, lanes)
        one = b.insert_element(ir.Constant(vector_type, ir.Undefined), scalar, ir.Constant(I32, 0))
        return b.shuffle_vector(one, ir.Constant(vector_type, ir.Undefined),
                                ir.Constant(ir.VectorType(I32, lanes), [0] * lanes))

    # -- arithmetic -------------------------------------------------------------------------
    def _operands(self, e):
        return self.expr(e.a), self.expr(e.b)

    def _float_op(self, e, emit):
        """Run a floating-point ``emit(a, b)``, through float32 for bfloat16."""
        a, b = self._operands(e)
        if emit.__name__ in ("fadd", "fsub", "fmul"):
            # Allow a*b+c to fuse into an FMA, as TVM's LLVM backend does (FPOpFusion::Fast).
            plain = emit
            emit = lambda x, y: plain(x, y, flags=("contract",))  # noqa: E731
        if dt.parse(e.a.dtype).code == "bfloat":
            return self.f32_to_bf16(emit(self.bf16_to_f32(a), self.bf16_to_f32(b)))
        return emit(a, b)

    def _int_flags(self, dtype: str) -> tuple:
        t = dt.parse(dtype)
        return ("nsw",) if t.code == "int" and t.bits >= 32 else ()

    def emit_Add(self, e):
        if dt.is_float(e.dtype):
            return self._float_op(e, self.builder.fadd)
        a, b = self._operands(e)
        return self.builder.add(a, b, flags=self._int_flags(e.dtype))

    def emit_Sub(self, e):
        if dt.is_float(e.dtype):
            return self._float_op(e, self.builder.fsub)
        a, b = self._operands(e)
        return self.builder.sub(a, b, flags=self._int_flags(e.dtype))

    def emit_Mul(self, e):
        if dt.is_float(e.dtype):
            return self._float_op(e, self.builder.fmul)
        a, b = self._operands(e)
        return self.builder.mul(a, b, flags=self._int_flags(e.dtype))

    def emit_Div(self, e):
        if dt.is_float(e.dtype):
            return self._float_op(e, self.builder.fdiv)
        a, b = self._operands(e)
        return self.builder.sdiv(a, b) if is_signed(e.dtype) else self.builder.udiv(a, b)

    def emit_Mod(self, e):
        if dt.is_float(e.dtype):
            return self._float_op(e, self.builder.frem)
        a, b = self._operands(e)
        return self.builder.srem(a, b) if is_signed(e.dtype) else self.builder.urem(a, b)

    def _floor_fixup(self, a, b, positive: bool = False):
        """(q, r, fix) for signed floor division: ``fix`` is true where truncation rounded up. With ``positive``
        (the divisor is a positive constant) that is where the remainder is negative."""
        bld = self.builder
        q, r = bld.sdiv(a, b), bld.srem(a, b)
        zero = ir.Constant(a.type, None)
        if positive:
            return q, r, bld.icmp_signed("<", r, zero)
        nonzero = bld.icmp_signed("!=", r, zero)
        signs_differ = bld.icmp_signed("<", bld.xor(r, b), zero)
        return q, r, bld.and_(nonzero, signs_differ)

    def emit_FloorDiv(self, e):
        divisor = _positive_constant(e.b) if is_signed(e.dtype) else None
        if divisor is not None and divisor & (divisor - 1) == 0:  # a power of two: an arithmetic shift
            a = self.expr(e.a)
            return self.builder.ashr(a, constant(e.dtype, divisor.bit_length() - 1)) if divisor > 1 else a
        a, b = self._operands(e)
        if not is_signed(e.dtype):
            return self.builder.udiv(a, b)
        q, _, fix = self._floor_fixup(a, b, positive=divisor is not None)
        return self.builder.sub(q, self.builder.zext(fix, q.type))

    def emit_FloorMod(self, e):
        divisor = _positive_constant(e.b) if is_signed(e.dtype) else None
        if divisor is not None and divisor & (divisor - 1) == 0:  # a power of two: the low bits
            return self.builder.and_(self.expr(e.a), constant(e.dtype, divisor - 1))
        a, b = self._operands(e)
        if not is_signed(e.dtype):
            return self.builder.urem(a, b)
        _, r, fix = self._floor_fixup(a, b, positive=divisor is not None)
        return self.builder.add(r, self.builder.select(fix, b, ir.Constant(b.type, None)))

    def _min_max(self, e, less: bool):
        a, b = self._operands(e)
        dtype = e.a.dtype
        if dt.parse(dtype).code == "bfloat":
            fa, fb = self.bf16_to_f32(a), self.bf16_to_f32(b)
            cond = self.builder.fcmp_ordered("<" if less else ">", fa, fb)
        elif is_floating(dtype):
            cond = self.builder.fcmp_ordered("<" if less else ">", a, b)
        elif is_signed(dtype):
            cond = self.builder.icmp_signed("<" if less else ">", a, b)
        else:
            cond = self.builder.icmp_unsigned("<" if less else ">", a, b)
        return self.builder.select(cond, a, b)

    def emit_Min(self, e):
        return self._min_max(e, True)

    def emit_Max(self, e):
        return self._min_max(e, False)

    # -- comparisons and logic --------------------------------------------------------------
    def _compare(self, e, op: str):
        a, b = self._operands(e)
        dtype = e.a.dtype
        code = dt.parse(dtype).code
        if code == "bfloat":
            a, b, code = self.bf16_to_f32(a), self.bf16_to_f32(b), "float"
        if code == "float":
            if op == "!=":
                return self.builder.fcmp_unordered("!=", a, b)
            return self.builder.fcmp_ordered(op, a, b)
        if code == "int":
            return self.builder.icmp_signed(op, a, b)
        return self.builder.icmp_unsigned(op, a, b)

    def emit_EQ(self, e):
        return self._compare(e, "==")

    def emit_NE(self, e):
        return self._compare(e, "!=")

    def emit_LT(self, e):
        return self._compare(e, "<")

    def emit_LE(self, e):
        return self._compare(e, "<=")

    def emit_GT(self, e):
        return self._compare(e, ">")

    def emit_GE(self, e):
        return self._compare(e, ">=")

    def emit_And(self, e):
        a, b = self._operands(e)
        return self.builder.and_(a, b)

    def emit_Or(self, e):
        a, b = self._operands(e)
        return self.builder.or_(a, b)

    def emit_Not(self, e):
        return self.builder.not_(self.expr(e.a))

    def emit_Select(self, e):
        cond = self.expr(e.condition)
        return self.builder.select(cond, self.expr(e.true_value), self.expr(e.false_value))

    def emit_Let(self, e):
        self.vars[e.var] = self.expr(e.value)
        try:
            return self.expr(e.body)
        finally:
            del self.vars[e.var]

    # -- vectors ----------------------------------------------------------------------------
    def emit_Ramp(self, e):
        lanes = e.lanes
        base = self.splat(self.expr(e.base), lanes)
        stride = self.splat(self.expr(e.stride), lanes)
        element = element_type(e.base.dtype)
        steps = ir.Constant(ir.VectorType(element, lanes), [ir.Constant(element, i) for i in range(lanes)])
        return self.builder.add(base, self.builder.mul(stride, steps))

    def emit_Broadcast(self, e):
        return self.splat(self.expr(e.value), e.lanes)

    def emit_Shuffle(self, e):
        b = self.builder
        lanes = []
        for vector in e.vectors:
            value = self.expr(vector)
            count = dt.lanes_of(vector.dtype)
            lanes += [value] if count == 1 else [b.extract_element(value, ir.Constant(I32, i)) for i in range(count)]
        picked = [lanes[int(i)] for i in e.indices]
        if len(picked) == 1:
            return picked[0]
        result = ir.Constant(llvm_type(e.dtype), ir.Undefined)
        for position, value in enumerate(picked):
            result = b.insert_element(result, value, ir.Constant(I32, position))
        return result

    def emit_Call(self, e):
        from .calls import emit_call

        return emit_call(self, e)
