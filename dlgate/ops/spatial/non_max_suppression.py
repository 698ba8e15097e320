from __future__ import annotations

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType


class NonMaxSuppression(OpSpec):
    """Scores (B, classes, n) and boxes (B, n, 4) are graph tensors (float32, the only type
    ONNX allows; the spec takes scores first, so any rank-3 tensor can start an instance,
    and the lowering passes boxes first); ``iou_threshold`` is 1, so no box can suppress
    another (an IOU is at most 1 and suppression needs strictly more) and the output size
    is certain: ``B * classes * min(max_output_boxes_per_class, n)`` rows (batch, class,
    box) by descending score. ``score_threshold`` is absent or -inf. Equal scores leave the
    order unspecified (ONNX says nothing; onnx.reference and onnxruntime put the lower
    index first): ``undefined``."""

    onnx_op = "NonMaxSuppression"
    schema_inputs = (1, 0)
    arity = 2
    dtypes = ((dt.FLOAT32, dt.FLOAT32),)
    ranks = (3,)
    symbolic_ok = False

    def _common(self, ctx, n: int) -> dict:
        return {"max_output": ctx.int(1, n + 2), "center_point_box": int(ctx.coin(0.4)),
                "score_threshold": ctx.choice((None, "-inf"))}

    def sample(self, ctx, ins):
        return self._common(ctx, ins[0].shape[2])

    def input_type(self, ctx, i, ins, a, dtype):
        b, _, n = ins[0].shape
        return TensorType(dtype, (b, n, 4))

    def backward(self, ctx, out):
        if out.rank != 2 or out.shape[1] != 3 or out.dtype != dt.INT64:
            return None
        rows = out.shape[0]
        opts = [(b, c, k) for b in range(1, 4) for c in range(1, 5) for k in range(1, 17) if b * c * k == rows]
        if not opts:
            return None
        b, c, k = ctx.choice(opts)
        n = ctx.int(k, 16)
        a = self._common(ctx, n)
        a["max_output"] = k if k < n else ctx.int(n, n + 2)
        return [TensorType(dt.FLOAT32, (b, c, n)), TensorType(dt.FLOAT32, (b, n, 4))], a

    def requires(self, ins, a):
        scores, boxes = ins
        if boxes.rank != 3 or scores.rank != 3:
            return [False]
        return [boxes.shape[2] == 4, scores.shape[0] == boxes.shape[0], scores.shape[2] == boxes.shape[1],
                a["max_output"] >= 1]

    def _count(self, ins, a) -> int:
        b, c, n = ins[0].shape
        return b * c * min(a["max_output"], n)

    def infer(self, ins, a):
        return [TensorType(dt.INT64, (self._count(ins, a), 3))]

    def _thresholds(self, b, a, iou: float) -> list:
        ins = [b.const(np.asarray([a["max_output"]], dtype=np.int64), hint="max_output"),
               b.const(np.asarray([iou], dtype=np.float32), hint="iou_threshold")]
        if a["score_threshold"] is not None:
            ins.append(b.const(np.asarray([-np.inf], dtype=np.float32), hint="score_threshold"))
        return ins

    def onnx(self, b, a, xs, ys):
        b.node(self.onnx_op, [xs[1], xs[0]] + self._thresholds(b, a, 1.0), ys,
               center_point_box=b.opt(a["center_point_box"], 0))

    def _select(self, a, scores) -> list:
        return [_nms_select(scores[b, c], lambda i, chosen: len(chosen) < a["max_output"])
                for b in range(scores.shape[0]) for c in range(scores.shape[1])]

    def torch(self, a, scores, boxes=None):
        s = scores.detach().numpy()
        rows = []
        for (b, c), chosen in zip(np.ndindex(*s.shape[:2]), self._select(a, s)):
            rows += [[b, c, i] for i in chosen]
        return torch.tensor(rows, dtype=torch.int64).reshape(-1, 3)

    jumps = True
    integral_out = True
    gaps = (("iou_threshold below 1 with boxes from the graph, a score_threshold that can cut",
             "the output size would depend on the values"),)

    def value_range(self, a, ranges, ins):
        return [(0.0, float(max(ins[0].shape) - 1))]

    def _ties(self, a, scores) -> str | None:
        s = scores.detach().numpy()
        for (b, c), chosen in zip(np.ndindex(*s.shape[:2]), self._select(a, s)):
            row = s[b, c]
            for i in chosen:
                if int((row == row[i]).sum()) > 1:
                    return "NonMaxSuppression: a selected box's score equals another's; ONNX leaves the choice open"
        return None

    def undefined(self, a, ins, out_types):
        return self._ties(a, ins[0]) or self._near_identical(a, ins[1])

    def _near_identical(self, a, boxes):
        boxes = boxes.detach().to(torch.float64).numpy()
        for b in range(boxes.shape[0]):
            for i in range(boxes.shape[1]):
                for j in range(i):
                    if _iou(boxes[b, i], boxes[b, j], a["center_point_box"]) > 1 - 1e-5:
                        return "NonMaxSuppression: two boxes are (nearly) identical, their IOU may round above 1"
        return None


class NonMaxSuppressionClusters(NonMaxSuppression):
    """Scores (B, classes, n) from the graph, boxes a constant: per batch, clusters of
    jittered copies of a box, each member overlapping every other beyond ``iou_threshold``
    (by at least 0.05) and clusters far apart, so greedy suppression keeps exactly the
    best-scored box of each cluster: ``min(max_output_boxes_per_class, clusters)`` rows
    per batch and class, whatever the scores. Every batch has the same number of
    clusters."""

    name = "NonMaxSuppressionClusters"
    schema_inputs = (1,)
    arity = 1
    dtypes = ((dt.FLOAT32,),)

    def _boxes(self, ctx, batches: int, n: int, clusters: int, thr: float, center: int):
        boxes, members = [], []
        for _ in range(batches):
            ids = list(range(clusters)) + [ctx.rng.randrange(clusters) for _ in range(n - clusters)]
            ctx.rng.shuffle(ids)
            rows = [None] * n
            for cl in range(clusters):
                cx, cy = 16.0 * cl, 16.0 * ctx.rng.randint(0, 3)
                w, h = 4.0 + ctx.rng.randint(0, 16) / 4, 4.0 + ctx.rng.randint(0, 16) / 4
                group = [i for i in range(n) if ids[i] == cl]
                for jitter in (0.5, 0.25, 0.125, 0.0):
                    cand = []
                    for _ in group:
                        dx, dy, dw, dh = (ctx.rng.randint(-4, 4) * jitter / 4 for _ in range(4))
                        cand.append((cx + dx, cy + dy, w + dw, h + dh))
                    ious = [_iou(p, q, 1) for k, p in enumerate(cand) for q in cand[:k]]
                    if all(v > thr + 0.05 for v in ious):
                        break
                for i, (x0, y0, ww, hh) in zip(group, cand):
                    if center:
                        rows[i] = [x0, y0, ww, hh]
                    else:
                        y1, x1, y2, x2 = y0 - hh / 2, x0 - ww / 2, y0 + hh / 2, x0 + ww / 2
                        rows[i] = [y2, x2, y1, x1] if ctx.coin(0.2) else [y1, x1, y2, x2]
            boxes.append(rows)
            members.append(ids)
        return boxes, members

    def sample(self, ctx, ins):
        batches, classes, n = ins[0].shape
        a = self._common(ctx, n)
        clusters = ctx.rng.randint(1, min(n, 6))
        a["max_output"] = ctx.int(1, clusters + 1)
        a["iou_threshold"] = ctx.choice((0.0, 0.25, 0.5, 0.7))
        a["boxes"], a["clusters"] = self._boxes(ctx, batches, n, clusters, a["iou_threshold"], a["center_point_box"])
        return a

    def input_type(self, ctx, i, ins, a, dtype):
        raise AssertionError("one input")

    def _count(self, ins, a) -> int:
        s = ins[0]
        return s.shape[0] * s.shape[1] * min(a["max_output"], max(a["clusters"][0]) + 1)

    def backward(self, ctx, out):
        if out.rank != 2 or out.shape[1] != 3 or out.dtype != dt.INT64:
            return None
        rows = out.shape[0]
        opts = [(b, c, k) for b in range(1, 4) for c in range(1, 5) for k in range(1, 7) if b * c * k == rows]
        if not opts:
            return None
        b, c, k = ctx.choice(opts)
        n = ctx.int(k, 12)
        a = self._common(ctx, n)
        clusters = k if ctx.coin(0.5) else ctx.int(k, n)
        a["max_output"] = k if k < clusters else ctx.int(k, k + 1)
        a["iou_threshold"] = ctx.choice((0.0, 0.25, 0.5, 0.7))
        a["boxes"], a["clusters"] = self._boxes(ctx, b, n, clusters, a["iou_threshold"], a["center_point_box"])
        return [TensorType(dt.FLOAT32, (b, c, n))], a

    def requires(self, ins, a):
        s = ins[0]
        if s.rank != 3:
            return [False]
        shape = np.shape(a["boxes"])
        return [shape == (s.shape[0], s.shape[2], 4), a["max_output"] >= 1]

    def onnx(self, b, a, xs, ys):
        boxes = b.const(np.asarray(a["boxes"], dtype=np.float32), hint="boxes")
        b.node(self.onnx_op, [boxes, xs[0]] + self._thresholds(b, a, a["iou_threshold"]), ys,
               center_point_box=b.opt(a["center_point_box"], 0))

    gaps = ()

    def value_range(self, a, ranges, ins):
        return [(0.0, float(max(ins[0].shape) - 1))]

    def _select(self, a, scores) -> list:
        out = []
        for b in range(scores.shape[0]):
            ids = a["clusters"][b]
            for c in range(scores.shape[1]):
                out.append(_nms_select(scores[b, c], lambda i, chosen, ids=ids: len(chosen) < a["max_output"]
                                       and all(ids[j] != ids[i] for j in chosen)))
        return out

    def undefined(self, a, ins, out_types):
        return self._ties(a, ins[0])


# -- NonMaxSuppression ------------------------------------------------------------------------
def _iou(b1, b2, center: int) -> float:
    """onnx.reference's IOU (0 when the boxes do not overlap or one is empty), in float64."""
    if center:
        c1 = (b1[0] - b1[2] / 2, b1[1] - b1[3] / 2, b1[0] + b1[2] / 2, b1[1] + b1[3] / 2)
        c2 = (b2[0] - b2[2] / 2, b2[1] - b2[3] / 2, b2[0] + b2[2] / 2, b2[1] + b2[3] / 2)
        (x1a, y1a, x2a, y2a), (x1b, y1b, x2b, y2b) = c1, c2
    else:
        y1a, x1a, y2a, x2a = min(b1[0], b1[2]), min(b1[1], b1[3]), max(b1[0], b1[2]), max(b1[1], b1[3])
        y1b, x1b, y2b, x2b = min(b2[0], b2[2]), min(b2[1], b2[3]), max(b2[0], b2[2]), max(b2[1], b2[3])
    iw = min(x2a, x2b) - max(x1a, x1b)
    ih = min(y2a, y2b) - max(y1a, y1b)
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    a1, a2 = (x2a - x1a) * (y2a - y1a), (x2b - x1b) * (y2b - y1b)
    union = a1 + a2 - inter
    return 0.0 if a1 <= 0 or a2 <= 0 or union <= 0 else inter / union


def _nms_select(scores: np.ndarray, keep) -> list:
    """Greedy selection over one (batch, class) row: box indices by descending score (ties:
    the lower index first), each kept when ``keep(index, selected)`` says so."""
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
    chosen: list = []
    for i in order:
        if keep(i, chosen):
            chosen.append(i)
    return chosen


OPS = [NonMaxSuppression, NonMaxSuppressionClusters]
