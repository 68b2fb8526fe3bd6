"""Time the TVMScript printer and parser on a 1,000-statement program (best of several runs).

    python benchmarks/script_speed.py [--statements 1000] [--repeat 5]

Two programs: 1,000 buffer stores in one function (flat), and 1,000 blocks each under its own
two-loop nest (blocks with iterators, reads/writes, the remap sugar). Prints milliseconds per
program for printing and for parsing, and checks that the round trip is structurally equal.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tensorize.ir.buffer import decl_buffer  # noqa: E402
from tensorize.ir.expr import FloatImm, IterVar, Range, Var  # noqa: E402
from tensorize.ir.function import PrimFunc  # noqa: E402
from tensorize.ir.stmt import Block, BlockRealize, BufferRegion, BufferStore, For, SeqStmt  # noqa: E402
from tensorize.ir.structural import assert_structural_equal  # noqa: E402
from tensorize.script import from_source  # noqa: E402


def _func(buffers, body) -> PrimFunc:
    handles = [Var(b.name + "_handle", "handle") for b in buffers]
    return PrimFunc(handles, body, buffer_map=dict(zip(handles, buffers)),
                    attrs={"global_symbol": "main", "tir.noalias": True})


def flat_stores(n: int) -> PrimFunc:
    A = decl_buffer((n,), "float32", name="A")
    B = decl_buffer((n,), "float32", name="B")
    return _func([A, B], SeqStmt([BufferStore(B, A[k] * FloatImm("float32", 2.0) + FloatImm("float32", 1.0), [k])
                                  for k in range(n)]))


def many_blocks(n: int) -> PrimFunc:
    A = decl_buffer((16, 16), "float32", name="A")
    B = decl_buffer((16, 16), "float32", name="B")
    nests = []
    for k in range(n):
        i, j, vi, vj = Var("i"), Var("j"), Var("vi"), Var("vj")
        block = Block([IterVar(Range(0, 16), vi, IterVar.DataPar), IterVar(Range(0, 16), vj, IterVar.DataPar)],
                      [BufferRegion.from_point(A, [vi, vj])], [BufferRegion.from_point(B, [vi, vj])], f"b{k}",
                      BufferStore(B, A[vi, vj] + FloatImm("float32", float(k)), [vi, vj]))
        nests.append(For(i, 0, 16, body=For(j, 0, 16, body=BlockRealize([i, j], True, block))))
    root = BlockRealize([], True, Block([], [], [], "root", SeqStmt(nests)))
    return _func([A, B], root)


def best_of(repeat: int, fn) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statements", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'program':<28}{'lines':>8}{'print ms':>12}{'parse ms':>12}")
    for name, build in (("flat stores", flat_stores), ("blocks under loop nests", many_blocks)):
        func = build(args.statements)
        text = func.script()
        parsed = from_source(text)
        assert_structural_equal(func, parsed)  # the timing is of a correct round trip
        t_print = best_of(args.repeat, func.script)
        t_parse = best_of(args.repeat, lambda: from_source(text))
        print(f"{name + f' ({args.statements})':<28}{text.count(chr(10)) + 1:>8}{t_print * 1e3:>12.1f}{t_parse * 1e3:>12.1f}")


if __name__ == "__main__":
    main()
