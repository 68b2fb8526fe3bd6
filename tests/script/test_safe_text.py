"""TVMScript text never runs code: hostile texts raise DiagnosticError at the offending node and
nothing they ask for happens (a sentinel file is never created)."""
import pytest

from tensorize.errors import DiagnosticError, TVMError
from tensorize.script import from_source, tir as T

HEADER = '@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n'


def _body(line: str) -> str:
    return HEADER + "    " + line + "\n"


HOSTILE_LINES = [
    "A[0] = T.float32(__import__('os').system('touch {p}'))",
    "open('{p}', 'w')",
    "A[0] = T.float32(len(open('{p}', 'w').name))",
    "A[0] = T.float32(len(().__class__.__bases__[0].__subclasses__()))",
    "eval(\"open('{p}', 'w')\")",
    "exec(\"open('{p}', 'w')\")",
    "A[0] = T.float32((lambda: open('{p}', 'w'))())",
    "A[0] = T.float32(getattr(T, 'prim_func'))",
    "A[0] = T.float32([open('{p}', 'w') for _ in range(1)][0])",
    "A[0] = T.float32({{open('{p}', 'w'): 1 for _ in range(1)}})",
    "A[0] = T.float32(T.re.enum.sys.modules['os'].system('touch {p}'))",
    "A[0] = T.float32(T.__dict__['__builtins__']['open']('{p}', 'w'))",
    "A[0] = T.float32(T.float32.__class__.__init__.__globals__['__builtins__']['open']('{p}', 'w'))",
    "A[0] = T.float32(T.Buffer.__call__.__globals__['_specs'])",
    "A[0] = T.float32(A.replace(name='x'))",
    "A[0] = T.float32(T.prim_func(lambda: 0))",
    "A[0] = T.float32(globals()['__builtins__'])",
    "A[0] = T.float32(vars(T))",
    "A[0] = T.float32(type(A))",
    "A[0] = T.float32(A.data.__class__)",
    "A[0] = T.float32(9 ** 9 ** 9)",
    "A[0] = T.float32(len('x' * 10 ** 10))",
    "A[0] = T.float32(1 << 10 ** 8)",
    "A[0] = T.float32(breakpoint())",
    "A[0] = T.float32(compile('1', 'x', 'eval'))",
]


@pytest.mark.parametrize("line", HOSTILE_LINES)
def test_hostile_text_raises_and_runs_nothing(line, tmp_path):
    sentinel = tmp_path / "pwned"
    text = _body(line.format(p=sentinel))
    with pytest.raises(DiagnosticError) as info:
        from_source(text)
    assert not sentinel.exists()
    err = info.value
    assert err.lineno_ == 3 and err.column is not None and err.column >= 5
    assert isinstance(err, TVMError)


def test_hostile_decorator_options_are_not_evaluated(tmp_path):
    sentinel = tmp_path / "pwned"
    text = f"@T.prim_func(private=open('{sentinel}', 'w'))\ndef f(A: T.Buffer((4,), \"float32\")):\n    A[0] = T.float32(0)\n"
    with pytest.raises(DiagnosticError, match="literal options"):
        from_source(text)
    assert not sentinel.exists()


def test_hostile_top_level_statements_are_refused(tmp_path):
    sentinel = tmp_path / "pwned"
    for top in (f"x = open('{sentinel}', 'w')", f"open('{sentinel}', 'w')", "import os\nos.system('true')"):
        with pytest.raises(DiagnosticError):
            from_source(top + "\n" + _body("A[0] = T.float32(0)"))
    assert not sentinel.exists()


def test_hostile_module_class(tmp_path):
    sentinel = tmp_path / "pwned"
    text = ("@I.ir_module\nclass Module:\n    @T.prim_func\n    def main(A: T.Buffer((4,), \"float32\")):\n"
            f"        A[0] = T.float32(__import__('os').system('touch {sentinel}'))\n")
    with pytest.raises(DiagnosticError, match="__import__"):
        from_source(text)
    assert not sentinel.exists()


def test_deeply_nested_text_is_a_diagnostic():
    with pytest.raises(DiagnosticError):
        from_source(_body("A[0] = " + "(" * 5000 + "1" + ")" * 5000))
    with pytest.raises(DiagnosticError):
        from_source(_body("A[0] = T.float32(" + "1 + " * 20000 + "1)"))


def test_non_string_text_is_refused():
    with pytest.raises(DiagnosticError, match="must be a str"):
        from_source(b"@T.prim_func")


@pytest.mark.parametrize("line", [
    "A[0] = T.float32(2 ** 10 + len((1, 2)) * 0)",
])
def test_builtins_outside_the_vocabulary_are_unknown(line):
    with pytest.raises(DiagnosticError, match="unknown name 'len'"):
        from_source(_body(line))


def test_vocabulary_still_parses():
    text = '''
@T.prim_func
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), n: T.int32):
    C = T.alloc_buffer((16,), "float32")
    for i in T.serial(2 ** 4):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = A[vi] * T.float32(2) + T.Cast("float32", n) if vi < 8 else T.float32(-1)
    for i, j in T.grid(4, 4):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi * 4 + vj] = T.max(C[vi * 4 + vj], T.float32(0)) + T.float32(A.shape[0] // 16)
'''
    f = from_source(text)
    assert f.params[2].dtype == "int32"


def test_decorated_function_keeps_its_python_scope():
    scale = 3

    def helper(x):
        return x * scale

    @T.prim_func
    def g(A: T.Buffer((4,), "float32")):
        for i in range(len([0, 1, 2, 3])):
            A[i] = T.float32(helper(2))

    assert "6" in g.script()
