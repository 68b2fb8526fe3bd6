"""Run a GPU schedule on the CPU: thread-bound loops become serial loops.

``emulate_gpu(mod)`` returns ``mod`` with every loop bound to ``blockIdx``/``threadIdx``/``vthread``
made serial; shared, local and warp-level (``wmma.*``) buffers stay as they are and are allocated like
any local buffer. A schedule whose cooperative fetches are computed at a loop outside the thread
loops (as GPU schedules are) then computes the same numbers serially, so ``tvm.build(emulate_gpu(mod),
target="llvm")`` checks a GPU schedule's numerics on a machine without a GPU. Warp-level intrinsics
are emulated by leaving their blocks untensorized (blockize them instead): their bodies are the
intrinsics' descriptions.

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

from ..ir import stmt as S
from ..ir.function import IRModule, PrimFunc
from ..ir.functor import ir_transform


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
