"""Expressions to LLVM IR: arithmetic with TVM semantics, casts, vectors and buffer accesses.

Semantics worth knowing:
- ``floordiv``/``floormod`` round toward minus infinity (fixed up from ``sdiv``/``srem``);
  ``Div``/``Mod`` on integers truncate (C semantics).
- Signed 32/64-bit ``+ - *`` carry ``nsw`` as in TVM (index arithmetic); narrower integers wrap.
- ``fadd``/``fsub``/``fmul`` carry ``contract``: multiply-adds may fuse into FMA instructions.
- ``bfloat16`` values are ``i16`` bit patterns: arithmetic runs in float32 and rounds back to
  nearest-even.
- Contiguous vector accesses (``Ramp`` index with stride 1) become vector loads/stores, aligned to
  what the index provably allows; other vector indices become ``llvm.masked.gather``/``scatter``;
  predicated accesses become masked loads/stores.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ...errors import TVMError
from ...ir import dtype as dt
from ...ir import expr as E
from .types import F32, I1, I16, I32, PTR, byte_size, constant, element_type, is_floating, is_signed, llvm_type


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


def alignment_factor(index) -> int:
    """The largest power of two (capped at 1024) that provably divides the integer expression ``index``.

    Parameters
    ----------
    index : PrimExpr
        The index.

    Returns
    -------
    int
        The factor.
    """
    cap = 1024
    if isinstance(index, E.IntImm):
        v = abs(index.value)
        return cap if v == 0 else min(v & -v, cap)
    if isinstance(index, E.Mul):
        return min(alignment_factor(index.a) * alignment_factor(index.b), cap)
    if isinstance(index, (E.Add, E.Sub, E.Min, E.Max)):
        return min(alignment_factor(index.a), alignment_factor(index.b))
    if isinstance(index, E.Cast):
        return alignment_factor(index.value)
    if isinstance(index, E.Ramp):
        return alignment_factor(index.base)
    return 1


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

    def _floor_fixup(self, a, b):
        """(q, r, fix) for signed floor division: ``fix`` is true where truncation rounded up."""
        bld = self.builder
        q, r = bld.sdiv(a, b), bld.srem(a, b)
        zero = ir.Constant(a.type, None)
        nonzero = bld.icmp_signed("!=", r, zero)
        signs_differ = bld.icmp_signed("<", bld.xor(r, b), zero)
        return q, r, bld.and_(nonzero, signs_differ)

    def emit_FloorDiv(self, e):
        a, b = self._operands(e)
        if not is_signed(e.dtype):
            return self.builder.udiv(a, b)
        q, _, fix = self._floor_fixup(a, b)
        return self.builder.sub(q, self.builder.zext(fix, q.type))

    def emit_FloorMod(self, e):
        a, b = self._operands(e)
        if not is_signed(e.dtype):
            return self.builder.urem(a, b)
        _, r, fix = self._floor_fixup(a, b)
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

    # -- memory -----------------------------------------------------------------------------
    def _base_pointer(self, buffer) -> ir.Value:
        """The address of the buffer's first element (data pointer plus ``elem_offset``)."""
        data = self.emit_Var(buffer.data)
        offset = buffer.elem_offset
        if isinstance(offset, E.IntImm) and offset.value == 0:
            return data
        return self.builder.gep(data, [self.expr(offset)], source_etype=element_type(buffer.dtype, True))

    def _flat_index(self, buffer, indices):
        """One flat element index (scalar, or vector; contiguous lanes stay a ``Ramp``)."""
        if len(indices) == 1:
            return indices[0]
        ramps = [k for k, index in enumerate(indices) if isinstance(index, E.Ramp)]
        last_stride_is_one = not buffer.strides or (isinstance(buffer.strides[-1], E.IntImm) and buffer.strides[-1].value == 1)
        if ramps == [len(indices) - 1] and last_stride_is_one:
            ramp = indices[-1]
            scalar = list(indices[:-1]) + [ramp.base]
            base = _offset_without_elem_offset(buffer, scalar)
            return E.Ramp(base, ramp.stride, ramp.lanes)
        return _offset_without_elem_offset(buffer, indices)

    def _access_alignment(self, buffer, index, lanes: int) -> int:
        element_bytes = byte_size(buffer.dtype)
        known = self.data_alignment.get(buffer.data, element_bytes)
        factor = alignment_factor(index) * element_bytes
        offset = buffer.elem_offset
        if not (isinstance(offset, E.IntImm) and offset.value == 0):
            factor = min(factor, alignment_factor(offset) * element_bytes)
        # LLVM wants a power of two; a vector of 10 floats is 40 bytes wide but at most 8-byte aligned.
        vector_bytes = element_bytes * lanes
        return max(element_bytes, min(known, factor, 1 << (vector_bytes.bit_length() - 1)))

    def _mask(self, predicate, lanes: int) -> ir.Value:
        if predicate is None:
            return ir.Constant(ir.VectorType(I1, lanes), [ir.Constant(I1, 1)] * lanes)
        mask = self.expr(predicate)
        return self.splat(mask, lanes) if _lanes(mask) == 1 else mask

    def _vector_pointers(self, base: ir.Value, index: ir.Value, memory_type: ir.Type) -> ir.Value:
        pointers = self.builder.gep(base, [index], source_etype=memory_type)
        pointers.type = ir.VectorType(PTR, _lanes(index))  # llvmlite types a vector GEP as a scalar ptr
        return pointers

    def emit_BufferLoad(self, e):
        buffer = e.buffer
        memory_type = element_type(buffer.dtype, True)
        base = self._base_pointer(buffer)
        index = self._flat_index(buffer, e.indices)
        lanes = dt.lanes_of(index.dtype)
        b = self.builder
        if lanes == 1:
            if e.predicate is not None:
                raise TVMError("a predicated load needs a vector index")
            pointer = b.gep(base, [self.expr(index)], source_etype=memory_type)
            value = b.load(pointer, typ=llvm_type(buffer.dtype, True), align=self._access_alignment(buffer, index, 1))
        else:
            vector_type = ir.VectorType(memory_type, lanes * dt.lanes_of(buffer.dtype))
            align = self._access_alignment(buffer, index, lanes)
            if isinstance(index, E.Ramp) and isinstance(index.stride, E.IntImm) and index.stride.value == 1:
                pointer = b.gep(base, [self.expr(index.base)], source_etype=memory_type)
                if e.predicate is None:
                    value = b.load(pointer, typ=vector_type, align=align)
                else:
                    value = self.call_overloaded("llvm.masked.load", vector_type, [vector_type, PTR], [
                        pointer, ir.Constant(I32, align), self._mask(e.predicate, lanes),
                        ir.Constant(vector_type, None)], arg_types_for_name=(vector_type, PTR))
            else:
                pointers = self._vector_pointers(base, self.expr(index), memory_type)
                value = self.call_overloaded("llvm.masked.gather", vector_type, [vector_type, pointers.type], [
                    pointers, ir.Constant(I32, byte_size(buffer.dtype)), self._mask(e.predicate, lanes),
                    ir.Constant(vector_type, None)], arg_types_for_name=(vector_type, pointers.type))
        if dt.is_bool(buffer.dtype):
            value = b.trunc(value, llvm_type(e.dtype))
        return value

    def store(self, buffer, value_expr, indices, predicate=None) -> None:
        """Store ``value_expr`` into ``buffer`` at ``indices`` (a masked store under ``predicate``).

        Parameters
        ----------
        buffer : Buffer
            The buffer.
        value_expr : PrimExpr
            The value.
        indices : list of PrimExpr
            The flat index.
        predicate : PrimExpr, optional
            A lane mask.
        """
        memory_type = element_type(buffer.dtype, True)
        value = self.expr(value_expr)
        if dt.is_bool(buffer.dtype):
            value = self.builder.zext(value, llvm_type(value_expr.dtype, True))
        base = self._base_pointer(buffer)
        index = self._flat_index(buffer, indices)
        lanes = dt.lanes_of(index.dtype)
        b = self.builder
        if lanes == 1:
            pointer = b.gep(base, [self.expr(index)], source_etype=memory_type)
            b.store(value, pointer, align=self._access_alignment(buffer, index, 1))
            return
        if _lanes(value) == 1:
            value = self.splat(value, lanes)
        align = self._access_alignment(buffer, index, lanes)
        if isinstance(index, E.Ramp) and isinstance(index.stride, E.IntImm) and index.stride.value == 1:
            pointer = b.gep(base, [self.expr(index.base)], source_etype=memory_type)
            if predicate is None:
                b.store(value, pointer, align=align)
            else:
                self.call_overloaded("llvm.masked.store", ir.VoidType(), [value.type, PTR], [
                    value, pointer, ir.Constant(I32, align), self._mask(predicate, lanes)],
                    arg_types_for_name=(value.type, PTR))
            return
        pointers = self._vector_pointers(base, self.expr(index), memory_type)
        self.call_overloaded("llvm.masked.scatter", ir.VoidType(), [value.type, pointers.type], [
            value, pointers, ir.Constant(I32, byte_size(buffer.dtype)), self._mask(predicate, lanes)],
            arg_types_for_name=(value.type, pointers.type))

    def emit_Call(self, e):
        from .calls import emit_call

        return emit_call(self, e)


def _offset_without_elem_offset(buffer, indices):
    """Row-major (or strided) flat offset of ``indices``, without the buffer's ``elem_offset``."""
    if buffer.strides:
        offset = None
        for index, stride in zip(indices, buffer.strides):
            term = index * stride
            offset = term if offset is None else offset + term
        return offset
    offset = None
    for index, extent in zip(indices, buffer.shape):
        offset = index if offset is None else offset * extent + index
    return offset
