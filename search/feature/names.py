"""The names of the per-store features, in vector order (see ``search.feature`` for the groups)."""
from __future__ import annotations

ARITH = ("float_mad", "float_addsub", "float_mul", "float_divmod", "float_cmp", "float_math_func",
         "float_other_func", "int_mad", "int_addsub", "int_mul", "int_divmod", "int_cmp", "int_other_func",
         "bool_op", "select_op", "cast_op")
ANNOTATED_KINDS = ("vec", "unroll", "parallel")
POSITIONS = ("none", "inner", "middle", "outer")
LOOP = ("num_stores", "num_loops", "outer_prod", "innermost_extent", "auto_unroll_max_step")
INTRINSICS = ("x86_int8_dot", "arm_int8_dot", "matrix", "float_dot", "other_llvm", "extern")
NUM_ACCESSES = 5
ACCESS = ("is_read", "is_write", "is_rw", "bytes", "unique_bytes", "lines", "unique_lines",
          "reuse_loop", "reuse_serial", "reuse_none", "reuse_dis_iter", "reuse_dis_bytes", "reuse_ct",
          "bytes_d_reuse_ct", "unique_bytes_d_reuse_ct", "lines_d_reuse_ct", "unique_lines_d_reuse_ct",
          "stride")
NUM_INTENSITY = 10
ALLOC = ("alloc_count", "alloc_size", "alloc_outer_prod", "alloc_inner_prod")


def _build() -> list[str]:
    names = [f"arith.{n}" for n in ARITH]
    for kind in ANNOTATED_KINDS:
        names += [f"{kind}.num", f"{kind}.prod", f"{kind}.len"] + [f"{kind}.pos_{p}" for p in POSITIONS]
    names += [f"loop.{n}" for n in LOOP]
    names += [f"intrin.{n}" for n in INTRINSICS]
    for i in range(NUM_ACCESSES):
        names += [f"access{i}.{n}" for n in ACCESS]
    names += [f"intensity.{i}" for i in range(NUM_INTENSITY)]
    names += [f"alloc.{n}" for n in ALLOC]
    return names


FEATURE_NAMES: tuple[str, ...] = tuple(_build())
INDEX: dict[str, int] = {n: i for i, n in enumerate(FEATURE_NAMES)}
NUM_FEATURES = len(FEATURE_NAMES)


def feature_names() -> list[str]:
    """The name of every feature dimension, in vector order.

    >>> names = feature_names()
    >>> len(names), names[0], names[-1]
    (152, 'arith.float_mad', 'alloc.alloc_inner_prod')
    """
    return list(FEATURE_NAMES)
