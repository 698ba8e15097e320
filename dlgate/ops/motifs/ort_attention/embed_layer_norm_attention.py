from __future__ import annotations

import math

import numpy as np
import onnx
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import Restricted, TensorType, sampling_window
from dlgate.ops.domains import domain_losses
from dlgate.ops.motif import WholeMotif, const_values
from dlgate.ops.motifs.ort_common import F32, OrtMotif


I64 = dt.INT64


class EmbedLayerNormAttention(Restricted, WholeMotif, OrtMotif):
    """``embed_layer_norm_fusion.cc`` (``EmbedLayerNormFusion``, level 2), through
    ``attention_fusion.cc``'s DistilBert spelling: the fusion takes the embeddings' layer norm
    only when it feeds a ``com.microsoft:Attention``, which AttentionFusion makes of a BERT
    block only at opsets 11-13 and only with symbolic batch and sequence dimensions. So the
    motif is generated at opset 13 alone and asks for symbolic dimensions
    (``needs_dynamic``); in a static model neither fusion fires.

    Token ids (int64 [B, S, 1], squeezed, or [B, S]; or float32, cast to int64 first, which
    truncates, with |x| kept below V by the input search; absolute values 75% of the time:
    the fused EmbedLayerNormalization rejects the negative indices Gather allows) pick rows
    of a constant word table [V, W] (V >= 9, so every id from -8 to 8 is valid); position
    ids ``Expand(Unsqueeze(Range(0, Gather(Shape(ids), 1), 1)), Shape(ids))`` pick rows of a
    position table; their sum goes through the decomposed layer norm. One attention block
    in DistilBert's spelling follows: three constant projections reshaped to [0, -1, N, H]
    and transposed, Q divided by sqrt(H), a padding mask ``Equal(ids, 0)`` reshaped to
    ``Concat(B, 1, 1, S)`` (B and S gathered from the layer norm's Shape) and expanded to
    the scores' Shape, ``Where(mask, -inf, scores)``, Softmax on axis 3, the context
    reshaped to ``Concat(B, -1, W)``, the output projection, the residual and a second
    layer norm. Every shape is computed at run time, so the model holds at any batch and
    sequence size (the position table has rows for twice the drawn sequence).

    Declines: ``add_order`` (position embeddings added before word embeddings: only
    EmbedLayerNormFusion declines), ``softmax_axis`` (axis -1: AttentionFusion declines,
    so EmbedLayerNormFusion has no Attention to feed), ``scale`` (Q divided by another
    value than sqrt(H): AttentionFusion declines)."""

    onnx_op = "Gather"
    onnx_ops = ("Squeeze", "Abs", "Shape", "Range", "Unsqueeze", "Expand", "Add", "ReduceMean", "Sub", "Pow",
                "Sqrt", "Div", "Mul", "MatMul", "Reshape", "Transpose", "Concat", "Cast", "Equal", "Where",
                "Softmax")
    rewrite = "EmbedLayerNormFusion"
    expects = ("transformer:EmbedLayerNormFusion", "fused:com.microsoft:EmbedLayerNormalization")
    level = "extended"
    needs_dynamic = True
    min_opset = max_opset = 13
    arity = 1
    ranks = (2, 3)
    types = (I64, F32)
    conditions = ("add_order", "softmax_axis", "scale")

    def draw(self, ctx, ins, violate):
        x = ins[0]
        s = x.shape[1] if x.rank >= 2 else 1
        a = {"vocab": ctx.rng.randint(9, 24), "rows": 2 * max(s, 2), "abs": ctx.coin(0.75),
             "eps": ctx.choice((1e-5, 1e-12)), "rank": x.rank, "off": ctx.choice((1.5, 2.0)),
             "float": x.dtype == F32}
        return self._heads(a, ctx.choice((1, 2, 2, 4)), ctx.choice((2, 4, 4, 8)), violate)

    @staticmethod
    def _heads(a: dict, heads: int, hd: int, violate: str | None) -> dict:
        # Q is divided by sqrt(H) (a Div by 1, which NoopElimination would remove, never: H >= 2)
        scale = math.sqrt(hd) if violate != "scale" else a["off"] * math.sqrt(hd)
        return dict(a, heads=heads, hd=hd, scale=scale)

    def backward(self, ctx, out):
        """A float32 output [B, S, W] of ids [B, S] or [B, S, 1], W = N * H with H >= 2."""
        if out.dtype != F32 or out.rank != 3 or not ctx.opset == 13:
            return None
        b, s, w = out.shape
        heads = [n for n in (1, 2, 4) if w % n == 0 and w // n >= 2]
        if not heads:
            return None
        x = TensorType(ctx.choice((I64, F32)), (b, s) if ctx.coin(0.5) else (b, s, 1))
        a = self.sample(ctx, [x])
        n = ctx.choice(heads)
        return [x], self._heads(a, n, w // n, a["violate"])

    def requires(self, ins, a):
        x = ins[0]
        if x.dtype != (F32 if a["float"] else I64) or x.rank != a["rank"] or x.rank not in (2, 3):
            return [False]
        return [x.rank == 2 or x.shape[2] == 1, x.shape[1] <= a["rows"]]

    def infer(self, ins, a):
        x = ins[0]
        return [TensorType(F32, (x.shape[0], x.shape[1], a["heads"] * a["hd"]))]

    def constant_input(self, a, i):
        return False  # the ids are a graph input, whose dims can be symbolic

    def _tables(self, a) -> dict:
        w = a["heads"] * a["hd"]
        bound = 1.0 / math.sqrt(w)
        out = {"word": const_values(a, "word", F32, (a["vocab"], w)), "pos": const_values(a, "pos", F32, (a["rows"], w)),
               "g0": const_values(a, "g0", F32, (w,), 0.5, 1.5), "b0": const_values(a, "b0", F32, (w,), -0.5, 0.5),
               "g1": const_values(a, "g1", F32, (w,), 0.5, 1.5), "b1": const_values(a, "b1", F32, (w,), -0.5, 0.5)}
        for k in ("q", "k", "v", "o"):
            out["w" + k] = const_values(a, "w" + k, F32, (w, w), -bound, bound)
            out["b" + k] = const_values(a, "b" + k, F32, (w,), -0.5, 0.5)
        return {k: c.value for k, c in out.items()}

    def onnx(self, b, a, xs, ys):
        t = self._tables(a)
        c = {k: b.const(v, hint=k) for k, v in t.items()}
        n, h = a["heads"], a["hd"]
        w = n * h

        def unsqueeze0(x):
            return b.node("Unsqueeze", [x, b.ints([0])], 1)[0]

        ids = xs[0]
        if a["float"]:
            ids = b.node("Cast", [ids], 1, to=int(onnx.TensorProto.INT64))[0]
        if a["abs"]:
            ids = b.node("Abs", [ids], 1)[0]
        if a["rank"] == 3:
            ids = b.node("Squeeze", [ids, b.ints([2])], 1)[0]
        word = b.node("Gather", [c["word"], ids], 1, axis=0)[0]
        ids_shape = b.node("Shape", [ids], 1)[0]
        seq = b.node("Gather", [ids_shape, b.const(np.int64(1))], 1, axis=0)[0]
        rng = b.node("Range", [b.const(np.int64(0)), seq, b.const(np.int64(1))], 1)[0]
        pos_ids = b.node("Expand", [unsqueeze0(rng), ids_shape], 1)[0]
        pos = b.node("Gather", [c["pos"], pos_ids], 1, axis=0)[0]
        emb = b.node("Add", [pos, word] if a["violate"] == "add_order" else [word, pos], 1)[0]
        ln = _layer_norm_onnx(b, emb, c["g0"], c["b0"], a["eps"])
        ln_shape = b.node("Shape", [ln], 1)[0]
        dim_b = unsqueeze0(b.node("Gather", [ln_shape, b.const(np.int64(0))], 1, axis=0)[0])
        dim_s = unsqueeze0(b.node("Gather", [ln_shape, b.const(np.int64(1))], 1, axis=0)[0])
        heads = []
        for k, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
            p = b.node("Add", [b.node("MatMul", [ln, c["w" + k]], 1)[0], c["b" + k]], 1)[0]
            r = b.node("Reshape", [p, b.ints([0, -1, n, h])], 1)[0]
            heads.append(b.node("Transpose", [r], 1, perm=perm)[0])
        q = b.node("Div", [heads[0], b.const(np.float32(a["scale"]), hint="scale")], 1)[0]
        scores = b.node("MatMul", [q, heads[1]], 1)[0]
        ids_f = b.node("Cast", [ids], 1, to=int(onnx.TensorProto.FLOAT))[0]
        ids_f = b.node("Expand", [ids_f, b.node("Shape", [ids_f], 1)[0]], 1)[0]
        pad = b.node("Equal", [ids_f, b.const(np.float32(0.0), hint="pad")], 1)[0]
        mask_shape = b.node("Concat", [dim_b, b.ints([1]), b.ints([1]), dim_s], 1, axis=0)[0]
        mask = b.node("Reshape", [pad, mask_shape], 1)[0]
        mask = b.node("Expand", [mask, b.node("Shape", [scores], 1)[0]], 1)[0]
        masked = b.node("Where", [mask, b.const(np.float32(-np.inf), hint="ninf"), scores], 1)[0]
        probs = b.node("Softmax", [masked], 1, axis=-1 if a["violate"] == "softmax_axis" else 3)[0]
        ctx = b.node("Transpose", [b.node("MatMul", [probs, heads[2]], 1)[0]], 1, perm=[0, 2, 1, 3])[0]
        out_shape = b.node("Concat", [dim_b, b.ints([-1]), b.ints([w])], 1, axis=0)[0]
        ctx = b.node("Reshape", [ctx, out_shape], 1)[0]
        o = b.node("Add", [b.node("MatMul", [ctx, c["wo"]], 1)[0], c["bo"]], 1)[0]
        res = b.node("Add", [o, ln], 1)[0]
        _layer_norm_onnx(b, res, c["g1"], c["b1"], a["eps"], ys)

    def torch(self, a, x):
        t = {k: torch.from_numpy(np.array(v, copy=True)) for k, v in self._tables(a).items()}
        n, h = a["heads"], a["hd"]
        ids = x
        if a["float"]:  # Cast truncates towards zero; an id out of the table is no result: NaN
            ids = x.detach().nan_to_num(nan=0.0).clamp(-2.0 ** 40, 2.0 ** 40).to(torch.int64)
        ids = ids.abs() if a["abs"] else ids
        if a["rank"] == 3:
            ids = ids.squeeze(2)
        bsz, s = ids.shape
        w = n * h

        def rows(table, idx):  # Gather: negative indices count from the end
            n_rows = table.shape[0]
            ok = (idx >= -n_rows) & (idx < n_rows)
            got = table[torch.where(idx < 0, idx + n_rows, idx).clamp(0, n_rows - 1)]
            return torch.where(ok.unsqueeze(-1), got, torch.tensor(math.nan, dtype=table.dtype))

        word = rows(t["word"], ids)
        pos = rows(t["pos"], torch.arange(s, dtype=torch.int64).expand(bsz, s))
        emb = pos + word if a["violate"] == "add_order" else word + pos
        ln = _layer_norm_torch(emb, t["g0"], t["b0"], a["eps"])

        def proj(k):
            return torch.matmul(ln, t["w" + k]) + t["b" + k]

        q = proj("q").reshape(bsz, s, n, h).permute(0, 2, 1, 3)
        k = proj("k").reshape(bsz, s, n, h).permute(0, 2, 3, 1)
        v = proj("v").reshape(bsz, s, n, h).permute(0, 2, 1, 3)
        scores = torch.matmul(q / torch.tensor(a["scale"], dtype=torch.float32), k)
        pad = (ids.to(torch.float32) == 0).reshape(bsz, 1, 1, s).expand_as(scores)
        masked = torch.where(pad, torch.tensor(-math.inf, dtype=torch.float32), scores)
        probs = torch.softmax(masked, dim=3)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(bsz, s, w)
        res = torch.matmul(ctx, t["wo"]) + t["bo"] + ln
        return _layer_norm_torch(res, t["g1"], t["b1"], a["eps"])

    # -- input domain (the Restricted part), which depends on the attributes ---------------
    def input_domain(self, a, i):
        """Float ids need |x| < V (Cast truncates; an id off the table is an error): within
        V - 1, the ends excluded for the generator's bounds."""
        return (-(a["vocab"] - 1.0), a["vocab"] - 1.0) if a["float"] else None

    def input_range(self, a, i):
        d = self.input_domain(a, i)
        return sampling_window(*d) if d else None

    def losses(self, a, x):
        # the ends included: an id of V - 1 is still in the table
        return domain_losses(self.input_domain(a, 0), False, x)


def _layer_norm_onnx(b, x: str, gamma: str, beta: str, eps: float, out: list | int = 1) -> str:
    """The decomposition exporters write below opset 17 (LayerNormFusion makes it one node):
    ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta."""
    mean = b.node("ReduceMean", [x], 1, axes=[-1])[0]
    d = b.node("Sub", [x, mean], 1)[0]
    var = b.node("ReduceMean", [b.node("Pow", [d, b.const(np.float32(2.0), hint="two")], 1)[0]], 1, axes=[-1])[0]
    sd = b.node("Sqrt", [b.node("Add", [var, b.const(np.float32(eps), hint="eps")], 1)[0]], 1)[0]
    return b.node("Add", [b.node("Mul", [b.node("Div", [d, sd], 1)[0], gamma], 1)[0], beta], out)[0]


def _layer_norm_torch(x, gamma, beta, eps: float):
    mean = x.mean(dim=-1, keepdim=True)
    d = x - mean
    var = (d * d).mean(dim=-1, keepdim=True)
    return d / torch.sqrt(var + torch.tensor(eps, dtype=x.dtype)) * gamma + beta


OPS = [EmbedLayerNormAttention]
