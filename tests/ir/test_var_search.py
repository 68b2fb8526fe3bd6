"""``uses_var`` / ``uses_any``: whether a statement or expression mentions a variable, stopping at the first."""
from tensorize.ir import expr as E
from tensorize.ir import stmt as S
from tensorize.ir.buffer import decl_buffer
from tensorize.ir.functor import collect_vars, uses_any, uses_var
from tensorize.schedule.surgery import uses_any_var


def _program():
    i, j, n = E.Var("i", "int32"), E.Var("j", "int32"), E.Var("n", "int32")
    a = decl_buffer((16, 16), "float32", name="A")
    store = S.BufferStore(a, E.Cast("float32", i * 16 + j), [i, j])
    guarded = S.IfThenElse(j < n, store)
    return S.For(i, 0, 16, S.ForKind.SERIAL, S.For(j, 0, 16, S.ForKind.SERIAL, guarded)), (i, j, n)


def test_every_used_variable_is_found_and_no_other():
    loop, (i, j, n) = _program()
    for var in (j, n):  # i occurs in the store as well, j and n in the guard and the indices
        assert uses_any(loop.body, {id(var)}) and uses_var(loop.body, lambda v, var=var: v is var)
    assert uses_any(loop, {id(i)})
    stranger = E.Var("i", "int32")  # the same name, another variable
    assert not uses_any(loop, {id(stranger)}) and not uses_var(loop, lambda v: v is stranger)
    assert not uses_any(loop, set())
    assert {v.name for v in collect_vars(loop)} >= {"i", "j", "n"}


def test_leaves_are_answered_directly():
    i = E.Var("i", "int32")
    assert uses_any(i, {id(i)}) and not uses_any(E.IntImm("int32", 3), {id(i)})
    assert not uses_var(E.FloatImm("float32", 1.0), lambda v: True)


def test_the_schedule_surgery_search_reads_a_blocks_regions():
    i = E.Var("i", "int32")
    a = decl_buffer((16,), "float32", name="A")
    region = S.BufferRegion(a, [E.Range.from_min_extent(i, 1)])
    block = S.Block([], [region], [], "b", S.Evaluate(E.IntImm("int32", 0)))
    assert uses_any_var(block, {id(i): E.IntImm("int32", 0)})
    assert not uses_any_var(block, {id(E.Var("k", "int32")): E.IntImm("int32", 0)})
    assert not uses_any_var(block, {})
