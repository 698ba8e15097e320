from __future__ import annotations

from dlgate.ops.motif import Out, Step
from dlgate.ops.motifs.ort_common import F16, F32
from dlgate.ops.motifs.ort_conv._shared import _PadThen
from dlgate.ops.registry import get


class PadAveragePoolFusion(_PadThen):
    """Pad -> AveragePool with ``count_include_pad=1`` (the padded zeros are counted
    either way) and ``ceil_mode=0``, whose pads stay below its kernel once the Pad's are
    added; onnxruntime declines MaxPool (implicit padding is -inf there),
    ``count_include_pad=0`` and ``ceil_mode=1``."""

    onnx_ops = ("AveragePool", "MaxPool")
    arity = 1
    types = (F32, F16)
    conditions = _PadThen.pad_conditions + ("count_include_pad", "max_pool", "pads_below_kernel", "ceil_mode")

    def draw(self, ctx, ins, violate):
        pad = self.pad(ctx, ins[0], violate)
        padded = get("Pad").infer(ins[:1], pad)[0]
        op = "MaxPool" if violate == "max_pool" else "AveragePool"
        pool = get(op).sample(ctx, [padded])
        r = ins[0].rank - 2
        pool.update(auto_pad="NOTSET", kernel=[max(2, k) for k in pool["kernel"]])
        pool["pads"] = [min(p, 1) for p in pool["pads"]]
        if not any(pool["pads"]):
            pool["pads"] = [1] + [0] * (2 * r - 1)  # written out: the fusion adds to them
        # the pads after the fusion stay below the kernel (onnxruntime declines otherwise)
        pp, begin, end = pool["pads"], pad["pads"][2:r + 2], pad["pads"][r + 4:]
        for i in range(r):
            pool["kernel"][i] = max(pool["kernel"][i], pp[i] + begin[i] + 1, pp[r + i] + end[i] + 1)
        if violate == "pads_below_kernel":
            i = next(i for i in range(r) if begin[i] or end[i])
            pp[i] = pp[r + i] = 0
            pool["kernel"][i] = max(begin[i], end[i])
        pool["ceil_mode"] = int(violate == "ceil_mode")
        if op == "AveragePool":
            pool["count_include_pad"] = 0 if violate == "count_include_pad" else 1
        return {"pad": pad, "op": op, "pool": pool, "rank": ins[0].rank}

    def child(self, a):
        return Step(a["op"], a["pool"], (Out(0),))


OPS = [PadAveragePoolFusion]
