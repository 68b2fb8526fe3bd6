"""Input generators of the fuzzing suite: mutated TVMScript texts, random target strings, random
primitive calls, damaged database lines and trace JSON. Each is a pure function of a ``random.Random``,
so a seed reproduces its input."""
from __future__ import annotations

import json
import random
import re

HOSTILE_SNIPPETS = [
    "__import__('os').system('touch {sentinel}')", "open('{sentinel}', 'w')", "().__class__.__bases__[0]",
    "eval('1')", "exec('x=1')", "getattr(T, '__dict__')", "[x for x in range(3)]", "lambda: 0",
    "T.float32.__class__", "globals()", "T.re", "A.__class__", "9 ** 9 ** 9", "'x' * 10 ** 9",
    "T.prim_func", "T.__getattr__('float32')", "T.Buffer.__call__.__globals__",
]
_TOKEN = re.compile(r"\d+|[A-Za-z_][A-Za-z_0-9]*|\"[^\"]*\"|'[^']*'|\S")
_NUMBERS = ["0", "-1", "1", "3", "7", "2147483648", "-2147483649", "99999999999999999999", "0.5", "1e308", "-0"]
_DTYPES = ["float32", "int8", "uint8", "int64", "float16", "bool", "int4", "float8", "handle", "void", "float32x4",
           "int32x0", "badtype"]


def mutate_text(text: str, rng: random.Random, sentinel: str = "/nonexistent/sentinel", steps: int | None = None) -> str:
    """``text`` with 1 to 3 random edits: a line deleted, duplicated or swapped, a token replaced (by a
    number, a dtype, another name of the text or a hostile snippet), an indentation changed, or a cut."""
    lines = text.splitlines()
    for _ in range(steps or rng.randint(1, 3)):
        if not lines:
            break
        op = rng.randrange(8)
        i = rng.randrange(len(lines))
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[i])
        elif op == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3:
            lines[i] = (" " * rng.choice([0, 1, 2, 4, 8])) + lines[i].lstrip()
        elif op == 4:
            cut = rng.randrange(len(text) + 1)
            return "\n".join(lines)[:cut]
        else:
            tokens = _TOKEN.findall(lines[i])
            if not tokens:
                continue
            target = rng.choice(tokens)
            names = [t for t in _TOKEN.findall(text) if t[0].isalpha()] or ["x"]
            replacement = rng.choice([
                rng.choice(_NUMBERS), f'"{rng.choice(_DTYPES)}"', rng.choice(_DTYPES), rng.choice(names),
                rng.choice(HOSTILE_SNIPPETS).format(sentinel=sentinel), "", "(", "T." + rng.choice(names),
            ])
            lines[i] = lines[i].replace(target, replacement, 1)
    return "\n".join(lines) + "\n"


_CPUS = ["znver4", "znver3", "haswell", "skylake-avx512", "x86-64", "generic", "native", "nonexistent", "znver",
         "i686", "pentium4", "cortex-a72", "neoverse-n1", "apple-m1", "", "help", "x" * 300]
_FEATURES = ["+avx2", "-avx2", "+avx512f", "+avx512vnni", "avx2", "+notafeature", "-64bit", "-64bit-mode", "-sse",
             "-sse2", "+16bit-mode", "+32bit-mode", "+neon", "+dotprod", "+sve", "+", "-", "++avx", "+help", "-x87"]
_TRIPLES = ["x86_64-linux-gnu", "x86_64-unknown-linux-gnu", "aarch64-linux-gnu", "i386-linux-gnu", "garbage",
            "riscv64-linux-gnu", "nvptx64-nvidia-cuda", "x86_64", "-", "arm64-apple-macos", "aarch64-linux-android"]
_KEYS = ["mcpu", "mattr", "mtriple", "num-cores", "opt-level", "keys", "libs", "arch", "vector-width", "device",
         "model", "", "foo"]


def random_target(rng: random.Random) -> str:
    """A random target string: mostly plausible options with wrong values, sometimes plain noise."""
    if rng.random() < 0.1:
        return "".join(rng.choice("llvm -=+,\"' mcpu\\x") for _ in range(rng.randint(0, 20)))
    parts = [rng.choice(["llvm", "llvm", "llvm", "c", "cuda", "nvptx", "LLVM", "opencl", ""])]
    for _ in range(rng.randint(0, 4)):
        key = rng.choice(_KEYS)
        if key == "mcpu":
            value = rng.choice(_CPUS)
        elif key == "mattr":
            value = ",".join(rng.choice(_FEATURES) for _ in range(rng.randint(0, 3)))
        elif key == "mtriple":
            value = rng.choice(_TRIPLES)
        elif key == "arch":
            value = rng.choice(["sm_80", "sm_90", "sm_800", "", "x86_64", "compute_80"])
        else:
            value = rng.choice(["1", "-1", "abc", "", "99999999999999999999", "2", "true"])
        parts.append(rng.choice(["-", "--", ""]) + key + rng.choice(["=", "=", ""]) + value)
    return " ".join(parts)


def random_argument(rng: random.Random, rvs: dict[str, list]):
    """A random argument: one of the schedule's handles, a list of them, a number, a list of numbers, a string."""
    kind = rng.randrange(8)
    blocks, loops = rvs.get("block", []), rvs.get("loop", [])
    if kind == 0 and blocks:
        return rng.choice(blocks)
    if kind in (1, 2) and loops:
        return rng.choice(loops)
    if kind == 3 and loops:
        return rng.sample(loops, rng.randint(1, min(3, len(loops))))
    if kind == 4:
        return rng.choice([0, 1, 2, 4, -1, 3, 16, 1 << 40])
    if kind == 5:
        return [rng.choice([None, 1, 2, 4, 8, 0, -2, 3]) for _ in range(rng.randint(1, 3))]
    if kind == 6:
        return rng.choice(["C", "B", "A", "global", "shared", "", "nonexistent", "local"])
    return rng.choice([None, True, 0.5, ("read", 0), ("write", 0), ("read", 9)])


PRIMITIVES = {
    "split": ("loop", "factors"), "fuse": ("*loops",), "reorder": ("*loops",), "parallel": ("loop",),
    "vectorize": ("loop",), "unroll": ("loop",), "bind": ("loop", "thread_axis"), "compute_at": ("block", "loop"),
    "reverse_compute_at": ("block", "loop"), "compute_inline": ("block",), "reverse_compute_inline": ("block",),
    "cache_read": ("block", "read_buffer_index", "storage_scope"), "cache_write": ("block", "write_buffer_index",
                                                                                 "storage_scope"),
    "decompose_reduction": ("block", "loop"), "rfactor": ("loop", "factor_axis"), "blockize": ("target",),
    "add_unit_loop": ("block_or_loop",), "storage_align": ("block", "buffer_index", "axis", "factor", "offset"),
    "set_scope": ("block", "buffer_index", "storage_scope"), "annotate": ("block_or_loop", "ann_key", "ann_val"),
    "unannotate": ("block_or_loop", "ann_key"), "get_loops": ("block",), "get_producers": ("block",),
    "get_consumers": ("block",), "get_child_blocks": ("block_or_loop",), "get_block": ("name",),
    "sample_perfect_tile": ("loop", "n"), "sample_categorical": ("candidates", "probs"),
    "pad_einsum": ("block", "padding"), "reindex": ("block", "buffer"), "merge": ("*loops",),
}


def damaged_lines(good: list[str], rng: random.Random, sentinel: str = "/nonexistent/sentinel") -> list[str]:
    """Database lines made from good ones: cut, bytes flipped, fields replaced by hostile or wrong values."""
    out = []
    for _ in range(rng.randint(1, 4)):
        line = rng.choice(good)
        op = rng.randrange(6)
        if op == 0:
            out.append(line[: rng.randrange(len(line) + 1)])
        elif op == 1:
            chars = list(line)
            for _ in range(rng.randint(1, 5)):
                chars[rng.randrange(len(chars))] = rng.choice("{}[]\",:0a\\\x00")
            out.append("".join(chars))
        else:
            try:
                entry = json.loads(line)
            except ValueError:
                out.append(line)
                continue
            key = rng.choice(sorted(entry))
            entry[key] = rng.choice([None, 1, "x", [], {}, [[["__class__", {}, [], []]], []],
                                     "@T.prim_func\ndef f():\n    " + rng.choice(HOSTILE_SNIPPETS).format(
                                         sentinel=sentinel),
                                     {"tensorize_ir": 1, "root": {"node": 0},
                                      "nodes": [{"type": rng.choice(["Popen", "Var", "For"]), "attrs": {}}]},
                                     float("nan") if rng.random() < 0.1 else -1])
            out.append(json.dumps(entry))
    return out


def mutate_trace(trace_json: list, rng: random.Random):
    """A trace's JSON with one structural edit (an argument, a kind, an output name, the shape)."""
    data = json.loads(json.dumps(trace_json))
    insts = data[0] if isinstance(data, list) and data and isinstance(data[0], list) else []
    op = rng.randrange(6)
    if op == 0 or not insts:
        return rng.choice([[], [[]], [[], [], []], "x", None, {"a": 1}, [[["split"]], []], [[1, 2], [3]]])
    inst = rng.choice(insts)
    if op == 1:
        inst[0] = rng.choice(["copy", "__init__", "show", "work_on", "nonexistent", "split", "get_block", 3])
    elif op == 2 and isinstance(inst[1], dict) and inst[1]:
        key = rng.choice(sorted(inst[1]))
        inst[1][key] = rng.choice([None, -1, 0, "C", {"rv": "b999"}, [{"rv": "l0"}], {"imm": "int32", "value": "x"},
                                   {"codec": "Nope", "value": 1}, {"dict": [[1]]}, [1, 2, 3]])
    elif op == 3:
        inst[3] = rng.choice([["x0"], [""], [1], ["b0", "b0"]])
    elif op == 4:
        insts.insert(rng.randrange(len(insts) + 1), json.loads(json.dumps(rng.choice(insts))))
    else:
        del insts[rng.randrange(len(insts))]
    return data
