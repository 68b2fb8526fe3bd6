"""Tensorization candidates (the TensorIR paper's Section 4): read a block and an intrinsic's
``desc`` as einsums, map the block's iterators onto the intrinsic's, and rewrite the block
(reindex, layouts, padding, tiling) so its innermost loops are the intrinsic's.

- ``einsum``: a block or desc as an einsum (operands, iterators, roles);
- ``candidate``: the data of one candidate (``TensorizeCandidate``, ``IterMapping``);
- ``generate``: ``get_tensorize_candidates(sch, block, intrin_name)``;
- ``apply``: ``apply_candidate(sch, candidate)`` -> the loop to ``sch.tensorize``.
"""
from .apply import apply_candidate
from .candidate import CandidateList, IterMapping, TensorizeCandidate
from .generate import get_tensorize_candidates

__all__ = ["get_tensorize_candidates", "apply_candidate", "TensorizeCandidate", "IterMapping", "CandidateList"]
