"""``tvm.s_tir.tensor_intrin.x86``: TVM's names of the x86 dot-product intrinsics.

The intrinsics themselves are registered by the ``intrinsics`` plugin (``intrinsics.x86``), which
``TensorIntrin.get`` loads on first look-up; these are the names TVM's tests import.

>>> from tensorize.s_tir.tensor_intrin.x86 import VNNI_DOT_16x4_INTRIN
>>> VNNI_DOT_16x4_INTRIN
'dot_16x4_vnni'
"""
VNNI_DOT_16x4_INTRIN = "dot_16x4_vnni"
AVX512_DOT_16x4_INTRIN = "dot_16x4_avx512"
