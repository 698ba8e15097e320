from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import OpSpec, TensorType


# -- EyeLike ------------------------------------------------------------------------------

class EyeLike(OpSpec):
    """Ones on the ``k``-th diagonal of a matrix of the input's shape, zeros elsewhere (a
    ``k`` past either edge gives all zeros); the output dtype is the input's or the
    ``dtype`` attribute's. The input's values do not reach the output."""

    onnx_op = "EyeLike"
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (2,)
    #: Output dtypes the ``dtype`` attribute names: those onnxruntime implements (its
    #: probe sees only the input dtype, so other attribute values would go unnoticed).
    ATTR_DTYPES = (dt.FLOAT32, dt.FLOAT64, dt.INT32, dt.INT64)

    @staticmethod
    def _attrs(ctx, shape, dtype) -> dict:
        n, m = shape
        k = ctx.choice((0, 0, ctx.rng.randint(-n, m), ctx.rng.randint(-n - 3, m + 3)))
        return {"k": k, "dtype": dtype}

    def sample(self, ctx, ins):
        shape = ins[0].shape
        if any(sym.is_sym(d) for d in shape):
            k = ctx.choice((0, 0, ctx.rng.randint(-3, 3)))
            a = {"k": k, "dtype": None}
        else:
            a = self._attrs(ctx, shape, None)
        if ctx.coin(0.5):
            a["dtype"] = ctx.choice([t for t in ctx.dtypes if t in self.ATTR_DTYPES] or [ins[0].dtype])
        return a

    def backward(self, ctx, out):
        if out.rank != 2:
            return None
        types = [s[0] for s in self.dtypes if s[0] in ctx.dtypes]
        if not types:
            return None
        t = ctx.choice(types) if out.dtype in self.ATTR_DTYPES else out.dtype
        if t != out.dtype:
            dtype = out.dtype
        else:
            dtype = ctx.choice((None, out.dtype))
        return [TensorType(t, out.shape)], self._attrs(ctx, out.shape, dtype)

    def requires(self, ins, a):
        return [ins[0].rank == 2]

    def infer(self, ins, a):
        return [TensorType(a["dtype"] or ins[0].dtype, ins[0].shape)]

    def onnx_attrs(self, a, b):
        out = {"k": b.opt(a["k"], 0)}
        if a["dtype"] is not None:
            out["dtype"] = dt.ONNX[a["dtype"]]
        return out

    def torch(self, a, x):
        n, m = x.shape
        i = torch.arange(n).unsqueeze(1)
        j = torch.arange(m).unsqueeze(0)
        tdt = dt.torch_dtype(a["dtype"]) if a["dtype"] is not None else x.dtype
        return (j - i == a["k"]).to(tdt)

    out_range = (0.0, 1.0)
    integral_out = True
    value_inputs = ()

    def exact(self, a, exacts, ins):
        n, m = ins[0].shape
        if sym.is_sym(n) or sym.is_sym(m):
            return None
        k = a["k"]
        ones = max(0, min(n, m - k) - max(0, -k))  # elements on the k-th diagonal
        return 0.0 if ones < n * m else 1.0


OPS = [EyeLike]
