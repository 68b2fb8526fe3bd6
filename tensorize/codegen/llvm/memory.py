"""Buffer accesses to LLVM IR: scalar and contiguous vector loads and stores aligned to what the
index provably allows, ``llvm.masked.gather``/``scatter`` for other vector indices, masked
loads/stores for predicated accesses.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ...errors import TVMError
from ...ir import dtype as dt
from ...ir import expr as E
from .expr import _lanes
from .types import I1, I32, PTR, byte_size, element_type, llvm_type


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


class MemoryCodegen:
    """Mixin of ``FunctionCodegen``: loads (``emit_BufferLoad``) and stores (``store``) of buffer elements."""

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
