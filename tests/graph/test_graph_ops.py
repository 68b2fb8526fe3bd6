"""The graph layer on small hand-built graphs: fusion, task extraction, executor, against numpy."""
import numpy as np
import pytest

from tensorize.errors import TVMValueError
from tensorize.graph import Graph, build, extract_tasks, fuse

TARGET = "llvm"


def _dense_chain(g, x, hidden, rng, n=2):
    for _ in range(n):
        w = g.add_constant("w", rng.standard_normal((hidden, hidden)).astype("float32"))
        b = g.add_constant("b", rng.standard_normal(hidden).astype("float32"))
        x = g.add_node("relu", [g.add_node("add", [g.add_node("dense", [x, w]), b])])
    return x


def test_identical_layers_are_one_task_weighted_by_calls():
    rng = np.random.default_rng(0)
    g = Graph()
    x = g.add_input("x", (4, 16))
    g.outputs.append(_dense_chain(g, x, 16, rng, n=3))
    tasks = extract_tasks(g)
    assert [(t.weight, len(t.calls)) for t in tasks] == [(3, 3)]
    assert [grp.ops for grp in fuse(g)] == [["dense", "add", "relu"]] * 3
    a = rng.standard_normal((4, 16)).astype("float32")
    lib = build(g, TARGET)
    ref = a
    consts = list(g.constants.values())
    for i in range(3):
        ref = np.maximum(ref @ consts[2 * i] + consts[2 * i + 1], 0)
    np.testing.assert_allclose(lib.run(a)[0], ref, rtol=1e-5, atol=1e-5)


def test_escaping_value_cuts_the_group():
    """``y = relu(x + 1)`` with ``x + 1`` also an output: two kernels, both outputs right."""
    g = Graph()
    x = g.add_input("x", (8, 8))
    one = g.add_constant("one", np.ones((8,), "float32"))
    s = g.add_node("add", [x, one])
    g.outputs += [s, g.add_node("relu", [s])]
    assert [grp.ops for grp in fuse(g)] == [["add"], ["relu"]]
    a = np.random.default_rng(1).standard_normal((8, 8)).astype("float32")
    out_s, out_r = build(g, TARGET).run(a)
    np.testing.assert_allclose(out_s, a + 1, rtol=1e-6)
    np.testing.assert_allclose(out_r, np.maximum(a + 1, 0), rtol=1e-6)


@pytest.mark.parametrize("block_input_first", [True, False])
def test_a_residual_add_joins_the_layer_whose_output_only_it_reads(block_input_first):
    """``h = relu(x W1 + b1); y = h + (h W2 + b2)`` (MobileNet-V2 writes the block's input first): the add
    joins the second layer's kernel, not the first's, whose output the second layer also reads."""
    rng = np.random.default_rng(4)
    g = Graph()
    x = g.add_input("x", (4, 16))
    h = _dense_chain(g, x, 16, rng, n=1)
    w2, b2 = (g.add_constant(f"c{i}", rng.standard_normal(shape).astype("float32")) for i, shape in
              enumerate([(16, 16), (16,)]))
    layer = g.add_node("add", [g.add_node("dense", [h, w2]), b2])
    g.outputs.append(g.add_node("add", [h, layer] if block_input_first else [layer, h]))
    assert [grp.ops for grp in fuse(g)] == [["dense", "add", "relu"], ["dense", "add", "add"]]
    a = rng.standard_normal((4, 16)).astype("float32")
    consts = list(g.constants.values())
    ref_h = np.maximum(a @ consts[0] + consts[1], 0)
    np.testing.assert_allclose(build(g, TARGET).run(a)[0], ref_h + ref_h @ consts[2] + consts[3], rtol=1e-5, atol=1e-5)


def test_reshape_is_a_view_and_ops_match_numpy():
    rng = np.random.default_rng(2)
    g = Graph()
    x = g.add_input("x", (2, 6, 8))
    sm = g.add_node("softmax", [x], {"axis": -1})
    r = g.add_node("reshape", [sm], {"shape": (2, 48)})
    t = g.add_node("transpose", [g.add_node("reshape", [r], {"shape": (12, 8)})], {"perm": [1, 0]})
    ln = g.add_node("layer_norm", [x, g.add_constant("g", np.full(8, 2.0, "float32")),
                                   g.add_constant("b", np.zeros(8, "float32"))])
    g.outputs += [t, ln]
    lib = build(g, TARGET)
    a = rng.standard_normal((2, 6, 8)).astype("float32")
    e = np.exp(a - a.max(-1, keepdims=True))
    soft = e / e.sum(-1, keepdims=True)
    out_t, out_ln = lib.run(x=a)
    np.testing.assert_allclose(out_t, soft.reshape(12, 8).T, rtol=1e-5, atol=1e-6)
    ref_ln = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5) * 2.0
    np.testing.assert_allclose(out_ln, ref_ln, rtol=1e-4, atol=1e-4)
    assert not any(grp.ops == ["reshape"] for grp in fuse(g))


def test_run_checks_its_inputs():
    g = Graph()
    x = g.add_input("x", (2, 2))
    g.outputs.append(g.add_node("relu", [x]))
    lib = build(g, TARGET)
    with pytest.raises(TVMValueError, match="inputs missing"):
        lib.run(y=np.zeros((2, 2), "float32"))
    with pytest.raises(TVMValueError, match="expected shape"):
        lib.run(np.zeros((3, 2), "float32"))


class _OneSchedule:
    """A database stand-in with the interface build uses: the given schedule maker for every task."""

    def __init__(self, make):
        self.make, self.asked = make, 0

    def query_schedule(self, mod, target):
        self.asked += 1
        return self.make(mod)


def test_database_schedules_are_used():
    from tensorize.schedule import Schedule

    g = Graph()
    x = g.add_input("x", (4, 4))
    g.outputs.append(g.add_node("relu", [x]))
    db = _OneSchedule(lambda mod: Schedule(mod))
    lib = build(g, TARGET, database=db)
    assert db.asked == 1 and set(lib.how.values()) == {"tuned"}
    none = build(g, TARGET, database=_OneSchedule(lambda mod: None))
    assert set(none.how.values()) == {"default"}


def test_weights_are_packed_once_at_load_into_column_tile_panels():
    """A dense layer's and a convolution's constant weights are marked layout-free; the default schedule
    reads them through panels packed per column tile, which the library packs once when it is made (the
    kernels take the packed arrays, the original constants are not copied in)."""
    from tensorize.graph.build import compile_task
    from tensorize.target import Target

    rng = np.random.default_rng(2)
    g = Graph()
    x = g.add_input("x", (1, 6, 6, 16))
    w = g.add_constant("w", rng.standard_normal((3, 3, 16, 96)).astype("float32"))
    y = g.add_node("relu", [g.add_node("conv2d", [x, w], {"strides": (1, 1), "pads": (1, 1, 1, 1),
                                                           "dilations": (1, 1), "group": 1, "layout": "NHWC"})])
    flat = g.add_node("reshape", [y], {"shape": (36, 96)})
    d = g.add_constant("d", rng.standard_normal((96, 64)).astype("float32"))
    g.outputs.append(g.add_node("dense", [flat, d]))
    tasks = extract_tasks(g)
    assert [list(t.mod["main"].attrs["layout_free_buffers"]) for t in tasks] == [[1], [1]]
    target = Target("llvm -mcpu=skylake-avx512")
    _, how, rewrites = compile_task(tasks[-1], target)
    assert how == "default" and [(r.param_index, r.shape) for r in rewrites] == [(1, (2, 96, 32))]
    lib = build(g, Target("llvm -mcpu=native"))  # runs here: this CPU's vector width may differ
    assert lib.packed_weights == 2
    assert "w" not in lib._executor.buffers and "d" not in lib._executor.buffers
    a = rng.standard_normal((1, 6, 6, 16)).astype("float32")
    pad = np.pad(a[0], ((1, 1), (1, 1), (0, 0)))
    conv = np.zeros((6, 6, 96), "float32")
    for dy in range(3):
        for dx in range(3):
            conv += pad[dy:dy + 6, dx:dx + 6] @ g.constants["w"][dy, dx]
    ref = np.maximum(conv, 0).reshape(36, 96) @ g.constants["d"]
    np.testing.assert_allclose(lib.run(a)[0], ref, rtol=1e-4, atol=1e-4)


def test_outputs_share_storage_once_their_readers_have_run():
    """Unfused, a dense chain's values die one after another: two storage blocks serve five kernel outputs,
    a value that is also a graph output keeps its own, and the results stay right run after run."""
    rng = np.random.default_rng(3)
    g = Graph()
    x = g.add_input("x", (8, 16))
    y = _dense_chain(g, x, 16, rng, n=2)
    g.outputs += [y, g.add_node("relu", [g.add_node("add", [y, g.add_constant("one", np.ones(16, "float32"))])])]
    lib = build(g, TARGET, fusion=False)
    ex = lib._executor
    assert ex.planned_bytes < ex.unplanned_bytes
    consts = list(g.constants.values())
    for seed in (4, 5):
        a = np.random.default_rng(seed).standard_normal((8, 16)).astype("float32")
        ref = a
        for i in range(2):
            ref = np.maximum(ref @ consts[2 * i] + consts[2 * i + 1], 0)
        out, last = lib.run(a)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(last, np.maximum(ref + 1, 0), rtol=1e-5, atol=1e-5)
