"""Deployable artefacts: export_library writes a shared library that load_module reads back, in any process."""
import ctypes
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorize as tvm
from tensorize.errors import TVMError
from tensorize.runtime.library import METADATA_SYMBOL, LibraryModule
from tensorize.schedule import Schedule
from tensorize.script import tir as T

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@T.prim_func
def gemm(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    T.func_attr({"tir.noalias": True})
    for i, j, k in T.grid(64, 64, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def add_scaled(a: T.handle, b: T.handle, c: T.handle, alpha: T.float32):
    T.func_attr({"tir.noalias": True})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i in range(n):
        with T.block("c"):
            vi = T.axis.remap("S", [i])
            C[vi] = A[vi] + alpha * B[vi]


@T.prim_func
def checked_div(a: T.handle, b: T.handle):
    T.func_attr({"tir.noalias": True})
    n = T.int32()
    B = T.match_buffer(b, (n,), "int32")
    A = T.match_buffer(a, (n * 2,), "int32")
    for i in range(n):
        with T.block("b"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi * 2] + A[vi * 2 + 1]


def _parallel_gemm():
    sch = Schedule(gemm)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, 8])
    sch.reorder(i0, j, k, i1)
    sch.parallel(i0)
    return sch.mod


def test_round_trip_in_a_fresh_process(tmp_path):
    """Build and export here, load and run in a new interpreter: the result equals numpy's."""
    path = str(tmp_path / "gemm.so")
    tvm.build(_parallel_gemm(), target="llvm").export_library(path)
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (64, 64)).astype("float32"), rng.uniform(-1, 1, (64, 64)).astype("float32")
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    script = textwrap.dedent(f"""
        import numpy as np, tensorize as tvm
        mod = tvm.runtime.load_module({path!r})
        a, b = np.load({str(tmp_path / 'a.npy')!r}), np.load({str(tmp_path / 'b.npy')!r})
        c = tvm.nd.empty((64, 64), "float32")
        mod["main"](tvm.nd.array(a), tvm.nd.array(b), c)
        np.save({str(tmp_path / 'c.npy')!r}, c.numpy())
        print(mod.function_names, mod.entry_name)
    """)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['main'] main"
    np.testing.assert_allclose(np.load(tmp_path / "c.npy"), a @ b, rtol=1e-4, atol=1e-4)


def test_unloading_a_parallel_library_leaves_the_process_sound(tmp_path):
    """A library whose parallel loop woke OpenMP's thread pool, unloaded: the process goes on and exits 0
    (closing the last user of libgomp used to unload it under its parked threads: SIGSEGV at exit)."""
    path = str(tmp_path / "gemm.so")
    tvm.build(_parallel_gemm(), target="llvm").export_library(path)
    script = textwrap.dedent(f"""
        import numpy as np, tensorize as tvm
        for _ in range(2):
            mod = tvm.runtime.load_module({path!r})
            a = np.ones((64, 64), "float32")
            c = np.zeros((64, 64), "float32")
            mod(a, a, c)
            mod.unload()
        print(float(c[3, 5]))
    """)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="2")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, f"exit status {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.strip() == "64.0"


def test_loaded_module_checks_arguments_like_the_built_one(tmp_path):
    path = str(tmp_path / "add.so")
    built = tvm.build(add_scaled, target="llvm")
    built.export_library(path)
    loaded = tvm.runtime.load_module(path)
    assert isinstance(loaded, LibraryModule) and loaded.function_names == built.function_names
    a, b = np.arange(37, dtype="float32"), np.full(37, 2.0, "float32")
    c = np.zeros(37, "float32")
    loaded(a, b, c, 0.5)
    np.testing.assert_array_equal(c, a + 0.5 * b)
    for module in (built, loaded):
        with pytest.raises(ValueError, match=r"argument 2 \(B\).*n is already bound to 37"):
            module(a, np.zeros(5, "float32"), c, 1.0)
        with pytest.raises(TypeError, match=r"argument 1 \(A\): expected dtype float32, got int32"):
            module(np.zeros(37, "int32"), b, c, 1.0)
        with pytest.raises(TypeError, match=r"argument 4 \(alpha\): expected a number"):
            module(a, b, c, "x")
    assert str(loaded.target) == str(built.target)


def test_shape_expressions_survive_the_round_trip(tmp_path):
    path = str(tmp_path / "pairs.so")
    tvm.build(checked_div, target="llvm").export_library(path)
    loaded = tvm.runtime.load_module(path)
    a = np.arange(10, dtype="int32")
    b = np.zeros(5, "int32")
    loaded(a, b)
    np.testing.assert_array_equal(b, a[0::2] + a[1::2])
    with pytest.raises(ValueError, match=r"argument 1 \(A\): expected shape"):
        loaded(np.arange(9, dtype="int32"), b)


def test_metadata_is_json_inside_the_library(tmp_path):
    path = str(tmp_path / "gemm.so")
    tvm.build(gemm, target="llvm").export_library(path)
    lib = ctypes.CDLL(path)
    text = ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, METADATA_SYMBOL))).decode()
    meta = json.loads(text)
    assert meta["entry"] == "main" and [f["name"] for f in meta["functions"]] == ["main"]
    assert [p["shape"] for p in meta["functions"][0]["params"]] == [[["int", "int32", 64]] * 2] * 3
    copy = str(tmp_path / "copy.so")
    tvm.runtime.load_module(path).export_library(copy)  # a loaded module exports by copying its file
    c = np.zeros((64, 64), "float32")
    tvm.runtime.load_module(copy)(np.eye(64, dtype="float32"), np.full((64, 64), 3, "float32"), c)
    np.testing.assert_array_equal(c, 3)


def test_a_foreign_library_is_rejected_with_the_reason(tmp_path):
    source = tmp_path / "plain.c"
    source.write_text("int answer(void) { return 42; }\n")
    plain = str(tmp_path / "plain.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", plain, str(source)], check=True)
    with pytest.raises(TVMError, match="no __tensorize_metadata symbol.*export it again"):
        tvm.runtime.load_module(plain)
    with pytest.raises(FileNotFoundError):
        tvm.runtime.load_module(str(tmp_path / "missing.so"))


@pytest.mark.skipif(not __import__("shutil").which("aarch64-linux-gnu-gcc"), reason="needs aarch64-linux-gnu-gcc")
def test_a_library_for_another_architecture_does_not_load_here(tmp_path):
    path = str(tmp_path / "arm.so")
    tvm.build(gemm, target="llvm -mtriple=aarch64-linux-gnu -mattr=+neon").export_library(path)
    with pytest.raises(TVMError, match="cannot load .*another architecture"):
        tvm.runtime.load_module(path)
