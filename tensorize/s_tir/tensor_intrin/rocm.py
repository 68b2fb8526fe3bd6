"""``tvm.s_tir.tensor_intrin.rocm``: TVM's names of the AMD GPU intrinsics.

This project registers no ROCm intrinsics; the names exist so code written for TVM imports, and
looking one up raises ``TensorIntrin.get``'s error naming it.

>>> from tensorize.s_tir.tensor_intrin.rocm import AMDGPU_SDOT4_INTRIN
>>> AMDGPU_SDOT4_INTRIN
'sdot4'
"""
AMDGPU_SDOT4_INTRIN = "sdot4"
