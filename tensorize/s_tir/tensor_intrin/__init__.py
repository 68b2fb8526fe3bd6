"""``tvm.s_tir.tensor_intrin``: in TVM, importing this registers the tensor intrinsics. Here they live
in the separate ``intrinsics`` package (one module per hardware family), registered on its import."""
