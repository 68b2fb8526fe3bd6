"""Building an intrinsic for a target without its CPU feature raises a clear error instead of letting
LLVM abort the process."""
import subprocess
import sys
import textwrap

import pytest

import intrinsics  # noqa: F401  (registers the families)
import tensorize as tvm
from tensorize.codegen.llvm.features import (MissingTargetFeatureError, declared_intrinsics, effective_features,
                                             missing_features, required_features)
from tensorize.ir.tensor_intrin import TensorIntrin
from tensorize.target import Target

# (intrinsic, target, the LLVM intrinsic named in the error, the missing feature)
CASES = [
    ("dot_16x4_vnni", "llvm -mcpu=znver1", "llvm.x86.avx512.vpdpbusd.512", "avx512vnni"),
    ("dot_16x4_u8i8s32_vnni", "llvm -mcpu=haswell", "llvm.x86.avx512.vpdpbusd.512", "avx512vnni"),
    ("dot_16x4_avx512", "llvm -mcpu=haswell", "llvm.x86.avx512.pmaddubs.w.512", "avx512bw"),
    ("dot_16x2_bf16_avx512", "llvm -mcpu=skylake-avx512", "llvm.x86.avx512bf16.dpbf16ps.512", "avx512bf16"),
    ("dot_8x4_u8i8s32_avx2", "llvm -mcpu=x86-64", "llvm.x86.avx2.pmadd", "avx2"),
    ("dot_4x4_i8i8s32_sdot", "llvm -mtriple=aarch64-linux-gnu", "llvm.aarch64.neon.sdot", "dotprod"),
    ("matmul_2x2x8_i8i8s32_smmla", "llvm -mtriple=aarch64-linux-gnu -mattr=+dotprod", "llvm.aarch64.neon.smmla",
     "i8mm"),
    ("dot_8x4_i8i8s32_sve256", "llvm -mtriple=aarch64-linux-gnu -msve-vector-bits=256", "llvm.aarch64.sve.sdot",
     "sve"),
]

CHILD = textwrap.dedent("""
    import sys
    import intrinsics, tensorize as tvm
    from tensorize.ir.tensor_intrin import TensorIntrin
    from tensorize.codegen.llvm import features
    name, target, checked = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    if not checked:  # what happened before the check: LLVM sees the module as it is
        features.check_intrinsic_features = lambda text, target: None
    try:
        lib = tvm.build(TensorIntrin.get(name).impl, target=target)
        lib.object_code()  # its machine code (a host module is JIT-compiled only when first called)
    except tvm.TVMError as err:
        print(type(err).__name__, err.intrinsic, err.features)
        print(err)
        sys.exit(3)
    print("built")
""")


def build_in_child(name, target, checked=True):
    return subprocess.run([sys.executable, "-c", CHILD, name, target, "1" if checked else "0"], capture_output=True,
                          text=True, timeout=120)


def test_the_process_survives_and_the_error_names_intrinsic_feature_and_fix():
    name, target, llvm_name, feature = CASES[0]
    proc = build_in_child(name, target)
    assert proc.returncode == 3, proc.stderr  # raised, caught, exited normally: no abort
    first, message = proc.stdout.split("\n", 1)
    assert first.startswith(f"MissingTargetFeatureError {llvm_name} ('{feature}',)")
    assert "-mattr=+avx512vnni" in message and "pick a CPU that has it" in message and "-mcpu=znver1" in message


def test_without_the_check_llvm_aborts_the_process():
    # The reason for the check: the same build, unchecked, kills the interpreter.
    proc = build_in_child(*CASES[0][:2], checked=False)
    assert proc.returncode not in (0, 3) and "LLVM ERROR" in proc.stderr


@pytest.mark.parametrize("name, target, llvm_name, feature", CASES)
def test_each_missing_feature_raises_in_process(name, target, llvm_name, feature):
    with pytest.raises(MissingTargetFeatureError) as info:
        tvm.build(TensorIntrin.get(name).impl, target=target)
    err = info.value
    assert isinstance(err, tvm.TVMError)
    assert err.intrinsic.startswith(llvm_name) and err.features == (feature,) and err.target == str(Target(target))
    assert llvm_name in str(err) and f"-mattr=+{feature}" in str(err)


@pytest.mark.parametrize("name, target", [
    ("dot_16x4_vnni", "llvm -mcpu=znver4"),
    ("dot_16x4_vnni", "llvm -mattr=+avx512vnni"),          # avx512vnni enables avx512f
    ("dot_16x4_avx512", "llvm -mattr=+avx512bf16"),        # avx512bf16 enables avx512bw
    ("dot_8x4_u8i8s32_avx2", "llvm -mcpu=haswell"),
    ("dot_8x4_u8i8s32_avx2", "llvm -mcpu=skylake-avx512"),
    ("dot_4x4_i8i8s32_sdot", "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"),
    ("dot_8x4_i8i8s32_sve256", "llvm -mtriple=aarch64-linux-gnu -mattr=+sve -msve-vector-bits=256"),
])
def test_targets_with_the_feature_build(name, target):
    mod = tvm.build(TensorIntrin.get(name).impl, target=target)
    assert mod.get_source("asm")


def test_an_intrinsic_of_another_architecture_is_refused():
    with pytest.raises(MissingTargetFeatureError, match=r"x86_64 intrinsic llvm\.x86\.avx2\.pmadd.*is aarch64"):
        tvm.build(TensorIntrin.get("dot_8x4_u8i8s32_avx2").impl, target="llvm -mtriple=aarch64-linux-gnu")


def test_requirement_table():
    assert required_features("llvm.x86.avx512.vpdpbusd.256")[1] == (("avx512vnni", "avx512vl"), ("avxvnni",))
    assert missing_features("llvm.x86.avx512.vpdpbusd.256", Target("llvm -mattr=+avxvnni")) == ()
    assert missing_features("llvm.x86.avx512.vpdpbusd.256", Target("llvm -mattr=+avx512vnni")) == ("avx512vl",)
    assert missing_features("llvm.x86.tdpbusd.internal", Target("llvm -mcpu=znver4")) == ("amx-int8",)
    assert missing_features("llvm.x86.tdpbusd.internal", Target("llvm -mcpu=sapphirerapids")) == ()
    assert missing_features("llvm.fma.v8f32", Target("llvm")) == ()  # generic intrinsics need nothing
    assert required_features("llvm.x86.sse2.pause") == ("x86_64", ((),))
    assert missing_features("llvm.aarch64.neon.usdot.v4i32.v16i8",
                            Target("llvm -mtriple=aarch64-linux-gnu -mattr=+dotprod")) == ("i8mm",)


def test_effective_features_follow_llvm_implications_and_disables():
    assert {"avx512f", "avx2", "fma", "avx"} <= effective_features(Target("llvm -mattr=+avx512vnni"))
    turned_off = effective_features(Target("llvm -mcpu=znver4 -mattr=-avx2"))
    assert "avx2" not in turned_off and "avx512vnni" not in turned_off and "avx" in turned_off


def test_declared_intrinsics_reads_quoted_names_and_bridges():
    ir = ('declare <16 x i32> @"llvm.x86.avx512.vpdpbusd.512"(<16 x i32> %".1", <64 x i8> %".2")\n'
          'declare <8 x i32> @"tensorize.sve_fixed.llvm.aarch64.sve.sdot.nxv4i32.v8i32"(<8 x i32> %".1")\n'
          "declare <8 x float> @llvm.fma.v8f32(<8 x float>, <8 x float>, <8 x float>)\n"
          'define i32 @"main"(ptr %"A") {\n  call void @"llvm.x86.not.declared"()\n}\n')
    assert declared_intrinsics(ir) == ["llvm.x86.avx512.vpdpbusd.512", "llvm.aarch64.sve.sdot.nxv4i32.v8i32"]
