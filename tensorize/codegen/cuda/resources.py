"""What each CUDA kernel of a lowered module needs: grid, threads per block, shared memory, registers.

>>> import tensorize as tvm
>>> from tensorize import te, tir
>>> A = te.placeholder((256,), name="A")
>>> B = te.compute((256,), lambda i: A[i] * 2.0, name="B")
>>> sch = tir.Schedule(te.create_prim_func([A, B]))
>>> bx, tx = sch.split(sch.get_loops(sch.get_block("B"))[0], [None, 64])
>>> sch.bind(bx, "blockIdx.x"); sch.bind(tx, "threadIdx.x")
>>> [(k.grid, k.block, k.shared_bytes) for k in kernel_resources(tvm.lower(sch.mod))]
[((4, 1, 1), (64, 1, 1), 0)]
"""
from __future__ import annotations

from dataclasses import dataclass

from ...ir import dtype as dt
from ...ir import expr as E
from ...ir import stmt as S
from ...ir.function import PrimFunc
from ...ir.functor import post_order_visit
from ...transform.warp_specialize import inject_warp_specialization
from . import _has_thread_binding, _top_level
from .source import _Scan

__all__ = ["KernelResources", "kernel_resources"]


@dataclass(frozen=True)
class KernelResources:
    """One kernel's launch shape and memory: ``shared_bytes`` per block, ``local_bytes`` per thread
    (register arrays, WMMA fragments and warp buffers counted per lane)."""

    name: str
    grid: tuple
    block: tuple
    shared_bytes: int
    local_bytes: int

    @property
    def threads(self) -> int:
        """Threads per block."""
        return self.block[0] * self.block[1] * self.block[2]


def _bytes(dtype: str) -> int:
    return max(1, dt.bits_of(dtype) * dt.lanes_of(dtype) // 8)


def _memory(stmt) -> tuple[int, int]:
    shared = local = 0

    def visit(node):
        nonlocal shared, local
        if not isinstance(node, S.Allocate):
            return
        size = 1
        for extent in node.extents:
            size *= int(extent.value) if isinstance(extent, E.IntImm) else 1 << 20
        scope = getattr(getattr(node.buffer_var, "type_annotation", None), "storage_scope", "global")
        nbytes = size * _bytes(node.dtype)
        if scope.startswith("shared"):
            shared += nbytes
        elif scope.startswith("wmma.") or scope == "warp":
            local += nbytes // 32
        elif scope == "warp.group":
            local += nbytes // 128
        elif scope == "local":
            local += nbytes

    post_order_visit(stmt, visit)
    return shared, local


def kernel_resources(mod) -> list[KernelResources]:
    """The kernels of a lowered module (each top-level thread-bound nest of each PrimFunc), in launch order.

    Parameters
    ----------
    mod : IRModule
        A lowered module (warp-specialised loops are counted as the code generator splits them).

    Returns
    -------
    list of KernelResources
        One per kernel; a statement outside any thread-bound loop gives a kernel with block (0, 0, 0).
    """
    out = []
    for gv, func in mod.functions.items():
        if not isinstance(func, PrimFunc):
            continue
        name = func.attrs.get("global_symbol", gv.name_hint)
        func = inject_warp_specialization(func)  # its producer warpgroup and versioned tiles, as the kernels get
        for item in _top_level(func.body):
            if isinstance(item, S.Evaluate) and not hasattr(item.value, "op"):
                continue
            kname = f"{name}_kernel" + (f"_{len(out)}" if out else "")
            if not _has_thread_binding(item):
                out.append(KernelResources(kname, (0, 0, 0), (0, 0, 0), 0, 0))
                continue
            ext = _Scan(item).extents
            shared, local = _memory(item)
            out.append(KernelResources(kname, tuple(ext.get(f"blockIdx.{a}", 1) for a in "xyz"),
                                       tuple(ext.get(f"threadIdx.{a}", 1) for a in "xyz"), shared, local))
    return out
