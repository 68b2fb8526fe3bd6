"""Workloads shared by the tests (one definition each): the float32 matmul of the schedule tests, and the
integer GEMM and conv2d of the intrinsic, tensorize, search and property tests."""
from tensorize.script import tir as T


def int8_gemm(M, N, K, a_dtype="uint8", b_dtype="int8", a_cols=None):
    """C[i, j] += A[i, k] * B[j, k], int32 accumulation; B stored (N, K) as the VNNI/sdot descs read it; A stored
    with ``a_cols`` columns (default K: a wider A is read in its first K)."""
    @T.prim_func
    def gemm(A: T.Buffer((M, a_cols or K), a_dtype), B: T.Buffer((N, K), b_dtype), C: T.Buffer((M, N), "int32")):
        for i, j, k in T.grid(M, N, K):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0
                C[vi, vj] = C[vi, vj] + T.Cast("int32", A[vi, vk]) * T.Cast("int32", B[vj, vk])

    return gemm


def conv2d_nhwc_int8(N, H, W, CI, CO, KH, KW):
    """u8 data NHWC x s8 kernel HWIO -> s32, stride 1, no padding."""
    OH, OW = H - KH + 1, W - KW + 1

    @T.prim_func
    def conv(data: T.Buffer((N, H, W, CI), "uint8"), kernel: T.Buffer((KH, KW, CI, CO), "int8"),
             out: T.Buffer((N, OH, OW, CO), "int32")):
        for n, h, w, co, rh, rw, ci in T.grid(N, OH, OW, CO, KH, KW, CI):
            with T.block("conv"):
                vn, vh, vw, vco, vrh, vrw, vci = T.axis.remap("SSSSRRR", [n, h, w, co, rh, rw, ci])
                with T.init():
                    out[vn, vh, vw, vco] = 0
                out[vn, vh, vw, vco] = out[vn, vh, vw, vco] + T.Cast("int32", data[vn, vh + vrh, vw + vrw, vci]) \
                    * T.Cast("int32", kernel[vrh, vrw, vci, vco])

    return conv


def matmul_f32(M, N, K, transpose_b=False, main_attrs=False):
    """C[i, j] += A[i, k] * B[k, j] in float32 with an init block (B stored (N, K) when ``transpose_b``);
    ``main_attrs`` adds ``global_symbol = "main"`` and ``tir.noalias``."""
    b_shape = (N, K) if transpose_b else (K, N)

    if main_attrs:
        @T.prim_func
        def matmul(A: T.Buffer((M, K), "float32"), B: T.Buffer(b_shape, "float32"), C: T.Buffer((M, N), "float32")):
            T.func_attr({"global_symbol": "main", "tir.noalias": True})
            for i, j, k in T.grid(M, N, K):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * (B[vj, vk] if transpose_b else B[vk, vj])

        return matmul

    @T.prim_func
    def matmul(A: T.Buffer((M, K), "float32"), B: T.Buffer(b_shape, "float32"), C: T.Buffer((M, N), "float32")):
        for i, j, k in T.grid(M, N, K):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * (B[vj, vk] if transpose_b else B[vk, vj])

    return matmul
