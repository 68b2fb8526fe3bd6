"""What each fuzz case does with its input, inside a worker process. A case returns a small outcome
dict; an exception that is not a ``TVMError`` (the documented error family) escapes to the worker,
which reports it as a finding, as it reports a crash, an abort or a hang."""
from __future__ import annotations

import inspect
import random

import tensorize as tvm
from tensorize.errors import TVMError
from tensorize.ir.structural import structural_equal

from . import mutate
from .corpus_programs import corpus_functions

class Finding(Exception):
    """A broken promise that is not an exception: a failed primitive changed the schedule, ..."""


def _documented(err: BaseException) -> dict:
    return {"status": "error", "error": type(err).__name__, "message": str(err)[:300]}


def _small(func) -> bool:
    total = 0
    for buffer in func.buffer_map.values():
        size = 1
        for extent in buffer.shape:
            if not isinstance(getattr(extent, "value", None), int):
                return False
            size *= extent.value
        total += size
    return total <= 1 << 16


def case_text(text: str) -> dict:
    """Parse, verify, schedule (get every block's loops, split the first) and build a text."""
    from tensorize.script import from_source

    try:
        parsed = from_source(text)
        funcs = [parsed] if isinstance(parsed, tvm.tir.PrimFunc) else list(parsed.functions.values())
        for func in funcs:
            sch = tvm.tir.Schedule(func)
            for block in _blocks(sch):
                loops = sch.get_loops(block)
                if loops:
                    sch.split(loops[0], [None, 2])
                    break
            if _small(func):
                tvm.build(sch.mod, target="llvm")
        return {"status": "ok"}
    except TVMError as err:
        return _documented(err)


def _blocks(sch):
    from tensorize.ir.stmt import Block

    names = []

    def visit(node):
        if isinstance(node, Block) and node.name_hint != "root":
            names.append(node.name_hint)

    _walk(sch.mod["main"].body, visit)
    out = []
    for name in names:
        try:
            out.append(sch.get_block(name))
        except TVMError:
            continue
    return out


def _walk(node, visit):
    from tensorize.ir.node import Node

    if isinstance(node, Node):
        visit(node)
        for name in type(node)._fields:
            _walk(getattr(node, name, None), visit)
    elif isinstance(node, (list, tuple)):
        for item in node:
            _walk(item, visit)


def case_target(text: str) -> dict:
    """Parse a target string and build a small program for it."""
    from tensorize.target import Target

    try:
        target = Target(text)
        func = corpus_functions()["printer.vector_add.main"]
        if target.kind.name == "llvm" and target.is_host:
            tvm.build(func, target=target)
        return {"status": "ok", "target": str(target)}
    except TVMError as err:
        return _documented(err)


def case_primitives(program: str, seed: int, steps: int) -> dict:
    """Random primitive calls with random arguments on a valid program; each failure must leave the
    schedule as it was (module structurally equal, same trace length)."""
    func = corpus_functions()[program]
    rng = random.Random(seed)
    sch = tvm.tir.Schedule(func, seed=seed)
    applied, failed, calls = [], [], []
    rvs: dict[str, list] = {"block": _blocks(sch), "loop": []}
    for block in rvs["block"]:
        try:
            rvs["loop"].extend(sch.get_loops(block))
        except TVMError:
            pass
    for _ in range(steps):
        name = rng.choice(sorted(mutate.PRIMITIVES))
        method = getattr(sch, name)
        params = [p for p in inspect.signature(method).parameters.values() if p.name != "decision"]
        args, kwargs = [], {}
        for p in params:
            if p.kind is p.VAR_POSITIONAL:
                args.extend(rng.sample(rvs["loop"], min(len(rvs["loop"]), rng.randint(1, 3))) if rvs["loop"] else [])
            elif p.default is not p.empty and (rng.random() < 0.5 or p.annotation == "bool"):
                continue  # flags keep their defaults: disable_predication=True is the caller's own risk
            elif p.kind is p.KEYWORD_ONLY:
                kwargs[p.name] = mutate.random_argument(rng, rvs)
            else:
                args.append(mutate.random_argument(rng, rvs))
        calls.append(f"{name}{tuple(args)!r}{kwargs or ''}")
        before_mod, before_len = sch.mod, len(sch.trace.insts)
        try:
            result = method(*args, **kwargs)
        except TVMError as err:
            if not structural_equal(sch.mod, before_mod) or len(sch.trace.insts) != before_len:
                raise Finding(f"{name} failed ({type(err).__name__}: {err}) but changed the schedule; calls: {calls}") from None
            failed.append(name)
            continue
        applied.append(name)
        for out in result if isinstance(result, (list, tuple)) else [result]:
            kind = type(out).__name__
            if kind == "LoopRV":
                rvs["loop"].append(out)
            elif kind == "BlockRV":
                rvs["block"].append(out)
    from tensorize.analysis.verify import verify_well_formed

    try:
        verify_well_formed(sch.mod["main"])
    except TVMError as err:
        raise Finding(f"the schedule after {calls} is not well formed: {err}") from None
    return {"status": "ok", "applied": applied, "failed": failed}


def case_db_lines(lines: list[str], sentinel: str) -> dict:
    """Load a database file of good and damaged lines: it must load, skipping the bad ones."""
    import os
    import tempfile

    from search.database import Database

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "db.jsonl")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write("\n".join(lines) + "\n")
        db = Database(path)
        for record in db.get_all_tuning_records():
            try:
                record.replay()
            except TVMError:
                pass
        if os.path.exists(sentinel):
            raise Finding("a database line ran code: the sentinel file exists")
        return {"status": "ok", "records": len(db), "skipped": db.skipped}


def case_trace(program: str, trace_json) -> dict:
    """Read a (damaged) trace and replay it on a fresh schedule of its program."""
    from tensorize.schedule.trace import Trace

    try:
        trace = Trace.from_json(trace_json)
        sch = tvm.tir.Schedule(corpus_functions()[program])
        trace.apply_to_schedule(sch)
        return {"status": "ok", "length": len(trace)}
    except TVMError as err:
        return _documented(err)


CASES = {"text": case_text, "target": case_target, "primitives": case_primitives, "db_lines": case_db_lines,
         "trace": case_trace}
