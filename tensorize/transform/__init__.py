"""Passes over TensorIR (``tvm.transform`` and ``tvm.tir.transform``) and the lowering pipeline.

Pass infrastructure: ``Pass``, ``module_pass``, ``prim_func_pass``, ``Sequential``, ``PassContext``
(see ``pass_infra``). Lowering passes carry TVM's names and are factories: ``Simplify()(mod)``.

The lowered form (the contract with code generation)
----------------------------------------------------
After ``tvm.lower`` (``run_lowering_phases``) a PrimFunc satisfies:

* no ``Block``/``BlockRealize`` remain; ``params``, ``buffer_map`` (the original shaped parameter
  buffers) and ``attrs`` are kept, and ``attrs["global_symbol"]`` is the function name;
* every ``BufferLoad``/``BufferStore`` has exactly one index (buffers with ``axis_separators`` keep one
  index per axis group) on a flat 1-D buffer view that shares ``data`` with the parameter or allocated
  buffer. The index already includes the buffer's ``elem_offset``; flat views have ``elem_offset == 0``,
  so the element address is ``data + index``;
* intermediate storage is ``Allocate(data_var, dtype, [size], True, body)``, usually with a
  ``DeclBuffer`` of the flat view directly inside (a declaration only: it emits no code);
* loops are ``For`` of kind SERIAL, PARALLEL, UNROLLED (only when the extent is not constant) or
  THREAD_BINDING (kept for GPU lowering); a VECTORIZED loop is expanded into vector code or, when that
  is impossible, becomes SERIAL; annotations are kept;
* vector code uses ``Ramp``/``Broadcast`` and vector dtypes (``"float32x8"``); a ``Ramp`` index loads or
  stores consecutive (or strided) lanes;
* scalars are ``LetStmt``; predicates and guards are ``IfThenElse``; calls stay ``Call``.

``run_prim_func(func, *arrays)`` (the Python backend, ``tensorize.codegen.python``) runs any PrimFunc,
before or after lowering.
"""
from .pass_infra import (  # noqa: F401
    FunctionPass, ModulePass, Pass, PassContext, PassInfo, PrimFuncPass, Sequential, module_pass, prim_func_pass,
    register_config_option,
)
from .common_subexpr_elim import CommonSubexprElimTIR  # noqa: F401
from .compact_buffer import CompactBufferAllocation  # noqa: F401
from .convert_blocks_to_opaque import ConvertBlocksToOpaque  # noqa: F401
from .flatten_buffer import FlattenBuffer  # noqa: F401
from .fuse_tile_zero import FuseTileZero  # noqa: F401
from .hoist_tile_config import HoistTileConfig  # noqa: F401
from .inject_software_pipeline import InjectSoftwarePipeline  # noqa: F401
from .lower_init_block import LowerInitBlock  # noqa: F401
from .lower_match_buffer import LowerMatchBuffer  # noqa: F401
from .lower_opaque_block import LowerOpaqueBlock  # noqa: F401
from .plan_buffer_allocation import PlanAndUpdateBufferAllocationLocation  # noqa: F401
from .promote_tile_accumulators import PromoteTileAccumulators  # noqa: F401
from .remove_no_op import RemoveNoOp  # noqa: F401
from .simplify import Simplify  # noqa: F401
from .storage_align import StorageAlign  # noqa: F401
from .storage_rewrite import StorageRewrite  # noqa: F401
from .unroll_loop import UnrollLoop  # noqa: F401
from .vectorize_loop import VectorizeLoop  # noqa: F401
from .pipeline import phase_passes, run_lowering_phases  # noqa: F401
from ..codegen.python import run_prim_func, compile_prim_func  # noqa: F401  (the Python backend, re-exported)


def PrintIR(header: str = "", show_meta_data: bool = False) -> Pass:  # noqa: N802 - TVM's pass name
    """A pass that logs the module (at INFO level) and returns it unchanged.

    Parameters
    ----------
    header : str
        A line logged before the module.
    show_meta_data : bool
        Accepted for TVM compatibility.

    Returns
    -------
    Pass
        The pass.
    """
    import logging

    def print_ir(mod, ctx):
        logging.getLogger(__name__).info("%s\n%s", header, mod)
        return mod

    return module_pass(print_ir, opt_level=0, name="PrintIR")


from .pass_infra import register_pass_factory as _register_pass_factory

for _factory in (CommonSubexprElimTIR, CompactBufferAllocation, ConvertBlocksToOpaque, FlattenBuffer,
                 FuseTileZero, HoistTileConfig, InjectSoftwarePipeline, LowerInitBlock,
                 LowerMatchBuffer, LowerOpaqueBlock, PlanAndUpdateBufferAllocationLocation, PromoteTileAccumulators,
                 RemoveNoOp, Simplify,
                 StorageAlign, StorageRewrite, UnrollLoop, VectorizeLoop, PrintIR):
    _register_pass_factory(_factory.__name__, _factory)
del _factory
