"""Vector stores of vectorized GPU loops in CUDA C.

A vectorized copy ``dst[ramp(b, 1, n)] = src[ramp(c, 1, n)]`` of 2, 4, 8 or 16 bytes between global and
shared memory, with both starts provably aligned to the width (``arith.modular_set``), becomes one
wide access (``*(uint4*)(dst + b) = *(uint4*)(src + c)``): the 16-byte loads a cooperative fetch needs
to keep up with Tensor Cores. Inside an ``async_scope`` (a software pipeline's producer stage) a
global -> shared copy of 4, 8 or 16 bytes is an asynchronous ``cp.async`` instead (sm_80+). Any other
vector store is written lane by lane (``lane``: the scalar expression of one lane).
"""
from __future__ import annotations

from ...arith.modular import modular_set
from ...errors import TVMError
from ...ir import dtype as dt
from ...ir import expr as E
from ...transform.vectorize_loop import vector_binary

WIDE_TYPES = {2: "unsigned short", 4: "unsigned int", 8: "uint2", 16: "uint4"}
ASYNC_HELPERS = """
__device__ __forceinline__ unsigned tz_smem_addr(const void* p) {
  unsigned r;
  asm volatile("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
  return r;
}
__device__ __forceinline__ void tz_cp_async16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(tz_smem_addr(smem)), "l"(gmem));
}
__device__ __forceinline__ void tz_cp_async8(void* smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" :: "r"(tz_smem_addr(smem)), "l"(gmem));
}
__device__ __forceinline__ void tz_cp_async4(void* smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(tz_smem_addr(smem)), "l"(gmem));
}
__device__ __forceinline__ void tz_cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void tz_cp_async_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N)); }
"""


def lane(e, i: int):
    """The scalar expression of lane ``i`` of the vector expression ``e``.

    Parameters
    ----------
    e : PrimExpr
        A vector (or scalar) expression.
    i : int
        The lane.

    Returns
    -------
    PrimExpr
        A scalar expression.

    Raises
    ------
    TVMError
        For a vector expression kind with no lane form here.

    Examples
    --------
    >>> x = E.Var("x", "int32")
    >>> str(lane(E.Ramp(x, 1, 4), 2))
    'x + 2'
    """
    if dt.lanes_of(e.dtype) == 1:
        return e
    if isinstance(e, E.Ramp):
        return E.add(e.base, E.mul(e.stride, i)) if i else e.base
    if isinstance(e, E.Broadcast):
        return e.value
    if isinstance(e, E.BufferLoad):
        load = E.BufferLoad(e.buffer, tuple(lane(x, i) for x in e.indices))
        if e.predicate is not None:
            zero = E.const(load.dtype, 0)
            return E.Call(load.dtype, "tir.if_then_else", (lane(e.predicate, i), load, zero))
        return load
    if isinstance(e, E.Cast):
        return E.Cast(dt.with_lanes(e.dtype, 1), lane(e.value, i))
    if isinstance(e, E.Select):
        return E.Select(lane(e.condition, i), lane(e.true_value, i), lane(e.false_value, i))
    if isinstance(e, E.Not):
        return E.Not(lane(e.a, i))
    if isinstance(e, E.Call):
        return E.Call(dt.with_lanes(e.dtype, 1), e.op, tuple(lane(a, i) for a in e.args))
    if hasattr(e, "a") and hasattr(e, "b"):
        return vector_binary(type(e), lane(e.a, i), lane(e.b, i))
    raise TVMError(f"CUDA codegen cannot split the vector expression {type(e).__name__} into lanes")


def aligned_ramp(index, elem_bytes: int, lets: dict):
    """The start of ``index`` when it is ``Ramp(b, 1, n)`` with ``n * elem_bytes`` a wide-access width and
    ``b`` provably a multiple of ``n``; None otherwise.

    Parameters
    ----------
    index : PrimExpr
        A flat buffer index.
    elem_bytes : int
        Bytes per element.
    lets : dict
        Let-bound variables in scope (var -> value).

    Returns
    -------
    PrimExpr or None
        ``b``.
    """
    if not isinstance(index, E.Ramp) or not isinstance(index.stride, E.IntImm) or index.stride.value != 1:
        return None
    if index.lanes * elem_bytes not in WIDE_TYPES:
        return None
    if not modular_set(index.base, lets).divisible_by(index.lanes):
        return None
    return index.base
