from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.recurrent._shared import GATED_GAPS, _Recurrent


class LSTM(_Recurrent):
    """``it, ot, ft`` = f(.), ``ct`` = g(.), ``Ht = ot * h(Ct)``, with peepholes P[iof]
    (``Po`` meets the new ``Ct``) and ``input_forget``. No float64: onnxruntime's kernel
    throws a RUNTIME_EXCEPTION for it rather than declaring it NOT_IMPLEMENTED."""

    onnx_op = "LSTM"
    types = (dt.FLOAT32, dt.FLOAT16)
    gates = 4
    acts = ("Sigmoid", "Tanh", "Tanh")
    output_names = ("Y", "Y_h", "Y_c")

    def _extra(self, ctx, a):
        a["init_c"] = ctx.coin(0.5)
        a["peepholes"] = ctx.coin(0.4)
        a["input_forget"] = int(ctx.coin(0.25))

    def _more_inputs(self, b, a, const):
        return [const("initial_c") if a["init_c"] else "", const("P") if a["peepholes"] else ""]

    def onnx_attrs(self, a, b):
        return {**super().onnx_attrs(a, b), "input_forget": b.opt(a["input_forget"], 0)}

    gaps = _Recurrent.gaps + GATED_GAPS + (
        ("float64", "onnxruntime's LSTM throws RUNTIME_EXCEPTION \"LSTM operator does not support double "
                    "yet\" (not NOT_IMPLEMENTED), which the spec checks do not accept as unsupported"),)

    def _step(self, a, fns, x, w, r, bias, p, h, c):
        f, g, hf = fns
        n = a["hidden_size"]
        z = x @ w.T + h @ r.T + bias[:4 * n] + bias[4 * n:]
        zi, zo, zf, zc = (z[:, k * n:(k + 1) * n] for k in range(4))
        pi, po, pf = (p[k * n:(k + 1) * n] for k in range(3))
        i = f(zi + pi * c)
        ft = 1 - i if a["input_forget"] else f(zf + pf * c)
        cn = ft * c + i * g(zc)
        o = f(zo + po * cn)
        return o * hf(cn), cn

    def undefined(self, a, ins, out_types):
        if a["clip"] is None:
            return None
        with torch.no_grad():
            cs = self._run(a, *ins)[1]
        if bool((cs.abs() > a["clip"]).any()):
            return ("a cell state exceeds clip: ONNX's \"applied to the input of activations\" can be read "
                    "to clip h's input C_t too (onnxruntime does not)")
        return None

    def reference_defect(self, a, ins, opset):
        if a["input_forget"]:
            return "onnx.reference's LSTM ignores input_forget"
        return super().reference_defect(a, ins, opset)


OPS = [LSTM]
