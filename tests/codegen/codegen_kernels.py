"""Small hand-built lowered PrimFuncs for codegen tests (flat 1-D buffers, plain loops)."""
from __future__ import annotations

from tensorize.codegen import build_module
from tensorize.ir.buffer import decl_buffer
from tensorize.ir.expr import Var
from tensorize.ir import stmt as S
from tensorize.ir.function import IRModule, PrimFunc
from tensorize.target import Target


def buffers(*specs):
    """``buffers(("A", (8,), "float32"), ...)`` -> list of Buffers."""
    return [decl_buffer(shape, dtype, name=name) for name, shape, dtype in specs]


def func(params, body, attrs=None):
    """A PrimFunc whose Buffer params go into the buffer map; Vars stay scalars."""
    vars_, buffer_map = [], {}
    for p in params:
        if isinstance(p, Var):
            vars_.append(p)
        else:
            vars_.append(p.data)
            buffer_map[p.data] = p
    return PrimFunc(vars_, body, buffer_map=buffer_map, attrs=attrs or {})


def build(f, target="llvm -mcpu=native", name="main"):
    return build_module(IRModule({name: f}), Target(target))


def loop(n, body_of, kind=S.ForKind.SERIAL, dtype="int32", name="i"):
    i = Var(name, dtype)
    return S.For(i, 0, n, kind, body_of(i))


def elementwise(n, in_dtype, out_dtype, compute, kind=S.ForKind.SERIAL, target="llvm -mcpu=native"):
    """B[i] = compute(A[i]) for i < n, built."""
    A, B = buffers(("A", (n,), in_dtype), ("B", (n,), out_dtype))
    body = loop(n, lambda i: S.BufferStore(B, compute(A[i]), [i]), kind)
    return build(func([A, B], body), target)
