"""Small workloads of the search-space tests: fp32 GEMM (+ bias + ReLU), a depthwise conv, a row sum."""
from tensorize.script import tir as T


def gemm_f32(M, N, K):
    @T.prim_func
    def gemm(A: T.Buffer((M, K), "float32"), B: T.Buffer((K, N), "float32"), C: T.Buffer((M, N), "float32")):
        for i, j, k in T.grid(M, N, K):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return gemm


def gemm_bias_relu(M, N, K):
    @T.prim_func
    def fused(A: T.Buffer((M, K), "float32"), B: T.Buffer((K, N), "float32"), bias: T.Buffer((N,), "float32"),
              D: T.Buffer((M, N), "float32")):
        C = T.alloc_buffer((M, N), "float32")
        E = T.alloc_buffer((M, N), "float32")
        for i, j, k in T.grid(M, N, K):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(M, N):
            with T.block("bias"):
                vi, vj = T.axis.remap("SS", [i, j])
                E[vi, vj] = C[vi, vj] + bias[vj]
        for i, j in T.grid(M, N):
            with T.block("relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = T.max(E[vi, vj], T.float32(0))

    return fused


def depthwise_f32(H, W, C, KH, KW):
    OH, OW = H - KH + 1, W - KW + 1

    @T.prim_func
    def dep(data: T.Buffer((1, H, W, C), "float32"), kernel: T.Buffer((KH, KW, C), "float32"),
            out: T.Buffer((1, OH, OW, C), "float32")):
        for n, h, w, c, rh, rw in T.grid(1, OH, OW, C, KH, KW):
            with T.block("dep"):
                vn, vh, vw, vc, vrh, vrw = T.axis.remap("SSSSRR", [n, h, w, c, rh, rw])
                with T.init():
                    out[vn, vh, vw, vc] = T.float32(0)
                out[vn, vh, vw, vc] = out[vn, vh, vw, vc] + data[vn, vh + vrh, vw + vrw, vc] * kernel[vrh, vrw, vc]

    return dep


def row_sum(M, K):
    @T.prim_func
    def rsum(A: T.Buffer((M, K), "float32"), B: T.Buffer((M,), "float32")):
        for i, k in T.grid(M, K):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]

    return rsum


def conv1x1_batch1_relu(H, W, CI, CO):
    """A batch-1 NHWC 1x1 convolution and a ReLU reading it at batch index 0, as a model's task has them."""
    from tensorize import te

    data = te.placeholder((1, H, W, CI), name="data")
    weight = te.placeholder((CI, CO), name="weight")
    rc = te.reduce_axis((0, CI), "rc")
    conv = te.compute((1, H, W, CO), lambda n, y, x, c: te.sum(data[n, y, x, rc] * weight[rc, c], axis=[rc]),
                      name="conv")
    relu = te.compute((1, H, W, CO), lambda n, y, x, c: te.max(conv[0, y, x, c], 0.0), name="relu")
    return te.create_prim_func([data, weight, relu])
