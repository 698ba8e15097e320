from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.recurrent._shared import _Recurrent


class RNN(_Recurrent):
    """``Ht = f(Xt W^T + Ht-1 R^T + Wb + Rb)``, f Tanh by default."""

    onnx_op = "RNN"
    gates = 1
    acts = ("Tanh",)

    def _step(self, a, fns, x, w, r, bias, p, h, c):
        n = a["hidden_size"]
        return fns[0](x @ w.T + h @ r.T + bias[:n] + bias[n:]), c

    def _act_defect(self, a):
        acts = a["activations"]
        if acts is None or all(n == "Tanh" for n in acts):
            return None
        if a["dtype"] == dt.FLOAT16 and 1 in a["outputs"]:
            # Affine's (float32) alpha promotes the float16 state, and Y_h is not cast back
            return "onnx.reference's float16 RNN returns a float32 Y_h through Affine"
        # it knows Tanh and Affine, reads alpha/beta by the activation's index rather than
        # in the order of consumption, and applies the first direction's to both
        if acts == ["Affine"] or (acts == ["Affine", "Affine"] and a["alpha"][0] == a["alpha"][1]
                                  and a["beta"][0] == a["beta"][1]):
            return None
        return "onnx.reference's RNN knows Tanh and Affine only, and applies the first direction's to both"


OPS = [RNN]
