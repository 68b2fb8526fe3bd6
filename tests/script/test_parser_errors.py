"""from_source, and errors that name the file, line and column."""
import pytest

import tensorize as tvm
from tensorize.errors import DiagnosticError
from tensorize.ir import IRModule, PrimFunc
from tensorize.script import from_source
from tensorize.script import tir as T
from tests.programs import SEED001_VECTORIZED_PRINTED, SEED002_MM_RELU, SEED003_SPLIT_PRINTED, load


def test_from_source_module_with_header_comments():
    mod = from_source(SEED003_SPLIT_PRINTED)
    assert type(mod) is IRModule and mod.function_names() == ["main"]
    func = mod["main"]
    assert func.attrs == {"tir.noalias": True, "global_symbol": "main"}
    assert [b.name for b in func.buffers] == ["A", "B", "C"]


def test_from_source_legacy_printed_function_with_vector_slices():
    func = from_source(SEED001_VECTORIZED_PRINTED)["main"]
    assert func.attrs["from_legacy_te_schedule"] is True and func.attrs["tir.noalias"] is True
    let = func.body.body
    assert let.var.name == "cse_var_1" and let.body.value.dtype == "float32x8"


def test_from_source_function_and_private():
    func = from_source('''
@T.prim_func(private=True)
def f(A: T.Buffer((4,), "float32")):
    A[0] = T.float32(1)
''')
    assert isinstance(func, PrimFunc) and "global_symbol" not in func.attrs


def test_seed_modules_round_trip_through_the_printer():
    MyModule = load(SEED002_MM_RELU)["MyModuleWithAxisRemapSugar"]
    for mod in (MyModule, from_source(SEED003_SPLIT_PRINTED), from_source(SEED001_VECTORIZED_PRINTED)):
        tvm.ir.assert_structural_equal(mod, from_source(mod.script()))


def _error(text: str) -> DiagnosticError:
    with pytest.raises(DiagnosticError) as info:
        from_source(text)
    return info.value


def test_syntax_error_reports_line_and_column():
    err = _error('''@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    A[0] = (1 +
''')
    assert err.source_name == "<tvmscript>" and err.lineno_ is not None
    assert "invalid syntax" in str(err)


def test_unknown_name_reports_line_column_and_caret():
    err = _error('''@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    for i in range(4):
        A[i] = undefined_thing + T.float32(1)
''')
    assert (err.lineno_, err.column) == (4, 16)
    text = str(err)
    assert "unknown name 'undefined_thing'" in text
    assert "A[i] = undefined_thing + T.float32(1)" in text
    assert text.splitlines()[-1] == " " * (4 + 15) + "^"


def test_decorated_function_errors_point_into_this_file():
    with pytest.raises(DiagnosticError) as info:
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            A[0] = not_defined_anywhere

    err = info.value
    assert err.source_name.endswith("test_parser_errors.py")
    import inspect

    line = inspect.currentframe().f_lineno - 6
    assert err.lineno_ == line and "not_defined_anywhere" in str(err)


@pytest.mark.parametrize("body, message", [
    ("    while True:\n        pass\n    else:\n        pass\n", "while ... else"),
    ("    T.reads(A[0])\n", "T.block"),
    ("    vi = T.axis.spatial(4, 0)\n", "T.block"),
    ("    lambda: 0\n", "lambda"),
    ("    with T.block('b'):\n        vi, vj = T.axis.remap('SS', [0, 1])\n", "not a loop variable"),
    ("    A[0, 1] = T.float32(0)\n", "1 dimensions"),
    ("    for i in [1, 2]:\n        pass\n", "loop iterates"),
])
def test_unsupported_or_misplaced_constructs(body, message):
    err = _error('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n' + body)
    assert message in str(err) and err.lineno_ is not None


def test_missing_annotation_is_reported():
    err = _error('@T.prim_func\ndef f(A):\n    pass\n')
    assert "needs a type annotation" in str(err) and err.lineno_ == 2


def test_binding_mismatch_is_reported_at_the_axis_line():
    """``T.axis.spatial(128, i)`` under ``for i in range(129)`` is an error at that line (a narrower
    loop, seed 002's example, is accepted as TVM accepts it)."""
    verify = pytest.importorskip("tensorize.analysis.verify")
    with pytest.raises(verify.VerifyError) as info:
        from_source('''
@T.prim_func
def mm_relu(A: T.Buffer((129, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    for i in range(129):
        with T.block("C"):
            vi = T.axis.spatial(128, i)
            C[vi, 0] = A[vi, 0]
''')
    assert "<tvmscript>:6:" in str(info.value)


def test_diagnostic_error_raised_directly_has_its_message():
    """Any raiser gets a readable message: the class derives from SyntaxError, whose str() shows ``msg``."""
    import traceback

    from tensorize.errors import TVMError

    plain = DiagnosticError("something is wrong")
    assert str(plain) == "<tvmscript>: error: something is wrong" and plain.msg_only == "something is wrong"
    located = DiagnosticError("bad index", "k.py", 7, 3, "A[i] = 1")
    assert str(located).splitlines() == ["k.py:7:3: error: bad index", "    A[i] = 1", "      ^"]
    assert isinstance(located, SyntaxError) and isinstance(located, TVMError)
    shown = "".join(traceback.format_exception_only(located))
    assert "None" not in shown and "k.py:7:3: error: bad index" in shown
    with pytest.raises(SyntaxError, match="bad index"):
        raise located


def test_parsing_pauses_the_collector_and_restores_it():
    """The parser pauses the cyclic GC for speed; it is back on after success and after an error."""
    import gc

    assert gc.isenabled()
    from_source('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    A[0] = T.float32(1)\n')
    assert gc.isenabled()
    with pytest.raises(DiagnosticError):
        from_source('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    A[0] = nowhere\n')
    assert gc.isenabled()
    gc.disable()
    try:
        from_source('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    A[0] = T.float32(1)\n')
        assert not gc.isenabled()  # a caller's choice to keep it off is respected
    finally:
        gc.enable()


def test_one_def_decorated_per_configuration_sees_each_configuration():
    """The source of a ``def`` is read once per code object; each decoration still evaluates its own closure."""
    def factory(n):
        @T.prim_func
        def f(A: T.Buffer((n,), "float32")):
            for i in range(n):
                with T.block("b"):
                    vi = T.axis.spatial(n, i)
                    A[vi] = T.float32(n)
        return f

    four, eight = factory(4), factory(8)
    assert [int(s) for s in four.buffer_map[four.params[0]].shape] == [4]
    assert [int(s) for s in eight.buffer_map[eight.params[0]].shape] == [8]
    assert "T.float32(8.0)" in eight.script() and "T.float32(8.0)" not in four.script()


def test_a_function_without_readable_source_names_itself_and_the_fix():
    namespace = {"T": T}
    exec("def made_by_exec(A: T.Buffer((4,), 'float32')):\n    A[0] = T.float32(1)\n", namespace)
    with pytest.raises(DiagnosticError, match="made_by_exec.*from_source"):
        T.prim_func(namespace["made_by_exec"])
