"""onnxruntime's low-bit weight rewrites: a MatMul whose weights are a DequantizeLinear of a
constant 4-bit or 8-bit matrix, blocked along K, becomes ``com.microsoft:MatMulNBits``
(``qdq_selectors.cc``'s DQ -> MatMul selector, run by ``QDQSelectorActionTransformer`` at
level 2; a MatMul + Add that MatMulAddFusion made a Gemm first goes the same way, the Add
becoming its bias), and a MatMulNBits read only by an Add of a constant [N] bias takes
the bias in (``matmul_nbits_fusion.cc``, ``MatMulNBitsFusion``).

The weights are written as INT4/UINT4 initializers (``Const.bits``), or int8/uint8, from
the motif's seed; the scales are float32 constants, blocked along K with a power of two of
at least 16 as the block size. onnxruntime quantizes the activations to int8 inside
MatMulNBits unless told otherwise (its ``accuracy_level`` 4, the default of
``session.qdq_matmulnbits_accuracy_level``): a deliberate approximation of about 0.5% that
no ONNX result defines, so the onnxruntime backend asks for level 1 (float32 activations),
whose results are the specification's.
"""
from __future__ import annotations

import numpy as np

from dlgate import dtypes as dt
from dlgate.seeds import sub_seed
from dlgate.spec.motif import Const, In, Out, Step
from dlgate.spec.motifs.ort_common import F32, OrtMotif
from dlgate.spec.quant import QR, _scale_values

I8, U8 = dt.INT8, dt.UINT8
#: Block sizes the selector takes (powers of two, at least 16) and some it declines.
BLOCKS, OTHER_BLOCKS = (16, 32, 64), (8, 24, 48)
#: The value range of each weight width and signedness.
RANGE = {(4, I8): (-8, 7), (4, U8): (0, 15), (8, I8): QR[I8], (8, U8): QR[U8]}


def _rng(a: dict, key: str) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(sub_seed(a["seed"], key)))


def dq_weights(ctx, k: int, n: int, bits: int, qt: str, axis: int, block: int, zp: bool) -> dict:
    """The DequantizeLinear attributes of a [K, N] weight: blocked along ``axis`` with
    ``block``, float32 scales, a zero point of the weights' type or none."""
    shape = [k, n]
    shape[axis] = -(-shape[axis] // block)
    lo, hi = RANGE[bits, qt]
    zps = [[ctx.rng.randint(lo, hi) for _ in range(shape[1])] for _ in range(shape[0])] if zp else None
    return {"mode": "block", "axis": axis, "block": block, "one": False, "sdt": F32, "out": F32, "zdt": qt,
            "odt": False, "scale": _scale_values(ctx, tuple(shape), F32, ctx.coin(0.5)), "zp": zps,
            "bits": 4 if bits == 4 else 0, "k": k, "n": n}


def weight_const(a: dict, dq: dict, key: str) -> Const:
    """The weights a DequantizeLinear of ``dq`` reads: [K, N] values of its type and width,
    from the motif's seed."""
    qt = dq["zdt"]
    lo, hi = RANGE[8 if dq["bits"] != 4 else 4, qt]
    v = _rng(a, key).integers(lo, hi + 1, size=(dq["k"], dq["n"]))
    return Const(v.astype(dt.NUMPY[qt]), key, bits=dq["bits"])


def float_const(a: dict, key: str, shape: tuple, lo: float = -1.0, hi: float = 1.0) -> Const:
    return Const(_rng(a, key).uniform(lo, hi, size=shape).astype(np.float32), key)


class _NBits(OrtMotif):
    level = "extended"
    fuse_dtypes = (F32,)
    min_opset = 21  # blocked DequantizeLinear and 4-bit types
    arity = 1
    dtypes = ((F32,),)

    @staticmethod
    def _width(ctx) -> tuple:
        return ctx.choice((4, 4, 8)), ctx.choice((I8, U8))


class DQMatMulNBits(_NBits):
    """DequantizeLinear of a constant [K, N] int4, uint4, int8 or uint8 matrix, blocked
    along K (axis 0) with a block size that is a power of two of at least 16, read only by
    MatMul as its B, becomes MatMulNBits (an Add of a [N] bias after it, which
    MatMulAddFusion makes a Gemm first, becomes its bias). Blocks along N (axis 1) or of
    another size are declined."""

    name = "DQMatMulNBits"
    onnx_op = "MatMul"  # the op whose schema takes the motif's input
    onnx_ops = ("DequantizeLinear", "Add")
    rewrite = "DQMatMulToMatMulNBits (QDQSelectorActionTransformer)"
    expects = ("fused:com.microsoft:MatMulNBits",)
    conditions = ("block_size", "axis")
    ranks = (1, 2, 3)

    def draw(self, ctx, ins, violate):
        k, n = ins[0].shape[-1], max(2, ctx.dim(16))
        bits, qt = self._width(ctx)
        block = ctx.choice(OTHER_BLOCKS if violate == "block_size" else BLOCKS)
        dq = dq_weights(ctx, k, n, bits, qt, 1 if violate == "axis" else 0, block, ctx.coin(0.7))
        return {"dq": dq, "bias": ctx.coin(0.5)}

    def steps(self, a):
        s = [Step("DequantizeLinear", a["dq"], (weight_const(a, a["dq"], "w"),)), Step("MatMul", {}, (In(0), Out(0)))]
        if a["bias"]:
            s.append(Step("Add", {}, (Out(1), float_const(a, "b", (a["dq"]["n"],)))))
        return s


class MatMulNBitsBias(_NBits):
    """``matmul_nbits_fusion.cc``: a MatMulNBits read only by an Add of a constant bias of
    shape [N] takes it as its bias input. MatMulAddFusion (level 1) makes a Gemm of every
    MatMul + Add first, except the projections of an attention block it leaves for
    AttentionFusion: a LayerNormalization read by exactly three MatMuls and one Add, whose
    other operand an Add makes. So the motif is that block, each projection's weights
    4-bit (DQ -> MatMul -> Add bias), the three summed and added back to the normalized
    input. A bias of shape [1, N] is declined (``bias_shape``); with two projections
    (``attention_shape``) MatMulAddFusion takes the pairs first."""

    name = "MatMulNBitsBias"
    onnx_op = "LayerNormalization"
    onnx_ops = ("DequantizeLinear", "MatMul", "Add")
    rewrite = "MatMulNBitsFusion"
    expects = ("transformer:MatMulNBitsFusion",)
    conditions = ("bias_shape", "attention_shape")
    ranks = (3,)

    def draw(self, ctx, ins, violate):
        h = ins[0].shape[-1]
        qt = ctx.choice((I8, U8))
        block = ctx.choice(BLOCKS)
        n = 2 if violate == "attention_shape" else 3
        dqs = [dq_weights(ctx, h, h, 4, qt, 0, block, ctx.coin(0.7)) for _ in range(n)]
        return {"dqs": dqs, "h": h, "bias": (1, h) if violate == "bias_shape" else (h,),
                "ln": {"epsilon": ctx.choice((1e-5, 1e-12)), "axis": -1, "stash_type": 1}}

    def steps(self, a):
        h = a["h"]
        s = [Step("LayerNormalization", a["ln"], (In(0), float_const(a, "gamma", (h,), 0.5, 1.5),
                                                  float_const(a, "beta", (h,))))]
        heads = []
        for i, dq in enumerate(a["dqs"]):
            s.append(Step("DequantizeLinear", dq, (weight_const(a, dq, f"w{i}"),)))
            s.append(Step("MatMul", {}, (Out(0), Out(len(s) - 1))))
            s.append(Step("Add", {}, (Out(len(s) - 1), float_const(a, f"b{i}", a["bias"]))))
            heads.append(Out(len(s) - 1))
        total = heads[0]
        for head in heads[1:]:
            s.append(Step("Add", {}, (total, head)))
            total = Out(len(s) - 1)
        return s + [Step("Add", {}, (Out(0), total))]


OPS = [DQMatMulNBits, MatMulNBitsBias]
