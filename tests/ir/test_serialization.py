"""The IR's JSON form: a structural round trip for every program of the test corpus, sharing kept,
and garbage or hostile documents rejected with SerializationError without running anything."""
import json

import pytest

import tensorize as tvm
from tensorize.ir import SerializationError, load_json, save_json, structural_equal
from tensorize.ir.structural import assert_structural_equal
from tests.fuzz.corpus_programs import corpus


@pytest.mark.parametrize("name", sorted(corpus()))
def test_corpus_round_trips(name):
    program = corpus()[name]
    text = save_json(program)
    back = load_json(text)
    assert type(back) is type(program)
    assert_structural_equal(back, program)
    assert back.script() == program.script()
    assert save_json(back) == text  # a fixed point: the same document again


def test_tvm_names_and_sharing():
    x = tvm.tir.Var("x", "int32")
    expr = x * 2 + x
    back = tvm.ir.load_json(tvm.ir.save_json(expr))
    assert back.a.a is back.b and structural_equal(back, expr, map_free_vars=True)


def test_floats_and_containers():
    value = {"a": (1.5, float("inf")), "b": [float("nan"), None, True]}
    back = load_json(save_json(value))
    assert back["a"] == (1.5, float("inf")) and back["b"][1:] == [None, True] and back["b"][0] != back["b"][0]


def _doc(nodes, root=None):
    return json.dumps({"tensorize_ir": 1, "root": root if root is not None else {"node": 0}, "nodes": nodes})


@pytest.mark.parametrize("text", [
    "", "garbage", "{", "[]", "null", '{"tensorize_ir": 2, "root": 0, "nodes": []}',
    _doc([{"type": "os.system", "attrs": {}}]),
    _doc([{"type": "Var", "attrs": {"__class__": "x"}}]),
    _doc([{"type": "Var", "attrs": {"name": {"node": 0}}}]),
    _doc([{"type": "IntImm", "attrs": {"value": 1, "dtype": "int32"}}], root={"node": 5}),
    _doc([{"type": "For", "attrs": {"kind": {"enum": "ForKind", "value": 99}}}]),
    _doc([{"type": "For", "attrs": {"kind": {"enum": "Popen", "value": "ls"}}}]),
    _doc([{"type": "IntImm", "attrs": {"value": {"eval": "1+1"}}}]),
    _doc([{"type": "IntImm", "attrs": []}]),
    _doc([[]]),
    _doc([{"type": "IntImm", "attrs": {"value": {"dict": [[[1], 2]]}}}]),
    '{"tensorize_ir": 1, "root": ' + "[" * 100000 + "]" * 100000 + ', "nodes": []}',
])
def test_bad_documents_are_rejected(text):
    with pytest.raises(SerializationError):
        load_json(text)


def test_truncated_documents_are_rejected():
    text = save_json(corpus()["int8_gemm"])
    for cut in range(1, len(text), max(1, len(text) // 50)):
        with pytest.raises(SerializationError):
            load_json(text[:cut])
