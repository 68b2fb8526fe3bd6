"""``tvm.tir.stmt_functor``: visitors and rewriters of statements."""
from ..ir.functor import ir_transform, post_order_visit, substitute, StmtExprMutator, StmtExprVisitor  # noqa: F401
