"""Tensor intrinsics for the project's hardware families.

Importing this package registers every family with ``tvm.tir.TensorIntrin`` (each module registers
its own intrinsics on import). ``TensorIntrin.get`` also loads the families on demand through the
``tensorize.intrinsics`` entry-point group, so an explicit import is only needed from a source
checkout that was not installed.

Families: ``x86`` (AVX-512: VNNI, BW, F, BF16), ``x86_avx2`` (AVX2, FMA, AVX-VNNI), ``x86_lanedot``
(lane-wise int8 dots for depthwise convolutions; the x86 ones share descs from ``x86_desc`` and the
exact u8 x s8 impl of ``x86_u8s8``), ``x86_amx`` (AMX tiles: int8 and bf16; hand schedules
in ``x86_amx_schedule``, a numpy model of the tiles in ``x86_amx_model``), ``arm`` (NEON dotprod, i8mm, SVE).

Names follow one scheme (``intrinsics.naming``): ``<op>_<shape>_<dtypes>_<isa>[_<variant>]``, e.g.
``dot_16x4_u8i8s32_vnni``: a dot product of 16 lanes x 4, uint8 x int8 -> int32, on AVX512-VNNI.
Earlier names and TVM's (``dot_16x4_vnni``) are aliases of the same intrinsic:

===================================  ==================================  ==================
name                                 aliases                             features
===================================  ==================================  ==================
dot_16x4_u8i8s32_vnni                dot_16x4_vnni                       avx512vnni
dot_16x4_u8i8s32_avx512_sat          dot_16x4_avx512                     avx512bw
dot_16x4_u8i8s32_avx512                                                  avx512bw
fma_16_f32f32f32_avx512              fma_16_f32_avx512                   avx512f
dot_16x2_bf16bf16f32_avx512bf16      dot_16x2_bf16_avx512                avx512bf16
fma_8_f32f32f32_avx2                                                     fma
dot_8x4_u8i8s32_avx2                                                     avx2
dot_8x4_u8i8s32_avx2_sat                                                 avx2
dot_8x4_u8i8s32_avxvnni                                                  avxvnni
lanedot_16x4_u8i8s32_vnni                                                avx512vnni
lanedot_8x4_u8i8s32_avxvnni                                              avxvnni
lanedot_8x4_u8i8s32_avx2                                                 avx2
matmul_16x16x64_u8i8s32_amx          (and i8i8, i8u8, u8u8)              amx-tile, amx-int8
matmul_16x16x32_bf16bf16f32_amx                                          amx-tile, amx-bf16
matmul_32x32x{256,1024}_..._amx    (2x2 accumulator tiles, 4|16 K steps) as above
dot_4x4_i8i8s32_sdot                 (TVM's name)                        dotprod
dot_4x4_u8u8u32_udot                 (TVM's name)                        dotprod
dot_4x4_i8i8s32_neon                 (TVM's name)                        (baseline)
matmul_2x2x8_i8i8s32_smmla                                               i8mm
matmul_2x2x8_u8u8u32_ummla                                               i8mm
dot_{4,8,16}x4_{i8i8s32,u8u8u32}_sve{128,256,512}                        sve
===================================  ==================================  ==================

``_sat`` intrinsics saturate int16 pair sums (``meta.extra["saturates_int16"]``): exact only for
part of the input range (e.g. uint8 operands below 128).

>>> import intrinsics
>>> import tensorize as tvm
>>> tvm.tir.TensorIntrin.get("dot_16x4_vnni").meta.features
('avx512vnni',)
>>> tvm.tir.TensorIntrin.get("dot_16x4_vnni") is tvm.tir.TensorIntrin.get("dot_16x4_u8i8s32_vnni")
True
"""
import importlib
import logging

logger = logging.getLogger(__name__)

FAMILIES = ("x86", "x86_avx2", "x86_lanedot", "x86_amx", "arm")

for _family in FAMILIES:
    try:
        importlib.import_module(f"{__name__}.{_family}")
    except ImportError as _err:  # a family still being written must not hide the others
        if getattr(_err, "name", None) != f"{__name__}.{_family}":
            raise
        logger.debug("intrinsic family %s is not available", _family)
