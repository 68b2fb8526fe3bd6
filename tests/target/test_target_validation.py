"""Malformed targets raise TargetError (a TVMError and ValueError) naming the bad value and LLVM's
close matches; none reaches LLVM, so none can abort the process (each case runs in a child)."""
import json
import os
import subprocess
import sys

import pytest

import tensorize as tvm
from tensorize.errors import TargetError, TVMError
from tensorize.target import Target, llvm_tables

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = r'''
import json, sys
import tensorize as tvm
from tensorize.script import tir as T
from tensorize.target import Target

from tensorize.script import from_source

add_one = from_source("""
@T.prim_func
def add_one(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + T.float32(1)
""")

out = {}
try:
    target = Target(sys.argv[1])
    tvm.build(add_one, target=target)
    out["result"] = "built"
except Exception as err:
    out["error"] = type(err).__name__
    out["message"] = str(err)
    out["family"] = isinstance(err, tvm.TVMError)
print("RESULT" + json.dumps(out))
'''

MALFORMED = [
    ("llvm -mcpu=nonexistent", "nonexistent"),
    ("llvm -mcpu=znver", "znver4"),
    ("llvm -mcpu=i686", "64-bit"),
    ("llvm -mcpu=pentium4", "64-bit"),
    ("llvm -mattr=+notafeature", "notafeature"),
    ("llvm -mattr=+avx512vnn", "avx512vnni"),
    ("llvm -mattr=-64bit", "64bit"),
    ("llvm -mattr=-64bit-mode", "64bit-mode"),
    ("llvm -mattr=-sse", "sse"),
    ("llvm -mattr=+", "empty"),
    ("llvm -mtriple=garbage", "garbage"),
    ("llvm -mtriple=foo-bar-baz", "foo-bar-baz"),
    ("llvm -mtriple=x86_64-linux-gnu -mcpu=cortex-a72", "cortex-a72"),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=znver4", "znver4"),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=native", "native"),
    ("llvm -mtriple=aarch64-linux-gnu -mattr=+avx2", "avx2"),
    ("cuda -arch=sm_800", "sm_800"),
    ("cuda -arch=", "arch"),
    ("llvm -mcpu", "mcpu"),
    ("llvm \"-mcpu", "closing quotation"),
    ("llvm -num-cores=abc", "num-cores"),
    ("llvm -num-cores=-4", "num-cores"),
    ("llvm -opt-level=99999999999999999999999", "opt-level"),
    ("notakind", "notakind"),
    ("", "empty"),
    ("llvm mcpu=znver4", "mcpu"),
    ("llvm -=x", "-=x"),
    ("llvm -mcpu=\x00", None),
]


def _run_child(target: str) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", CHILD, target], capture_output=True, text=True, timeout=120, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT")]
    assert proc.returncode == 0 and lines, f"the process died on {target!r} (exit {proc.returncode}): {proc.stderr[-800:]}"
    return json.loads(lines[-1][len("RESULT"):])


@pytest.mark.parametrize("target,named", MALFORMED)
def test_malformed_target_is_a_clear_error_not_an_abort(target, named):
    if "\x00" in target:  # argv cannot carry NUL: check in this process (the message is all that matters)
        with pytest.raises(TargetError):
            Target(target)
        return
    out = _run_child(target)
    assert out.get("error") == "TargetError", out
    assert out["family"]
    if named:
        assert named in out["message"], out["message"]


def test_good_targets_still_build():
    for good in ("llvm -mcpu=x86-64-v2 -mattr=+sse4.2", "llvm -mtriple=", "llvm -mcpu=generic"):
        assert _run_child(good) == {"result": "built"}


def test_target_error_is_value_error_and_tvm_error():
    with pytest.raises(ValueError):
        Target("llvm -mcpu=nonexistent")
    with pytest.raises(TVMError, match="did you mean znver"):
        Target("llvm -mcpu=znver")
    assert issubclass(TargetError, tvm.TVMError)


def test_llvm_tables_come_from_llvm():
    cpus, features = llvm_tables("aarch64-unknown-linux-gnu")
    assert {"neoverse-n1", "cortex-a72"} <= cpus and {"dotprod", "i8mm", "sve"} <= features
    assert "avx512vnni" not in features


def test_mattr_without_sign_means_enable():
    t = Target("llvm -mattr=avx2,-fma")
    assert t.mattr == ["+avx2", "-fma"] and t.has_feature("avx2") and not t.has_feature("fma")


def test_dict_targets_are_checked_too():
    with pytest.raises(TargetError, match="nonexistent"):
        Target({"kind": "llvm", "mcpu": "nonexistent"})
    with pytest.raises(TargetError, match="list"):
        Target({"kind": "llvm", "mattr": 5})
