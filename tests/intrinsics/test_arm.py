"""ARM intrinsics: registration, the instructions in the assembly, and tensorized GEMMs run under qemu."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import intrinsics.arm as arm
import tensorize as tvm
from tensorize.errors import TVMError
from tensorize.ir.tensor_intrin import TensorIntrin
from tensorize.runtime.aarch64 import (INSTALL_HINT, Aarch64IllegalInstruction, Aarch64Runner, run_aarch64,
                                       tools_available)
from tensorize.script import tir as T
from tensorize.errors import TargetError
from tensorize.target import Target

FULL = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod,+i8mm,+sve -msve-vector-bits=256"
_SKIP = pytest.mark.skipif(not tools_available(), reason=f"needs qemu and an aarch64 cross compiler: {INSTALL_HINT}")


def needs_qemu(test):
    return pytest.mark.qemu(_SKIP(test))


# intrinsic name -> (assembly lines that must appear, reference of C from A, B, C)
def _dot_ref(a, b, c):
    return c + b @ a


def _mmla_ref(a, b, c):
    return c + a @ b.T


INTRINSICS = {
    "dot_4x4_i8i8s32_sdot": (["sdot\tv"], _dot_ref),
    "dot_4x4_u8u8u32_udot": (["udot\tv"], _dot_ref),
    "dot_4x4_i8i8s32_neon": (["smull\t", "saddlp\t", "addp\t"], _dot_ref),
    "matmul_2x2x8_i8i8s32_smmla": (["smmla\tv"], _mmla_ref),
    "matmul_2x2x8_u8u8u32_ummla": (["ummla\tv"], _mmla_ref),
    "dot_8x4_i8i8s32_sve256": (["sdot\tz"], _dot_ref),
    "dot_8x4_u8u8u32_sve256": (["udot\tz"], _dot_ref),
}


def _random(rng, shape, dtype, scale=1):
    info = np.iinfo(dtype)
    return (rng.integers(info.min, info.max + 1, shape) // scale).astype(dtype)


def _impl_args(intrin, rng):
    buffers = [intrin.impl.buffer_map[p] for p in intrin.impl.params]
    shapes = [tuple(int(s) for s in b.shape) for b in buffers]
    a, b = (_random(rng, s, buf.dtype) for s, buf in zip(shapes[:2], buffers[:2]))
    c = _random(rng, shapes[2], buffers[2].dtype, scale=8)  # room for the accumulation
    return a, b, c


@pytest.fixture(scope="module")
def impl_modules():
    return {name: tvm.build(TensorIntrin.get(name).impl, target=FULL) for name in INTRINSICS}


# -- registration ---------------------------------------------------------------------------------
def test_registered_with_metadata():
    sdot = TensorIntrin.get("dot_4x4_i8i8s32_sdot")
    assert sdot.meta.arch == "aarch64" and sdot.meta.features == ("dotprod",)
    assert [(it.extent, it.kind) for it in sdot.meta.iters] == [(4, "S"), (4, "R")]
    assert [(o.dtype, o.shape, o.written) for o in sdot.meta.operands] == [
        ("int8", (4,), False), ("int8", (4, 4), False), ("int32", (4,), True)]
    smmla = TensorIntrin.get(arm.ARM_SMMLA_2x2x8_INTRIN)
    assert smmla.meta.features == ("i8mm",)
    assert [(it.extent, it.kind) for it in smmla.meta.iters] == [(2, "S"), (2, "S"), (8, "R")]
    sve = TensorIntrin.get(arm.sve_dot_intrin_name(512))
    assert sve.name == "dot_16x4_i8i8s32_sve512" and sve.meta.extra["sve_vector_bits"] == 512
    assert TensorIntrin.get("dot_4x4_u8u8u32_udot").meta.operands[2].dtype == "uint32"


def test_supported_by_follows_target_features():
    sdot = TensorIntrin.get("dot_4x4_i8i8s32_sdot").meta
    assert sdot.supported_by(Target("llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod"))
    assert not sdot.supported_by(Target("llvm -mtriple=aarch64-linux-gnu -mattr=+neon"))
    with pytest.raises(TargetError, match="dotprod"):  # an AArch64 feature on x86 is refused, not ignored
        Target("llvm -mtriple=x86_64-linux-gnu -mattr=+dotprod")
    assert TensorIntrin.get("dot_4x4_i8i8s32_neon").meta.supported_by(Target("llvm -mtriple=aarch64-linux-gnu"))


# -- code generation ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(INTRINSICS))
def test_impl_assembly_has_the_instruction(impl_modules, name):
    asm = impl_modules[name].get_source("asm")
    for needle in INTRINSICS[name][0]:
        assert needle in asm, f"{name}: {needle!r} not in\n{asm}"


def test_sve_needs_a_fixed_vector_length():
    impl = TensorIntrin.get("dot_8x4_i8i8s32_sve256").impl
    with pytest.raises(TVMError, match="-msve-vector-bits=256"):
        tvm.build(impl, target="llvm -mtriple=aarch64-linux-gnu -mattr=+sve")


def test_sve_lanes_must_fill_the_registers():
    impl = TensorIntrin.get("dot_8x4_i8i8s32_sve256").impl  # 8 lanes of int32 = 256 bits
    with pytest.raises(TVMError, match="has 256 bits but an SVE register has 512.*16 lanes"):
        tvm.build(impl, target="llvm -mtriple=aarch64-linux-gnu -mattr=+sve -msve-vector-bits=512")


@needs_qemu
@pytest.mark.parametrize("name", sorted(INTRINSICS))
def test_impl_runs_exactly(impl_modules, name):
    intrin = TensorIntrin.get(name)
    a, b, c = _impl_args(intrin, np.random.default_rng(7))
    expected = INTRINSICS[name][1](a.astype("int64"), b.astype("int64"), c.astype("int64")).astype(c.dtype)
    run_aarch64(impl_modules[name], "main", a, b, c)
    np.testing.assert_array_equal(c, expected)


@needs_qemu
@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_sdot_impl_matches_numpy_on_random_tiles(impl_modules, seed):
    intrin = TensorIntrin.get("dot_4x4_i8i8s32_sdot")
    a, b, c = _impl_args(intrin, np.random.default_rng(seed))
    expected = c + b.astype("int32") @ a.astype("int32")
    run_aarch64(impl_modules["dot_4x4_i8i8s32_sdot"], "main", a, b, c)
    np.testing.assert_array_equal(c, expected)


# -- tensorized GEMMs -----------------------------------------------------------------------------
def _gemm(m: int, n: int, k: int, in_dtype: str, out_dtype: str):
    """C[i, j] = sum_k A[i, k] * B[j, k] (B holds the columns of the right operand as rows)."""

    @T.prim_func
    def gemm(a: T.handle, b: T.handle, c: T.handle):
        T.func_attr({"tir.noalias": True})
        A = T.match_buffer(a, (m, k), in_dtype)
        B = T.match_buffer(b, (n, k), in_dtype)
        C = T.match_buffer(c, (m, n), out_dtype)
        for i, j, r in T.grid(m, n, k):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, r])
                with T.init():
                    C[vi, vj] = T.cast(0, out_dtype)
                C[vi, vj] = C[vi, vj] + T.cast(A[vi, vk], out_dtype) * T.cast(B[vj, vk], out_dtype)

    return gemm


def _tensorize_dot(func, intrin: str, lanes: int):
    """Tile j by the intrinsic's lanes and k by 4, then tensorize (the sdot/udot/SVE layout)."""
    sch = tvm.tir.Schedule(func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    jo, ji = sch.split(j, [None, lanes])
    ko, ki = sch.split(k, [None, 4])
    sch.reorder(i, jo, ko, ji, ki)
    sch.decompose_reduction(block, ko)
    sch.tensorize(ji, intrin)
    return sch.mod


def _tensorize_mmla(func, intrin: str):
    sch = tvm.tir.Schedule(func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    io, ii = sch.split(i, [None, 2])
    jo, ji = sch.split(j, [None, 2])
    ko, ki = sch.split(k, [None, 8])
    sch.reorder(io, jo, ko, ii, ji, ki)
    sch.decompose_reduction(block, ko)
    sch.tensorize(ii, intrin)
    return sch.mod


GEMMS = [
    # (intrinsic, input dtype, output dtype, schedule, asm needle)
    ("dot_4x4_i8i8s32_sdot", "int8", "int32", lambda f, n: _tensorize_dot(f, n, 4), "sdot\tv"),
    ("dot_4x4_u8u8u32_udot", "uint8", "uint32", lambda f, n: _tensorize_dot(f, n, 4), "udot\tv"),
    ("dot_4x4_i8i8s32_neon", "int8", "int32", lambda f, n: _tensorize_dot(f, n, 4), "saddlp\t"),
    ("matmul_2x2x8_i8i8s32_smmla", "int8", "int32", _tensorize_mmla, "smmla\tv"),
    ("dot_8x4_i8i8s32_sve256", "int8", "int32", lambda f, n: _tensorize_dot(f, n, 8), "sdot\tz"),
]


@pytest.fixture(scope="module")
def gemm_modules():
    modules = {}
    for name, in_dtype, out_dtype, schedule, _ in GEMMS:
        modules[name] = tvm.build(schedule(_gemm(32, 32, 32, in_dtype, out_dtype), name), target=FULL)
    return modules


@pytest.mark.parametrize("name,in_dtype,out_dtype,schedule,needle", GEMMS, ids=[g[0] for g in GEMMS])
def test_tensorized_gemm_assembly(gemm_modules, name, in_dtype, out_dtype, schedule, needle):
    assert needle in gemm_modules[name].get_source("asm")


@needs_qemu
@pytest.mark.parametrize("name,in_dtype,out_dtype,schedule,needle", GEMMS, ids=[g[0] for g in GEMMS])
def test_tensorized_gemm_equals_numpy(gemm_modules, name, in_dtype, out_dtype, schedule, needle):
    rng = np.random.default_rng(1)
    a, b = _random(rng, (32, 32), in_dtype), _random(rng, (32, 32), in_dtype)
    c = np.full((32, 32), 99, out_dtype)  # the init block must overwrite it
    run_aarch64(gemm_modules[name], "__tvm_main__", a, b, c)
    expected = (a.astype("int64") @ b.astype("int64").T).astype(out_dtype)
    np.testing.assert_array_equal(c, expected)


@needs_qemu
def test_sve512_gemm_runs_with_matching_qemu_vector_length():
    target = "llvm -mtriple=aarch64-linux-gnu -mattr=+sve -msve-vector-bits=512"
    mod = tvm.build(_tensorize_dot(_gemm(4, 32, 16, "int8", "int32"), "dot_16x4_i8i8s32_sve512", 16), target=target)
    assert "sdot\tz" in mod.get_source("asm")
    rng = np.random.default_rng(2)
    a, b = _random(rng, (4, 16), "int8"), _random(rng, (32, 16), "int8")
    c = np.zeros((4, 32), "int32")
    run_aarch64(mod, "__tvm_main__", a, b, c)  # cpu "max" becomes max,sve512=on from the target
    np.testing.assert_array_equal(c, a.astype("int32") @ b.astype("int32").T)


MINIMAL_TARGETS = {  # each intrinsic with only the features it needs, so a SIGILL can only come from it
    "dot_4x4_i8i8s32_sdot": "llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod",
    "matmul_2x2x8_i8i8s32_smmla": "llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+i8mm",
    "dot_8x4_i8i8s32_sve256": "llvm -mtriple=aarch64-linux-gnu -mattr=+sve -msve-vector-bits=256",
    "dot_4x4_i8i8s32_neon": "llvm -mtriple=aarch64-linux-gnu -mattr=+neon",
}


def _minimal_gemm(name: str):
    for intrin, in_dtype, out_dtype, schedule, _ in GEMMS:
        if intrin == name:
            return tvm.build(schedule(_gemm(32, 32, 32, in_dtype, out_dtype), name), target=MINIMAL_TARGETS[name])
    raise KeyError(name)


@needs_qemu
@pytest.mark.parametrize("name,good_cpu,bad_cpu", [("matmul_2x2x8_i8i8s32_smmla", "max", "neoverse-n1"),
                                                   ("dot_8x4_i8i8s32_sve256", "max", "neoverse-n1"),
                                                   ("dot_4x4_i8i8s32_sdot", "neoverse-n1", "cortex-a72")])
def test_cpu_without_the_feature_raises(name, good_cpu, bad_cpu):
    mod = _minimal_gemm(name)
    a = np.ones((32, 32), "int8")
    c = np.zeros((32, 32), "int32")
    Aarch64Runner(cpu=good_cpu).run(mod, "__tvm_main__", a, a, c)
    np.testing.assert_array_equal(c, np.full((32, 32), 32))
    with pytest.raises(Aarch64IllegalInstruction, match=f"SIGILL.*{bad_cpu}"):
        Aarch64Runner(cpu=bad_cpu).run(mod, "__tvm_main__", a, a, c)


@needs_qemu
def test_neon_fallback_runs_on_a_cpu_without_dotprod():
    rng = np.random.default_rng(3)
    a, b = _random(rng, (32, 32), "int8"), _random(rng, (32, 32), "int8")
    c = np.zeros((32, 32), "int32")
    Aarch64Runner(cpu="cortex-a72").run(_minimal_gemm("dot_4x4_i8i8s32_neon"), "__tvm_main__", a, b, c)
    np.testing.assert_array_equal(c, a.astype("int32") @ b.astype("int32").T)
