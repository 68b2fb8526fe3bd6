"""A host module's machine code is generated in process on its first call, never for a module only exported."""
import numpy as np

import tensorize as tvm
from tensorize.ir import stmt as S
from tensorize.ir.expr import Var

from tests.codegen.codegen_kernels import buffers, func


def _add_one(parallel: bool = False):
    A, B = buffers(("A", (64,), "float32"), ("B", (64,), "float32"))
    i = Var("i")
    kind = S.ForKind.PARALLEL if parallel else S.ForKind.SERIAL
    return func([A, B], S.For(i, 0, 64, kind, S.BufferStore(B, A[i] + 1.0, [i])))


def test_export_only_module_is_never_jit_compiled(tmp_path):
    lib = tvm.build(_add_one(), target="llvm")
    lib.export_library(str(tmp_path / "k.so"))
    assert not lib._keep_alive.created  # noqa: SLF001 - the lazy engine is the point of the test
    loaded = tvm.runtime.load_module(str(tmp_path / "k.so"))
    a, b = tvm.nd.array(np.arange(64, dtype="float32")), tvm.nd.array(np.zeros(64, "float32"))
    loaded(a, b)
    np.testing.assert_array_equal(b.numpy(), np.arange(64, dtype="float32") + 1)


def test_first_call_compiles_and_runs(monkeypatch):
    monkeypatch.setenv("TVM_NUM_THREADS", "2")
    lib = tvm.build(_add_one(parallel=True), target="llvm")
    assert not lib._keep_alive.created  # noqa: SLF001
    a, b = tvm.nd.array(np.arange(64, dtype="float32")), tvm.nd.array(np.zeros(64, "float32"))
    lib(a, b)
    assert lib._keep_alive.created  # noqa: SLF001
    np.testing.assert_array_equal(b.numpy(), np.arange(64, dtype="float32") + 1)
    # the thread count global was set when the engine was made
    import ctypes

    from tensorize.codegen.llvm.module import THREADS_GLOBAL

    address = lib._keep_alive.global_address(THREADS_GLOBAL)  # noqa: SLF001
    assert ctypes.c_int32.from_address(address).value == 2
