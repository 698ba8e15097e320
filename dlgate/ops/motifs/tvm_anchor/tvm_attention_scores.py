from __future__ import annotations

import math

from dlgate import dtypes as dt
from dlgate.ops.motif import In, Out, Step, const_values, last, scalar
from dlgate.ops.motifs.tvm_common import TvmMotif


class TvmAttentionScores(TvmMotif):
    """Scaled dot-product attention as exporters write it: ``Softmax(Q @ K' / s [+ mask])
    @ V`` with the scale (a Div or a Mul by a constant) and an optional constant additive
    mask on the scores: the score product takes both as its epilogue,
    ``matmul_divide``, ``matmul_multiply`` (``_add`` with the mask). Broken
    (``scale_after_product``): Q is scaled before the product (the other common spelling),
    which leaves the product no element-wise epilogue but the mask."""

    onnx_op = "MatMul"
    onnx_ops = ("Div", "Mul", "Add", "Softmax")
    rewrite = "FuseOps (attention scores + scale + mask)"
    expects = ("fused:matmul_divide", "fused:matmul_multiply", "fused:matmul_divide_add", "fused:matmul_multiply_add")
    arity = 3
    ranks = (3, 4)
    # no float16: the CPU has no float16 MatMul kernel, so onnxruntime casts the chain to
    # float32 once and runs it without the float16 rounding of each intermediate (checked:
    # its results equal the unrounded chain's), beyond float16's tolerance after cancellation
    types = (dt.FLOAT32, dt.FLOAT64)
    conditions = ("scale_after_product",)

    def draw(self, ctx, ins, violate):
        q = ins[0]
        return {"t": ctx.dim(8), "dv": ctx.dim(8), "div": ctx.coin(), "mask": ctx.coin(),
                "s": int(q.shape[-2]), "d": int(q.shape[-1]), "dtype": q.dtype}

    def input_type(self, ctx, i, ins, a, dtype):
        batch = tuple(ins[0].shape[:-2])
        shape = (a["d"], a["t"]) if i == 1 else (a["t"], a["dv"])
        return ins[0].with_dtype(dtype).with_shape(batch + shape)

    def steps(self, a):
        d = a["d"]
        scale = scalar(math.sqrt(d) if a["div"] and not a["violate"] else 1 / math.sqrt(d), a["dtype"], "scale")
        if a["violate"] == "scale_after_product":
            s = [Step("Mul", {}, (In(0), scale)), Step("MatMul", {}, (Out(0), In(1)))]
        else:
            s = [Step("MatMul", {}, (In(0), In(1))), Step("Div" if a["div"] else "Mul", {}, (Out(0), scale))]
        if a["mask"]:
            s.append(Step("Add", {}, (last(s), const_values(a, "mask", a["dtype"], (a["s"], a["t"])))))
        s.append(Step("Softmax", {"axis": -1}, (last(s),)))
        return s + [Step("MatMul", {}, (last(s), In(2)))]


OPS = [TvmAttentionScores]
