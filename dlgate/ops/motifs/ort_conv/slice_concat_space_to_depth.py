from __future__ import annotations

from dlgate.ops.motif import In, Out, Step, last
from dlgate.ops.motifs.ort_common import F32, F64, INT64_MAX, OrtMotif


class SliceConcatSpaceToDepth(OrtMotif):
    """``slice_concat_to_space_to_depth_fusion.cc`` (level 1): a YOLO-style focus layer,
    four Slices of one float32 or float64 NCHW tensor with steps 2 on H and W, offsets
    {0, 1} x {0, 1}, full extents, each read only by a Concat of the four on the channel
    axis, becomes SpaceToDepth (blocksize 2), followed by a channel Gather when the phases
    are not in SpaceToDepth's order. A branch is one Slice of both axes or two chained
    Slices, one per axis. An odd H or W is cropped first (the Slices then read the crop).
    Two branches of one phase, or the Concat on the batch axis, break it."""

    onnx_op = "Slice"
    onnx_ops = ("Concat",)
    rewrite = "SliceConcatToSpaceToDepthFusion"
    fuse_dtypes = (F32, F64)
    arity = 1
    ranks = (4,)
    conditions = ("four_phases", "channel_axis", "dtype")
    PHASES = ((0, 0), (0, 1), (1, 0), (1, 1))

    def draw(self, ctx, ins, violate):
        h, w = ins[0].shape[2:]
        crop = [h - h % 2, w - w % 2] if h % 2 or w % 2 else None
        phases = list(self.PHASES)
        if ctx.coin():
            ctx.rng.shuffle(phases)  # YOLOv5 writes (0, 0), (1, 0), (0, 1), (1, 1)
        if violate == "four_phases":
            phases[3] = phases[0]
        full = ctx.choice(("max", "dim"))
        return {"crop": crop, "phases": [list(p) for p in phases], "chain": [ctx.coin(0.3) for _ in phases],
                "ends": [INT64_MAX, INT64_MAX] if full == "max" else list(crop or [h, w]),
                "axis": (0 if violate == "channel_axis" else 1) - (4 if ctx.coin(0.3) else 0)}

    def steps(self, a):
        s, src = [], In(0)
        if a["crop"]:
            s.append(Step("Slice", {"starts": [0, 0], "ends": a["crop"], "axes": [2, 3], "steps": None}, (src,)))
            src = Out(0)
        branches = []
        for (ph, pw), chain in zip(a["phases"], a["chain"]):
            if chain:  # H, then W
                s.append(Step("Slice", {"starts": [ph], "ends": a["ends"][:1], "axes": [2], "steps": [2]}, (src,)))
                s.append(Step("Slice", {"starts": [pw], "ends": a["ends"][1:], "axes": [3], "steps": [2]},
                              (last(s),)))
            else:
                s.append(Step("Slice", {"starts": [ph, pw], "ends": a["ends"], "axes": [2, 3], "steps": [2, 2]},
                              (src,)))
            branches.append(last(s))
        return s + [Step("Concat4", {"axis": a["axis"]}, tuple(branches))]


OPS = [SliceConcatSpaceToDepth]
