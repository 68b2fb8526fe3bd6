"""``tvm.s_tir.tensor_intrin.arm_cpu``: TVM's names of the Arm dot-product intrinsics.

The Arm intrinsics are registered by the ``intrinsics`` plugin (``intrinsics.arm``). The ``DP4A_*``
names are TVM's generic 4-lane dot intrinsics, which this project does not provide: looking one up
raises ``TensorIntrin.get``'s error naming it.

>>> from tensorize.s_tir.tensor_intrin.arm_cpu import ARM_DOT_4x4_i8_SDOT_INTRIN
>>> ARM_DOT_4x4_i8_SDOT_INTRIN
'dot_4x4_i8i8s32_sdot'
"""
ARM_DOT_4x4_i8_SDOT_INTRIN = "dot_4x4_i8i8s32_sdot"
ARM_DOT_4x4_u8_UDOT_INTRIN = "dot_4x4_u8u8u32_udot"
ARM_DOT_4x4_i8_NEON_INTRIN = "dot_4x4_i8i8s32_neon"
DP4A_S8S8S32_INTRIN = "dp4a_s8s8s32"
DP4A_S8U8S32_INTRIN = "dp4a_s8u8s32"
DP4A_U8S8S32_INTRIN = "dp4a_u8s8s32"
DP4A_U8U8U32_INTRIN = "dp4a_u8u8u32"
