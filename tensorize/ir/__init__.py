"""IR nodes, modules and structural comparison (``tvm.ir``)."""
from . import dtype
from .buffer import Buffer, decl_buffer
from .expr import (
    IterVar, PointerType, PrimExpr, Range, Var, SizeVar, IntImm, FloatImm, StringImm, Op, convert, make_const,
)
from .function import GlobalVar, IRModule, PrimFunc
from .node import Node, Span
from .structural import assert_structural_equal, structural_equal, structural_hash
from . import module  # noqa: F401  (tvm.ir.module.IRModule)
from . import functor  # noqa: F401  (installs substitute for CommReducer)

PrimType = str
from .serialization import SerializationError, load_json, save_json  # noqa: E402
