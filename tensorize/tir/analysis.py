"""``tvm.tir.analysis``: analyses of TensorIR, re-exported from ``tensorize.analysis``."""
from ..analysis import RULES, WellFormedError, verify_well_formed  # noqa: F401
