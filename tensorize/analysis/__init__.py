"""Analyses of TensorIR programs that lean on ``arith`` (``tvm.tir.analysis``).

``verify_well_formed`` checks the rules listed in ``verify.RULES`` (binding extents, undefined
variables, access regions, store dtypes, affine bindings, iterator scopes, duplicate definitions).
"""
from .verify import RULES, WellFormedError, verify_well_formed

__all__ = ["RULES", "WellFormedError", "verify_well_formed"]
