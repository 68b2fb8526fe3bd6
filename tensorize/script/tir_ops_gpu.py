"""The ``T.`` builders of the GPU intrinsics: synchronisation, WMMA and ``mma.sync`` fragments, Hopper's
``wgmma``, ``cp.async`` groups, the tensor memory accelerator, transaction barriers and clusters. Each gives
its call the dtype TVM gives it; ``tensorize.script.tir_ops`` re-exports them (``T.ptx_wgmma``, ...).

>>> from tensorize.script import tir as T
>>> T.ptx_mbarrier_wait(0, 1, 0).op.name
'tir.ptx_mbarrier_wait'
"""
from __future__ import annotations

from ..ir import expr as _E
from ..ir.expr import Call as _Call
from ..ir.expr import Op as _Op
from ..ir.expr import StringImm as _StringImm

__all__ = [
    "tvm_storage_sync", "tvm_thread_allreduce", "tvm_fill_fragment", "tvm_load_matrix_sync",
    "tvm_store_matrix_sync", "tvm_mma_sync", "ptx_mma", "ptx_ldmatrix", "ptx_wgmma", "ptx_wgmma_fence",
    "ptx_wgmma_commit_group", "ptx_wgmma_wait_group", "ptx_commit_group", "ptx_wait_group", "ptx_tma_load",
    "ptx_mbarrier_init", "ptx_mbarrier_arrive", "ptx_cluster_sync", "ptx_cluster_rank",
    "ptx_mbarrier_arrive_expect_tx", "ptx_mbarrier_wait", "ptx_setmaxnreg",
]


def _call(dtype: str, name: str, *args) -> _Call:
    return _Call(dtype, _Op.get("tir." + name), tuple(_StringImm(a) if isinstance(a, str) else a for a in args))


def _nullary(name: str, summary: str):
    """A documented ``T.<name>()`` builder of an operand-less int32 intrinsic call."""
    def build() -> _Call:
        return _call("int32", name)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"{summary}\n\n    Returns\n    -------\n    Call\n        The call.\n    "
    return build


# -- GPU synchronisation and warp-level matrix operations --------------------------------------

def tvm_storage_sync(scope: str) -> _Call:
    """``T.tvm_storage_sync("shared")``: a barrier over the threads sharing memory of ``scope``.

    Parameters
    ----------
    scope : str
        ``"shared"``, ``"global"``, ...

    Returns
    -------
    Call
        The call.
    """
    return _call("int32", "tvm_storage_sync", scope)


def tvm_thread_allreduce(*args) -> _Call:
    """``T.tvm_thread_allreduce(size, value, cond, result, thread, ...)``: a reduction across threads.

    Parameters
    ----------
    *args : PrimExpr
        Size, values, condition, result buffers and thread variables, as TVM orders them.

    Returns
    -------
    Call
        The call.
    """
    return _call("handle", "tvm_thread_allreduce", *args)


def tvm_fill_fragment(fragment, m, n, k, index, value) -> _Call:
    """``T.tvm_fill_fragment(C.data, 16, 16, 16, index, value)``: fill a WMMA accumulator fragment.

    Parameters
    ----------
    fragment : Var
        The fragment buffer's data.
    m : int
        M.
    n : int
        N.
    k : int
        K.
    index : PrimExpr
        The fragment index.
    value : PrimExpr
        The fill value.

    Returns
    -------
    Call
        The call.
    """
    return _call("handle", "tvm_fill_fragment", fragment, m, n, k, index, value)


def tvm_load_matrix_sync(fragment, m, n, k, index, buffer_ptr, stride, layout) -> _Call:
    """``T.tvm_load_matrix_sync(A.data, 16, 16, 16, index, ptr, stride, "row_major")``: load a WMMA fragment.

    Parameters
    ----------
    fragment : Var
        The fragment buffer's data.
    m : int
        M.
    n : int
        N.
    k : int
        K.
    index : PrimExpr
        The fragment index.
    buffer_ptr : PrimExpr
        The source address.
    stride : PrimExpr
        The row stride.
    layout : str
        ``"row_major"`` or ``"col_major"``.

    Returns
    -------
    Call
        The call.
    """
    return _call("handle", "tvm_load_matrix_sync", fragment, m, n, k, index, buffer_ptr, stride, layout)


def tvm_store_matrix_sync(fragment, m, n, k, index, buffer_ptr, stride, layout) -> _Call:
    """``T.tvm_store_matrix_sync(C.data, 16, 16, 16, index, ptr, stride, "row_major")``: store a WMMA fragment.

    Parameters
    ----------
    fragment : Var
        The fragment buffer's data.
    m : int
        M.
    n : int
        N.
    k : int
        K.
    index : PrimExpr
        The fragment index.
    buffer_ptr : PrimExpr
        The destination address.
    stride : PrimExpr
        The row stride.
    layout : str
        ``"row_major"`` or ``"col_major"``.

    Returns
    -------
    Call
        The call.
    """
    return _call("handle", "tvm_store_matrix_sync", fragment, m, n, k, index, buffer_ptr, stride, layout)


def tvm_mma_sync(d, d_index, a, a_index, b, b_index, c, c_index) -> _Call:
    """``T.tvm_mma_sync(D.data, di, A.data, ai, B.data, bi, C.data, ci)``: D = A * B + C on WMMA fragments.

    Parameters
    ----------
    d : Var
        D's data.
    d_index : PrimExpr
        D's fragment index.
    a : Var
        A's data.
    a_index : PrimExpr
        A's fragment index.
    b : Var
        B's data.
    b_index : PrimExpr
        B's fragment index.
    c : Var
        C's data.
    c_index : PrimExpr
        C's fragment index.

    Returns
    -------
    Call
        The call.
    """
    return _call("handle", "tvm_mma_sync", d, d_index, a, a_index, b, b_index, c, c_index)


def ptx_mma(dtype: str, *args) -> _Call:
    """``T.ptx_mma(dtype, shape, a_layout, b_layout, a_type, b_type, c_type, ...)``: an inline PTX ``mma.sync``.

    Parameters
    ----------
    dtype : str
        The result dtype.
    *args : PrimExpr or str
        The shape, layouts, types and operands, as TVM orders them.

    Returns
    -------
    Call
        The call.
    """
    return _call(dtype, "ptx_mma", *args)


def ptx_ldmatrix(dtype: str, *args) -> _Call:
    """``T.ptx_ldmatrix(dtype, trans, num, type, local_ptr, local_offset, smem_ptr, smem_offset)``.

    Parameters
    ----------
    dtype : str
        The result dtype.
    *args : PrimExpr
        trans, num, type, local_ptr, local_offset, smem_ptr, smem_offset.

    Returns
    -------
    Call
        The call.
    """
    return _call(dtype, "ptx_ldmatrix", *args)


def ptx_wgmma(dtype: str, *args) -> _Call:
    """``T.ptx_wgmma(dtype, shape, a_type, b_type, c_type, a_ptr, a_lbo, a_sbo, b_ptr, b_lbo, b_sbo, c, c_offset)``.

    One ``wgmma.mma_async`` of a warpgroup (sm_90a): ``C += A @ B^T`` with A (``m`` x ``k``) and B
    (``n`` x ``k``) in shared memory, K-major, in 8-row x 16-byte core matrices; ``*_lbo`` / ``*_sbo`` are
    the element distances between core matrices along K and along M (N). ``c`` is the warpgroup's
    accumulator buffer, ``c_offset`` the calling thread's first register.

    Parameters
    ----------
    dtype : str
        The result dtype (``"handle"``).
    *args : PrimExpr or str
        The operands, in the order above.

    Returns
    -------
    Call
        The call.
    """
    return _call(dtype, "ptx_wgmma", *args)


def ptx_wgmma_wait_group(n) -> _Call:
    """``T.ptx_wgmma_wait_group(n)``: wait until at most ``n`` groups of ``wgmma.mma_async`` are pending.

    Parameters
    ----------
    n : int
        The groups left in flight.

    Returns
    -------
    Call
        The call.
    """
    return _call("int32", "ptx_wgmma_wait_group", n)


def ptx_wait_group(num: int) -> _Call:
    """``T.ptx_wait_group(n)``: wait until at most ``n`` groups of ``cp.async`` copies are in flight.

    Parameters
    ----------
    num : int
        The groups that may stay pending.

    Returns
    -------
    Call
        The call.
    """
    return _call("int32", "ptx_wait_group", num)


# -- Hopper's tensor memory accelerator and transaction barriers ----------------------------------

def ptx_tma_load(dst, src, offset, ld, rows, cols, swizzle, *barrier) -> _Call:
    """``T.ptx_tma_load(dst, src, offset, ld, rows, cols, swizzle[, bar, bar_index[, cta_mask]])``: one TMA copy
    (sm_90), multicast to the cluster's CTAs in ``cta_mask`` when given.

    Copies the ``rows`` x ``cols`` tile of the row-major global buffer ``src`` (rows ``ld`` elements apart)
    that starts ``offset`` elements in, to the shared tile at ``dst`` (an ``access_ptr``), stored with the
    ``swizzle``-byte swizzle (0, 32, 64 or 128) the hardware applies. The warp-specialisation pass adds
    the transaction barrier that completes when the bytes have landed (``bar[bar_index]``).

    Parameters
    ----------
    dst : PrimExpr
        The shared destination (``tvm_access_ptr``, write).
    src : Var
        The global buffer's data.
    offset, ld : PrimExpr
        The tile's first element in ``src`` and the row stride in elements.
    rows, cols, swizzle : int
        The box and the swizzle in bytes.
    *barrier : PrimExpr
        ``(bar, bar_index[, cta_mask])``: the barrier array and which barrier, and the CTAs of the cluster that
        receive the tile (added by ``InjectWarpSpecialization``).

    Returns
    -------
    Call
        The call.
    """
    return _call("int32", "ptx_tma_load", dst, src, offset, ld, rows, cols, swizzle, *barrier)


def ptx_mbarrier_init(bar, index, count) -> _Call:
    """``T.ptx_mbarrier_init(bar, index, count)``: initialise shared barrier ``bar[index]`` for ``count`` arrivals.

    Parameters
    ----------
    bar : Var
        A shared ``uint64`` array.
    index, count : PrimExpr
        The barrier and its expected arrivals per phase.

    Returns
    -------
    Call
        The call.
    """
    return _call("int32", "ptx_mbarrier_init", bar, index, count)


def ptx_mbarrier_arrive(bar, index, *cta) -> _Call:
    """``T.ptx_mbarrier_arrive(bar, index[, cta])``: arrive at barrier ``bar[index]`` (of CTA ``cta`` of the cluster).

    Parameters
    ----------
    bar : Var
        A shared ``uint64`` array.
    index : PrimExpr
        The barrier.
    *cta : PrimExpr
        The cluster rank whose barrier it is (default: this CTA's).

    Returns
    -------
    Call
        The call.
    """
    return _call("int32", "ptx_mbarrier_arrive", bar, index, *cta)


def ptx_mbarrier_arrive_expect_tx(bar, index, nbytes) -> _Call:
    """``T.ptx_mbarrier_arrive_expect_tx(bar, index, bytes)``: arrive at ``bar[index]`` and expect ``bytes`` of
    asynchronous copies before its phase completes.

    Parameters
    ----------
    bar : Var
        A shared ``uint64`` array.
    index, nbytes : PrimExpr
        The barrier and the transaction bytes.

    Returns
    -------
    Call
        The call.
    """
    return _call("int32", "ptx_mbarrier_arrive_expect_tx", bar, index, nbytes)


def ptx_mbarrier_wait(bar, index, parity) -> _Call:
    """``T.ptx_mbarrier_wait(bar, index, parity)``: wait until the phase of ``bar[index]`` with ``parity`` completes.

    Parameters
    ----------
    bar : Var
        A shared ``uint64`` array.
    index, parity : PrimExpr
        The barrier and the phase parity (0 or 1).

    Returns
    -------
    Call
        The call.
    """
    return _call("int32", "ptx_mbarrier_wait", bar, index, parity)


def ptx_setmaxnreg(increase: bool, count: int) -> _Call:
    """``T.ptx_setmaxnreg(increase, count)``: this warpgroup's register budget raised (or lowered) to ``count``.

    Parameters
    ----------
    increase : bool
        Raise (``setmaxnreg.inc``) or lower (``.dec``).
    count : int
        Registers per thread, a multiple of 8 in 24..256.

    Returns
    -------
    Call
        The call.
    """
    return _call("int32", "ptx_setmaxnreg", _E.IntImm("int32", int(bool(increase))), _E.IntImm("int32", count))


# -- operand-less calls ------------------------------------------------------------------------

ptx_wgmma_fence = _nullary("ptx_wgmma_fence", "``T.ptx_wgmma_fence()``: order the warpgroup's register accesses "
                                              "before the ``wgmma`` that follow.")
ptx_wgmma_commit_group = _nullary("ptx_wgmma_commit_group", "``T.ptx_wgmma_commit_group()``: close the group of "
                                                            "the ``wgmma.mma_async`` issued so far.")
ptx_commit_group = _nullary("ptx_commit_group", "``T.ptx_commit_group()``: close the group of the ``cp.async`` "
                                                "copies issued so far (sm_80+).")
ptx_cluster_sync = _nullary("ptx_cluster_sync", "``T.ptx_cluster_sync()``: a barrier of all threads of the thread "
                                                "block cluster (``barrier.cluster``).")
ptx_cluster_rank = _nullary("ptx_cluster_rank", "``T.ptx_cluster_rank()``: this CTA's rank in its cluster "
                                                "(``%cluster_ctarank``).")
