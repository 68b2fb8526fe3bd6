"""Traces built TVM's way: Instruction(kind, inputs, attrs, outputs), Trace(insts, decisions), printing,
simplification, JSON and replay, as TVM's trace tests pin them."""
import tensorize as tvm
from tensorize.schedule.rv import BlockRV, LoopRV
from tensorize.s_tir.schedule import Instruction, InstructionKind, Trace
from tensorize.script import tir as T


@T.prim_func
def two_stages(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def get_block(name, out):
    return Instruction(kind=InstructionKind.get("GetSBlock"), inputs=[], attrs=[name, "main"], outputs=[out])


def inline(block):
    return Instruction(kind=InstructionKind.get("ComputeInline"), inputs=[block], attrs=[], outputs=[])


def postproc():
    return Instruction(kind=InstructionKind.get("EnterPostproc"), inputs=[], attrs=[], outputs=[])


def test_prints_as_tvm_names_outputs_in_order():
    b0, l1, l2 = BlockRV(), LoopRV(), LoopRV()
    loops = Instruction(kind=InstructionKind.get("GetLoops"), inputs=[b0], attrs=[], outputs=[l1, l2])
    trace = Trace([get_block("B", b0), loops], {})
    trace.append(get_block("C", BlockRV()))
    assert str(trace) == "\n".join([
        "# from tvm import s_tir",
        "def apply_trace(sch: s_tir.Schedule) -> None:",
        '  b0 = sch.get_sblock(name="B", func_name="main")',
        "  l1, l2 = sch.get_loops(block=b0)",
        '  b3 = sch.get_sblock(name="C", func_name="main")',
    ])
    assert trace.pop().args == {"name": "C", "func_name": "main"}
    assert Trace([], {}).pop() is None and str(Trace()).endswith("  pass")


def test_split_attrs_and_constants_print_as_python_values():
    b0, l1, l2, l3 = BlockRV(), LoopRV(), LoopRV(), LoopRV()
    loops = Instruction(kind=InstructionKind.get("GetLoops"), inputs=[b0], attrs=[], outputs=[l1])
    split = Instruction(kind=InstructionKind.get("Split"), inputs=[l1, None, T.int32(4)],
                        attrs=[T.bool(True), T.bool(False)], outputs=[l2, l3])
    lines = Trace([get_block("B", b0), loops, split]).as_python()
    assert lines[-1] == ("l2, l3 = sch.split(loop=l1, factors=[None, 4], preserve_unit_iters=True, "
                         "disable_predication=False)")


def test_simplified_drops_unused_lookups_and_postproc():
    b0, b1 = BlockRV(), BlockRV()
    trace = Trace([get_block("B", b0), inline(b0), get_block("C", b1), postproc(), inline(b1)])
    assert len(trace.simplified(remove_postproc=False).insts) == 5
    kept = trace.simplified(remove_postproc=True)
    assert [i.kind for i in kept.insts] == ["get_sblock", "compute_inline"]
    assert len(trace.insts) == 5  # the original is untouched


def test_json_in_tvm_form_replays():
    b0 = BlockRV()
    trace = Trace([get_block("B", b0), inline(b0)], {})
    data = trace.as_json()
    assert data == [[["GetSBlock", [], ["B", "main"], ["b0"]], ["ComputeInline", ["b0"], [], []]], []]
    sch = tvm.s_tir.Schedule(two_stages)
    Trace.apply_json_to_schedule(data, sch)
    assert [b.name_hint for b in _blocks(sch.mod["main"])] == ["root", "C"]


def test_annotation_value_strings_survive_json():
    b0 = BlockRV()
    for value in ["SSR", "", '"']:
        ann = Instruction(kind=InstructionKind.get("Annotate"), inputs=[b0, value],
                          attrs=["meta_schedule.auto_tensorize"], outputs=[])
        sch = tvm.s_tir.Schedule(two_stages)
        Trace.apply_json_to_schedule(Trace([get_block("B", b0), ann]).as_json(), sch)
        assert sch.get(sch.get_block("B")).annotations["meta_schedule.auto_tensorize"] == value


def test_decisions_given_to_the_trace_are_kept():
    v = tvm.tir.Var("v", "int32")
    cat = Instruction(kind=InstructionKind.get("SampleCategorical"), inputs=[], attrs=[[1, 2, 3], [0.2, 0.3, 0.5]],
                      outputs=[v])
    trace = Trace([cat], {cat: 2})
    assert trace.get_decision(cat) == 2 and trace.as_json()[1] == [[0, 2]]
    sch = tvm.s_tir.Schedule(two_stages)
    trace.apply_to_schedule(sch)
    assert sch.trace.insts[0].decision == 2


def _blocks(func):
    out = []
    tvm.tir.stmt_functor.post_order_visit(func.body, lambda n: out.append(n) if isinstance(n, tvm.tir.Block) else None)
    return out[::-1]
