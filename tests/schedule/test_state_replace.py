"""ScheduleState.replace: copy-on-write as TVM (nodes only the state holds change in place, nodes
someone else holds are copied and stay unchanged), srefs follow, and tvm_ffi sees nodes by structure."""
import pytest

import tensorize as tvm
from tensorize.ir import IRModule
from tensorize.ir.stmt import Block, BlockRealize, Evaluate, For
from tests.schedule._sched_workloads import two_stage as two_stages


def fresh_state():
    """A state on a private copy of ``two_stages`` (nobody else holds its nodes)."""
    return tvm.s_tir.ScheduleState(tvm.script.from_source(two_stages.script()))


def empty_loop(loop):
    return For(loop.loop_var, 0, loop.extent, loop.kind, Evaluate(0))


def test_unshared_nodes_change_in_place():
    state = fresh_state()
    func, seq = state.mod["main"], state.mod["main"].body.block.body
    func_id, seq_id = id(func), id(seq)
    del func, seq
    loop = state.mod["main"].body.block.body[1]
    sref = state.get_sref(loop)
    target = BlockRealize([], True, Block([], [], [], "target", loop))
    del loop
    state.replace(sref, target)
    assert id(state.mod["main"]) == func_id
    assert id(state.mod["main"].body.block.body) == seq_id
    assert state.mod["main"].body.block.body[1] is target
    assert sref.stmt is target.block.body  # the loop is still in the tree, inside the new block


def test_held_nodes_are_copied_and_unchanged():
    state = fresh_state()
    old_func = state.mod["main"]
    old_text = old_func.script()
    held_loop = state.mod["main"].body.block.body[0]
    sref = state.get_sref(held_loop.body)  # the inner loop j
    state.replace(sref, empty_loop(held_loop.body))
    assert state.mod["main"] is not old_func
    assert old_func.script() == old_text
    assert state.mod["main"].body.block.body[0] is not held_loop
    assert isinstance(state.mod["main"].body.block.body[0].body.body, Evaluate)
    assert sref.stmt is state.mod["main"].body.block.body[0].body  # same loop variable: the sref follows


def test_held_loop_is_copied_but_its_unshared_parent_is_not():
    state = fresh_state()
    func_id = id(state.mod["main"])
    held = state.mod["main"].body.block.body[0]
    other = state.mod["main"].body.block.body[1]
    state.replace(state.get_sref(held.body), empty_loop(held.body))
    assert id(state.mod["main"]) == func_id
    assert state.mod["main"].body.block.body[0] is not held
    assert state.mod["main"].body.block.body[1] is other
    assert isinstance(held.body.body, BlockRealize)  # the held loop is unchanged


def test_held_module_and_function_map_are_copied():
    state = fresh_state()
    old_mod, old_functions = state.mod, state.mod.functions
    root = state.mod["main"].body.block
    state.replace(state.get_sref(root), root.replace(name_hint="renamed"))
    assert state.mod is not old_mod and state.mod.functions is not old_functions
    assert old_mod["main"].body.block.name_hint == "root"
    assert state.mod["main"].body.block.name_hint == "renamed"
    assert hash(old_functions) != hash(state.mod.functions)


def test_other_functions_are_kept():
    mod = IRModule({"main": tvm.script.from_source(two_stages.script()),
                    "other": tvm.script.from_source(two_stages.script())})
    state = tvm.s_tir.ScheduleState(mod)
    other = state.mod["other"]
    root = state.mod["main"].body.block
    state.replace(state.get_sref(root), root.replace(name_hint="renamed"))
    assert state.mod["other"] is other


def test_wrong_kind_of_replacement_is_a_type_error():
    state = fresh_state()
    loop = state.mod["main"].body.block.body[0]
    with pytest.raises(TypeError, match="cannot be replaced"):
        state.replace(state.get_sref(loop), Evaluate(0))
    assert state.mod["main"].body.block.body[0] is loop


def test_tvm_ffi_compares_nodes_by_structure():
    tvm_ffi = pytest.importorskip("tvm_ffi")
    a, b = tvm.script.from_source(two_stages.script()), tvm.script.from_source(two_stages.script())
    assert tvm_ffi.structural_equal(a, b)
    assert not tvm_ffi.structural_equal(a.body, b.body.block)
    assert tvm_ffi.structural_hash(IRModule({"main": a})) == tvm_ffi.structural_hash(IRModule({"main": b}))
