"""``tvm.s_tir.tensor_intrin.hexagon``: TVM's names of the Hexagon HVX intrinsics.

This project registers no Hexagon intrinsics; the names exist so code written for TVM imports, and
looking one up raises ``TensorIntrin.get``'s error naming it.

>>> from tensorize.s_tir.tensor_intrin.hexagon import VRMPY_u8u8i32_INTRIN
>>> VRMPY_u8u8i32_INTRIN
'dot_32x4_u8u8i32_vrmpy'
"""
VRMPY_u8u8i32_INTRIN = "dot_32x4_u8u8i32_vrmpy"
VRMPY_u8i8i32_INTRIN = "dot_32x4_u8i8i32_vrmpy"
VDMPY_i16i16i32_INTRIN = "dot_32x2_i16i16i32_vdmpy"
