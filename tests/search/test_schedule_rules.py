"""Schedule rules: the sketches a GEMM, a fused GEMM + bias + ReLU, an int8 GEMM with VNNI and a
row sum get (no execution: generating the space only)."""
from search.context import TuneContext
from tensorize.ir.tensor_intrin import TensorIntrin
from search.schedule_rule import (LAYOUT_REWRITE_PREPROC, PARALLEL, RULES, UNROLL, VECTORIZE, AutoInline,
                                  MultiLevelTiling, ParallelVectorizeUnroll, default_rules)
from search.schedule_rule.analysis import AUTO_TENSORIZE, TILED
from search.space_generator import PostOrderApply
from tensorize.schedule import Schedule
from tests.search.space_workloads import conv1x1_batch1_relu, gemm_bias_relu, gemm_f32, row_sum
from tests.workloads import int8_gemm

HOST = "llvm -mcpu=haswell"
ZNVER4 = "llvm -mcpu=znver4 -mattr=+avx512f,+avx512vnni,+avx512bw"


def _blocks(sch):
    return {name: rs[0].block for name, rs in sch._index("main").blocks.items()}


def test_registry_names_every_rule():
    assert RULES.names() == ["add_rfactor", "auto_bind", "auto_inline", "multi_level_tiling",
                             "multi_level_tiling_gpu", "multi_level_tiling_tensor_core", "multi_level_tiling_wgmma",
                             "multi_level_tiling_with_intrin",
                             "parallel_vectorize_unroll", "random_compute_location"]
    assert isinstance(RULES.create({"name": "multi_level_tiling", "structure": "SSRSRS"}), MultiLevelTiling)


def test_gemm_gets_ssrsrs_tiles_and_write_cache_branches():
    ctx = TuneContext.create(gemm_f32(64, 64, 64), HOST, intrinsics=(), seed=0)
    space = PostOrderApply().generate_design_space(ctx)
    assert len(space) == 3  # no cache, cache after the first and after the second spatial tile
    kinds = [[i.kind for i in s.trace.insts] for s in space]
    for k in kinds:
        assert k.count("sample_perfect_tile") == 3 and k.count("sample_categorical") == 1
    assert [k.count("cache_write") for k in kinds] == [0, 1, 1]
    for sch in space:
        loops = sch.get_loops(sch.get_block("C"))
        assert len(loops) == 10  # i0 j0 i1 j1 k0 i2 j2 k1 i3 j3
        assert sch.get(sch.get_block("C")).annotations[TILED] == "SSRSRS"
        root = sch.get(sch.get_block("root")).annotations
        assert root[PARALLEL] == ctx.num_threads * 16 and root[VECTORIZE] == 8 * 8 and root[UNROLL] in (0, 16, 64, 512)
    # level 2: the write-back sits under j1 (4 loops above it), level 1 under j0 (2 loops)
    depth = sorted(len(s.get_loops(s.get_block("C_global"))) for s in space[1:])
    assert depth == [4, 6]


def test_elementwise_consumers_are_inlined_and_fused_into_the_tile():
    ctx = TuneContext.create(gemm_bias_relu(32, 32, 32), HOST, intrinsics=(), seed=0)
    space = PostOrderApply().generate_design_space(ctx)
    assert len(space) == 3
    for sch in space:
        assert "bias" not in _blocks(sch)  # inlined into relu
    fused = [s for s in space if len(s.get_loops(s.get_block("relu"))) > 2]
    assert len(fused) == 2 and all("C_global" not in _blocks(s) for s in space)  # relu is the write stage


def test_auto_inline_keeps_outputs_and_reductions():
    sch = Schedule(gemm_bias_relu(8, 8, 8))
    for name in ("relu", "C"):
        AutoInline().apply(sch, sch.get_block(name), None)
    assert set(_blocks(sch)) == {"root", "C", "bias", "relu"}


def test_parallel_vectorize_unroll_only_on_root():
    ctx = TuneContext.create(gemm_f32(16, 16, 16), HOST, intrinsics=(), seed=0)
    sch = Schedule(ctx.mod)
    rule = ParallelVectorizeUnroll(max_jobs_per_core=4, unroll_max_steps=(0, 32))
    assert rule.apply(sch, sch.get_block("C"), ctx) == [sch] and "annotate" not in [i.kind for i in sch.trace.insts]
    rule.apply(sch, sch.get_block("root"), ctx)
    ann = sch.get(sch.get_block("root")).annotations
    assert ann[PARALLEL] == 4 * ctx.num_threads and ann[UNROLL] in (0, 32)


def test_vnni_space_holds_tensorized_and_plain_sketches():
    # B declared a weight (layout-free, as te marks it): its packed copy may be pre-packed
    ctx = TuneContext.create(int8_gemm(1024, 1024, 1024).with_attr("layout_free_buffers", [1]), ZNVER4, seed=0)
    vnni_name = TensorIntrin.get("dot_16x4_vnni").name   # TVM's name is an alias of the canonical one
    assert vnni_name in ctx.intrinsics
    space = PostOrderApply().generate_design_space(ctx)
    intrins = []
    for sch in space:
        marks = [b.annotations.get(AUTO_TENSORIZE) for b in _blocks(sch).values() if AUTO_TENSORIZE in b.annotations]
        intrins.append(marks[0] if marks else None)
    assert vnni_name in intrins and None in intrins
    vnni = space[intrins.index(vnni_name)]
    preproc = [n for n, b in _blocks(vnni).items() if b.annotations.get(LAYOUT_REWRITE_PREPROC) == 1]
    assert preproc, "the packed copy of B is marked for pre-packing"
    assert intrins.count(None) == 3  # the untensorized MLT branches


def test_depthwise_int8_space_holds_lanewise_dot_sketches():
    from tests.search.test_tensor_candidates import depthwise_nhwc

    func = depthwise_nhwc(18, 18, 32, 3, 3)
    kernel_index = next(i for i, p in enumerate(func.params) if func.buffer_map[p].name == "kernel")
    ctx = TuneContext.create(func.with_attr("layout_free_buffers", [kernel_index]), ZNVER4, seed=0)
    space = PostOrderApply().generate_design_space(ctx)
    marks = [next((b.annotations[AUTO_TENSORIZE] for b in _blocks(s).values() if AUTO_TENSORIZE in b.annotations),
                  None) for s in space]
    # VNNI (16 lanes) and AVX2 (8 lanes) compete with plain vector code in one space
    assert {"lanedot_16x4_u8i8s32_vnni", "lanedot_8x4_u8i8s32_avx2", None} <= set(marks)
    packed = [n for n, b in _blocks(space[marks.index("lanedot_16x4_u8i8s32_vnni")]).items()
              if b.annotations.get(LAYOUT_REWRITE_PREPROC) == 1]
    assert any(n.startswith("kernel") for n in packed), "the weights' packed copy is marked for pre-packing"
    assert not any(n.startswith("data") for n in packed), "the activation is packed on every call"


def test_rfactor_branch_for_little_spatial_parallelism():
    ctx = TuneContext.create(row_sum(4, 4096), HOST, intrinsics=(), seed=0, num_threads=2)
    space = PostOrderApply().generate_design_space(ctx)
    rf = [s for s in space if "B_rf" in _blocks(s)]
    assert rf and len(space) > len(rf)
    assert "rfactor" in [i.kind for i in rf[0].trace.insts]


def test_default_rules_add_intrinsic_tiling_only_with_intrinsics():
    host = TuneContext.create(gemm_f32(8, 8, 8), HOST, intrinsics=(), seed=0)  # no intrinsic: no intrinsic tiling
    vnni = TuneContext.create(gemm_f32(8, 8, 8), ZNVER4, seed=0)
    names = lambda ctx: [r.registered_name for r in default_rules(ctx)]  # noqa: E731
    assert "multi_level_tiling_with_intrin" not in names(host)
    assert "multi_level_tiling_with_intrin" in names(vnni)


def test_padding_into_a_convolution_is_a_second_sketch():
    """The CPU rules keep a convolution's padding as a stage (placed by random_compute_location) and also
    branch into a sketch with it inlined (a depthwise convolution's best program on AVX-512)."""
    from experiments.workloads import get_workload
    from tensorize import te

    w = get_workload("dep_conv", "mobilenet_112", "float32")
    ctx = TuneContext.create(te.create_prim_func(w.args), HOST, intrinsics=(), seed=0)
    space = PostOrderApply().generate_design_space(ctx)
    with_pad = [s for s in space if "pad" in _blocks(s)]
    inlined = [s for s in space if "pad" not in _blocks(s)]
    assert with_pad and inlined and len(with_pad) == len(inlined)
    sch = Schedule(ctx.mod)
    assert AutoInline().apply(sch, sch.get_block("pad"), ctx) == [sch]  # off by default, as MetaSchedule
    branches = AutoInline(pad_branch=True).apply(sch, sch.get_block("pad"), ctx)
    assert len(branches) == 2 and "pad" in _blocks(branches[0]) and "pad" not in _blocks(branches[1])


def test_the_vectorized_axis_tile_is_drawn_in_whole_vectors():
    # j indexes C's contiguous dimension: on AVX-512 its innermost tile is 16 or 32 f32 lanes, on AVX2 8..32
    for target, lanes in ((ZNVER4, 16), (HOST, 8)):
        ctx = TuneContext.create(gemm_f32(64, 32, 64), target, intrinsics=(), seed=0)
        for sch in PostOrderApply().generate_design_space(ctx):
            tiles = [i for i in sch.trace.insts if i.kind == "sample_perfect_tile"]
            assert [i.args.get("innermost_multiple_of") for i in tiles] == [None, lanes, None]
            assert tiles[1].decision[-1] % lanes == 0
    off = TuneContext.create(gemm_f32(64, 32, 64), ZNVER4, intrinsics=(), seed=0)
    sch = Schedule(gemm_f32(64, 32, 64))
    MultiLevelTiling(align_vector_tile=False).apply(sch, sch.get_block("C"), off)
    assert all("innermost_multiple_of" not in i.args for i in sch.trace.insts)


def test_padding_is_not_inlined_into_a_tensorized_convolution():
    """An intrinsic's description reads buffers: padding inlined into the block marked for the AVX2 FMA would make
    every sample of that sketch fail at post-processing (a quarter of a padded convolution's sketches did)."""
    from experiments.workloads import get_workload
    from search.postproc import default_postprocs
    from search.space_generator import sample_candidate
    from tensorize import te

    w = get_workload("conv2d", "resnet_56", "float32")
    ctx = TuneContext.create(te.create_prim_func(w.args), HOST, seed=0, num_threads=2)
    assert "fma_8_f32f32f32_avx2" in ctx.intrinsics
    space = PostOrderApply().generate_design_space(ctx)
    tensorized = [s for s in space if any(AUTO_TENSORIZE in b.annotations for b in _blocks(s).values())]
    assert tensorized and all("pad" in _blocks(s) for s in tensorized)
    assert any("pad" not in _blocks(s) for s in space)  # the plain sketches still branch on the padding
    posts = default_postprocs(ctx)
    for sketch in tensorized:
        sample_candidate(ctx, sketch, posts, seed=0)  # raises if the sketch cannot be tensorized


def test_a_batch_one_epilogue_reading_index_0_is_fused_and_small_images_get_pixel_sketches():
    """A model's epilogue reads ``conv[0, y, x, c]``: it is elementwise (batch extent 1), so the write stage fuses it
    into the tile; a 7x7 image also gets sketches with its rows and columns fused into 49 pixels (the default
    schedule's fusion), in the convolution, its buffer and the epilogue alike."""
    from search.schedule_rule.analysis import is_elementwise_of

    sch = Schedule(conv1x1_batch1_relu(7, 7, 16, 32))
    assert is_elementwise_of(sch.get(sch.get_block("relu")), sch.get(sch.get_block("conv")))
    ctx = TuneContext.create(conv1x1_batch1_relu(7, 7, 16, 32), HOST, intrinsics=(), seed=0)
    space = PostOrderApply().generate_design_space(ctx)
    pixels = [s for s in space if any(i.kind == "transform_layout" for i in s.trace.insts)]
    assert len(space) == 6 and len(pixels) == 3
    for s in space:
        assert "conv_global" not in _blocks(s)  # the ReLU is the write stage, never a cache
    for s in pixels:
        assert [int(iv.dom.extent) for iv in s.get(s.get_block("conv")).iter_vars] == [1, 49, 32, 16]
        assert [int(b) for b in s.get(s.get_block("relu")).writes[0].buffer.shape] == [1, 7, 7, 32]
    rules = [AutoInline(), MultiLevelTiling(fuse_pixels=False)]
    assert len(PostOrderApply(rules=rules).generate_design_space(ctx)) == 3
    # rows of 12 pixels, which two tiles of 6 fill, stay apart: no pixel sketch
    wide = TuneContext.create(conv1x1_batch1_relu(4, 12, 16, 32), HOST, intrinsics=(), seed=0)
    assert not any(i.kind == "transform_layout" for s in PostOrderApply().generate_design_space(wide)
                   for i in s.trace.insts)
