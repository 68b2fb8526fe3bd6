"""Run a GPU schedule on the CPU: thread-bound loops become serial loops.

``emulate_gpu(mod)`` returns ``mod`` with every loop bound to ``blockIdx``/``threadIdx``/``vthread``
made serial; shared, local and warp-level (``wmma.*``) buffers stay as they are and are allocated like
any local buffer. A schedule whose cooperative fetches are computed at a loop outside the thread
loops (as GPU schedules are) then computes the same numbers serially, so ``tvm.build(emulate_gpu(mod),
target="llvm")`` checks a GPU schedule's numerics on a machine without a GPU. Warp-level intrinsics
are emulated by leaving their blocks untensorized (blockize them instead): their bodies are the
intrinsics' descriptions. Alternatively ``run_warp_emulated`` runs a program *tensorized* with the
inline-PTX ``ldmatrix``/``mma.sync`` intrinsics in the Python interpreter, each warp instruction
executed by the lane-level model of ``gpu_ptx_model`` once all 32 lanes have issued it.

>>> from tensorize import te, tir
>>> A = te.placeholder((64,), name="A")
>>> B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
>>> sch = tir.Schedule(te.create_prim_func([A, B]))
>>> bx, tx = sch.split(sch.get_loops(sch.get_block("B"))[0], [None, 32])
>>> sch.bind(bx, "blockIdx.x"); sch.bind(tx, "threadIdx.x")
>>> "thread_binding" in emulate_gpu(sch.mod).script()
False
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.function import IRModule, PrimFunc
from ..ir.functor import calls_op, ir_transform, post_order_visit
from ..ir.mutator import StmtExprMutator
from ..ir.op import call_extern
from .gpu_ptx_model import WarpModel
from .inject_software_pipeline import EXPLICIT_SYNC, LAG_REGION
from .swizzle_shared import SWIZZLE

_WARP_CALLS = ("tir.ptx_ldmatrix", "tir.ptx_mma", "tir.ptx_wgmma", "tir.ptx_wgmma_fence", "tir.ptx_wgmma_commit_group",
               "tir.ptx_wgmma_wait_group", "tir.ptx_tma_load")


def _serial(node):
    if isinstance(node, S.For) and node.kind == S.ForKind.THREAD_BINDING:
        return S.For(node.loop_var, node.min, node.extent, S.ForKind.SERIAL, node.body, None, node.annotations)
    return None


def emulate_gpu(mod):
    """``mod`` (an IRModule, PrimFunc or Schedule's module) with thread-bound loops made serial.

    Parameters
    ----------
    mod : IRModule, PrimFunc or Schedule
        A GPU program (anything with ``.mod`` is unwrapped).

    Returns
    -------
    IRModule or PrimFunc
        The same kind as given: the program for a CPU, its ``blockIdx``/``threadIdx`` loops serial.
    """
    mod = getattr(mod, "mod", mod)
    if isinstance(mod, PrimFunc):
        return mod.with_body(ir_transform(mod.body, None, _serial, ["tir.For"]))
    functions = {gv: (f.with_body(ir_transform(f.body, None, _serial, ["tir.For"])) if isinstance(f, PrimFunc) else f)
                 for gv, f in mod.functions.items()}
    return IRModule(functions, mod.attrs, mod.global_infos)


def _pointer(data, offset):
    annotation = getattr(data, "type_annotation", None)
    dtype = getattr(annotation, "element_dtype", "float32")
    ptype = E.Call(dtype, E.Op.get("tir.type_annotation"), ())
    return E.Call("handle", E.Op.get("tir.tvm_access_ptr"), (ptype, data, offset, E.IntImm("int32", 1),
                                                             E.IntImm("int32", 3)))


def _warp_call(node):
    if not (isinstance(node, E.Call) and node.op.name in _WARP_CALLS):
        return None
    a = list(node.args)
    if node.op.name == "tir.ptx_ldmatrix":  # trans, num, type, local, local_off, smem, smem_off
        return call_extern(node.dtype, "ptx_ldmatrix", a[0], a[1], a[2], _pointer(a[3], a[4]), _pointer(a[5], a[6]))
    if node.op.name == "tir.ptx_wgmma":  # shape, types, a_ptr, a_lbo, a_sbo, b_ptr, b_lbo, b_sbo, c, c_off[, swz]
        return call_extern(node.dtype, "ptx_wgmma", *a[:10], _pointer(a[10], a[11]), *a[12:])
    if node.op.name == "tir.ptx_tma_load":  # dst, src, offset, ld, rows, cols, swizzle: one copy, not per lane
        return call_extern(node.dtype, "ptx_tma_load", _pointer(a[0].args[1], a[0].args[2]), _pointer(a[1], a[2]),
                           *a[3:7])
    if node.op.name in ("tir.ptx_wgmma_fence", "tir.ptx_wgmma_commit_group", "tir.ptx_wgmma_wait_group"):
        return call_extern(node.dtype, node.op.name[len("tir."):], *a)
    # shape, a_layout, b_layout, a_type, b_type, c_type, a, a_off, b, b_off, c, c_off, saturate
    return call_extern(node.dtype, "ptx_mma", *a[:6], _pointer(a[6], a[7]), _pointer(a[8], a[9]),
                       _pointer(a[10], a[11]))


def _fission(node):
    """One lane loop per warp instruction, so the 32 lanes of one instruction are issued one after another
    (only lane loops: a serial loop, a software pipeline's, keeps its statements in program order)."""
    if not (isinstance(node, S.For) and node.kind == S.ForKind.THREAD_BINDING and node.thread_binding is not None
            and node.thread_binding.thread_tag == "threadIdx.x" and isinstance(node.body, S.SeqStmt)
            and calls_op(node.body, _WARP_CALLS)):
        return None
    return S.SeqStmt([S.For(node.loop_var, node.min, node.extent, node.kind, item, node.thread_binding,
                            node.annotations) for item in node.body.seq])


def _wait(n: int):
    return S.Evaluate(call_extern("int32", "ptx_wgmma_wait_group", E.IntImm("int32", n)))


def _writes_shared(stmt) -> bool:
    found = []
    post_order_visit(stmt, lambda n: found.append(n) if (isinstance(n, S.BufferStore) and n.buffer.scope().startswith(
        "shared")) or (isinstance(n, E.Call) and n.op.name == "tir.ptx_tma_load") else None)
    return bool(found)


class _BarrierWaits(StmtExprMutator):
    """Writes out the ``wgmma.wait_group`` the CUDA code generator puts before each barrier: around every
    statement that writes shared memory (outside a software pipeline, whose barriers are explicit), and
    before a pipeline's explicit barriers, leaving its ``pipeline_compute_lag`` groups in flight."""

    def __init__(self):
        self.lag, self.explicit = 0, False

    def visit_attr_stmt_(self, op):
        outer = self.lag, self.explicit
        if op.attr_key == LAG_REGION:
            self.lag = int(op.value.value)
        self.explicit = self.explicit or op.attr_key == EXPLICIT_SYNC
        try:
            return super().visit_attr_stmt_(op)
        finally:
            self.lag, self.explicit = outer

    def visit_evaluate_(self, op):
        if isinstance(op.value, E.Call) and op.value.op.name == "tir.tvm_storage_sync":
            return S.SeqStmt([_wait(self.lag), op])
        return op

    def visit_seq_stmt_(self, op):
        items = []
        for item in op.seq:
            fetch = not self.explicit and _writes_shared(item)
            items.extend([_wait(0)] * fetch + [self.visit_stmt(item)] + [_wait(0)] * fetch)
        return S.SeqStmt(items)


def _warp_body(body):
    if calls_op(body, "tir.ptx_wgmma"):
        body = _BarrierWaits().visit_stmt(body)
    body = ir_transform(body, None, _fission, ["tir.For"])
    body = ir_transform(body, None, _serial, ["tir.For"])
    return ir_transform(body, None, _warp_call, ["tir.Call"])


def emulate_warp_calls(mod):
    """``mod`` with thread loops serial and each ``ptx_ldmatrix``/``ptx_mma`` made an extern call on pointers.

    Each lane loop holding several warp instructions is split into one loop per instruction (the
    instructions of one lane touch disjoint registers, so the order does not change the result). In a
    program that issues ``wgmma`` the waits the CUDA code generator puts before its barriers are written
    out (``ptx_wgmma_wait_group``), so the asynchronous model runs each group where the GPU would finish it.

    Parameters
    ----------
    mod : IRModule, PrimFunc or Schedule
        A program tensorized with the ``mma_*`` intrinsics (lowered or not).

    Returns
    -------
    IRModule or PrimFunc
        The program for ``tensorize.codegen.python.run_prim_func`` with ``WarpModel().externs()``.
    """
    mod = getattr(mod, "mod", mod)
    if isinstance(mod, PrimFunc):
        return mod.with_body(_warp_body(mod.body))
    functions = {gv: (f.with_body(_warp_body(f.body)) if isinstance(f, PrimFunc) else f)
                 for gv, f in mod.functions.items()}
    return IRModule(functions, mod.attrs, mod.global_infos)


def _stores_hardware_layouts(mod) -> bool:
    """Whether ``mod`` has shared tiles stored in the hardware's swizzled layout (a copy block annotated
    ``swizzle_bytes``, or a TMA copy): the model then reads them after lowering, as the GPU does."""
    found = []
    for func in ([mod] if isinstance(mod, PrimFunc) else mod.functions.values()):
        if isinstance(func, PrimFunc):
            post_order_visit(func.body, lambda n: found.append(n) if (isinstance(n, S.Block) and SWIZZLE in
                                                                      n.annotations)
                             or (isinstance(n, E.Call) and n.op.name == "tir.ptx_tma_load") else None)
    return bool(found)


def run_warp_emulated(mod, *arrays) -> WarpModel:
    """Run a program tensorized with warp-level PTX intrinsics on numpy ``arrays`` (outputs written in place).

    A program whose shared tiles are swizzled (``SwizzleSharedLayout``) is lowered first: the model reads
    them through the hardware's address permutation, which only the lowered accesses follow.

    Parameters
    ----------
    mod : IRModule, PrimFunc or Schedule
        The program.
    *arrays : numpy.ndarray
        One per buffer parameter.

    Returns
    -------
    WarpModel
        The model that executed the warp instructions (``executed`` counts them).
    """
    from ..codegen.python import run_prim_func

    mod = getattr(mod, "mod", mod)
    if _stores_hardware_layouts(mod):  # swizzled tiles are read as the hardware does: after the layout pass
        from .pipeline import run_lowering_phases

        mod = run_lowering_phases(mod if isinstance(mod, IRModule) else IRModule({"main": mod}))
    model = WarpModel()
    run_prim_func(emulate_warp_calls(mod), *arrays, externs=model.externs())
    model.flush()
    if model.pending:
        raise RuntimeError(f"warp instructions issued by fewer than all their threads: {sorted(model.pending)}")
    return model
