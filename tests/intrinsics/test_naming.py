"""One naming scheme for every intrinsic, and the aliases that keep earlier and TVM's names working."""
import pytest

import intrinsics  # noqa: F401  (registers the families)
import tensorize as tvm
from intrinsics.naming import check_name, intrin_name, parse_intrin_name, registered_names
from search.context import available_intrinsics
from tensorize.ir.tensor_intrin import IntrinMeta, TensorIntrin
from tensorize.script import tir as T
from tensorize.target import Target
from tests.workloads import int8_gemm

# alias -> registered name: TVM's own names first, then this project's earlier spellings.
ALIASES = {
    "dot_16x4_vnni": "dot_16x4_u8i8s32_vnni",
    "dot_16x4_avx512": "dot_16x4_u8i8s32_avx512_sat",
    "dot_4x4_i8i8s32_sdot": "dot_4x4_i8i8s32_sdot",
    "dot_4x4_u8u8u32_udot": "dot_4x4_u8u8u32_udot",
    "dot_4x4_i8i8s32_neon": "dot_4x4_i8i8s32_neon",
    "fma_16_f32_avx512": "fma_16_f32f32f32_avx512",
    "dot_16x2_bf16_avx512": "dot_16x2_bf16bf16f32_avx512bf16",
}


def test_every_registered_name_follows_the_scheme_and_matches_its_desc():
    names = registered_names()
    # x86 AVX-512, AVX2 and AVX-VNNI, lane-wise dots, Arm NEON/i8mm, SVE at three vector lengths, AMX
    # (5 instructions x 7 blockings, bf16's whole-K 2 x 2 block, and 5 instructions x 1 blocking with A packed)
    assert len(names) == 5 + 4 + 3 + 5 + 6 + 5 * 8 + 2 + 5
    assert set(names) <= set(TensorIntrin.list_names())
    for name in names:
        parts = check_name(TensorIntrin.get(name))  # raises on a shape or dtype the desc contradicts
        assert intrin_name(*parts) == name


@pytest.mark.parametrize("alias, name", sorted(ALIASES.items()))
def test_old_and_tvm_names_resolve_to_the_same_intrinsic(alias, name):
    intrin = TensorIntrin.get(alias)
    assert intrin is TensorIntrin.get(name) and intrin.name == name


def test_aliases_are_not_listed_or_offered_twice():
    names = TensorIntrin.list_names()
    assert "dot_16x4_vnni" not in names and "dot_16x4_u8i8s32_vnni" in names
    assert TensorIntrin.aliases()["dot_16x4_vnni"] == "dot_16x4_u8i8s32_vnni"
    offered = available_intrinsics(Target("llvm -mcpu=znver4"))
    assert "dot_16x4_u8i8s32_vnni" in offered and "dot_16x4_vnni" not in offered
    assert {"fma_8_f32f32f32_avx2", "dot_8x4_u8i8s32_avx2"} <= set(offered)
    assert not {"dot_16x4_u8i8s32_avx512_sat", "dot_8x4_u8i8s32_avx2_sat"} & set(offered)  # inexact: not searched
    assert set(available_intrinsics(Target("llvm -mcpu=haswell"))) >= {"fma_8_f32f32f32_avx2",
                                                                       "dot_8x4_u8i8s32_avx2"}
    assert "dot_16x4_u8i8s32_vnni" not in available_intrinsics(Target("llvm -mcpu=haswell"))


def test_tensorize_by_alias_inserts_the_intrinsic_impl():
    sch = tvm.tir.Schedule(int8_gemm(16, 32, 16))
    block = sch.get_block("C")
    sch.transform_layout(block, ("read", 1), lambda j, k: (j // 16, k // 4, j % 16, k % 4))
    i, j, k = sch.get_loops(block)
    j_o, j_i = sch.split(j, [None, 16])
    k_o, k_i = sch.split(k, [None, 4])
    sch.reorder(j_o, k_o, j_i, k_i)
    sch.tensorize(j_i, "dot_16x4_vnni")
    assert "llvm.x86.avx512.vpdpbusd.512" in sch.mod.script()
    replayed = tvm.tir.Schedule(int8_gemm(16, 32, 16))
    sch.trace.apply_to_schedule(replayed)  # the trace keeps the alias and replays
    assert "llvm.x86.avx512.vpdpbusd.512" in replayed.mod.script()


def test_intrin_name_and_parse_round_trip_and_reject_bad_names():
    assert intrin_name("matmul", (2, 2, 8), ("int8", "int8", "int32"), "smmla") == "matmul_2x2x8_i8i8s32_smmla"
    parts = parse_intrin_name("dot_16x2_bf16bf16f32_avx512bf16")
    assert parts.shape == (16, 2) and parts.dtypes == ("bfloat16", "bfloat16", "float32") and parts.variant is None
    for bad in ("dot_16x4_vnni", "dot_16x4_u8i8_vnni", "dot_16x4_u8i8x32_vnni", "dot_16x4_u8i8s32_vnni_fast"):
        with pytest.raises(ValueError, match="dot_16x4_u8i8s32_vnni|unknown"):
            parse_intrin_name(bad)
    with pytest.raises(ValueError, match="dtypes of A, B and C"):
        intrin_name("dot", (4, 4), ("int8", "int8", "int128"), "sdot")
    with pytest.raises(ValueError, match="unknown intrinsic op"):
        intrin_name("conv", (4,), ("int8", "int8", "int32"), "sdot")


def test_check_name_rejects_a_name_its_desc_contradicts():
    intrin = TensorIntrin.get("dot_8x4_u8i8s32_avx2")
    with pytest.raises(ValueError, match=r"rename it \('dot_8x4_u8i8s32_avx2'\)"):
        check_name(intrin, "dot_16x4_u8i8s32_avx2")
    with pytest.raises(ValueError, match="operand dtypes"):
        check_name(intrin, "dot_8x4_i8i8s32_avx2")


@T.prim_func
def _sum4(a: T.handle, c: T.handle):
    A = T.match_buffer(a, (4,), "float32", offset_factor=1)
    C = T.match_buffer(c, (1,), "float32", offset_factor=1)
    with T.block("root"):
        T.reads(C[0:1], A[0:4])
        T.writes(C[0:1])
        for k in range(4):
            with T.block("update"):
                vk = T.axis.reduce(4, k)
                C[0] = C[0] + A[vk]


def test_register_alias_guards():
    unsearched = IntrinMeta(target_kind="none")  # no target supports it: the search never sees these
    first = TensorIntrin.register("test_alias_target_a", _sum4, _sum4, override=True, meta=unsearched)
    second = TensorIntrin.register("test_alias_target_b", _sum4, _sum4, override=True, meta=unsearched)
    TensorIntrin.register_alias("test_alias", "test_alias_target_a", override=True)
    assert TensorIntrin.get("test_alias") is first
    with pytest.raises(ValueError, match="no intrinsic named 'test_missing'"):
        TensorIntrin.register_alias("test_alias_2", "test_missing")
    with pytest.raises(ValueError, match="an intrinsic is registered under that name"):
        TensorIntrin.register_alias("test_alias_target_b", "test_alias_target_a")
    with pytest.raises(ValueError, match="already an alias of 'test_alias_target_a'"):
        TensorIntrin.register_alias("test_alias", "test_alias_target_b")
    TensorIntrin.register_alias("test_alias", "test_alias_target_b", override=True)
    assert TensorIntrin.get("test_alias") is second
    with pytest.raises(ValueError, match="is an alias of"):
        TensorIntrin.register("test_alias", _sum4, _sum4)
    own = TensorIntrin.register("test_alias", _sum4, _sum4, override=True, meta=unsearched)  # a real intrinsic replaces the alias
    assert TensorIntrin.get("test_alias") is own and "test_alias" not in TensorIntrin.aliases()
