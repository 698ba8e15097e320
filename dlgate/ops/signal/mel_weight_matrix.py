from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.signal._shared import TENSOR_TYPES, _const_exact, _const_range


class MelWeightMatrix(OpSpec):
    """The [dft_length // 2 + 1, num_mel_bins] matrix of triangular mel filters, from
    integer constants (num_mel_bins, dft_length, sample_rate, of the first input's integer
    type, whose values are not read) and float32 edges in hertz. ONNX's text gives only
    the mel scale; the filters are as onnx.reference builds them (onnxruntime agrees):
    num_mel_bins + 2 points evenly spaced in mel from the lower edge, by (high - low) /
    (num_mel_bins + 2), mapped back to hertz and to the bin ``floor((dft_length + 1) * f /
    sample_rate)``, a triangle rising from point i to i + 1 and falling to i + 2. Those
    floors are kept away from integers (``MARGIN``; but a 0 Hz edge, exactly 0 in every
    precision), so float32 and float64 evaluations agree. The output is float32 or float64.
    Not generated: float16 or float64 edges, float16 and integer outputs (see ``gaps``)."""

    onnx_op = "MelWeightMatrix"
    min_opset = 17
    ranks = (1, 2, 3)
    dtypes = ((dt.INT64,), (dt.INT32,))
    symbolic_ok = False
    out_types: ClassVar[tuple] = (dt.FLOAT32, dt.FLOAT64)
    #: How far from an integer the bin positions must stay.
    MARGIN = 1e-3
    RATES = (8000, 16000, 22050, 44100, 48000)

    @staticmethod
    def _points(a, dtype=np.float64) -> np.ndarray:
        """The filters' corner positions before the floor, evaluated in ``dtype``."""
        lo, hi = dtype(a["lower"]), dtype(a["upper"])
        m = a["num_mel_bins"]
        mel = lambda f: dtype(2595) * np.log1p(f / dtype(700)) / np.log(dtype(10))  # noqa: E731
        step = (mel(hi) - mel(lo)) / dtype(m + 2)
        pts = np.arange(m + 2).astype(dtype) * step + mel(lo)
        hz = dtype(700) * np.expm1(pts / dtype(2595) * np.log(dtype(10)))
        return dtype(a["dft_length"] + 1) * hz / dtype(a["sample_rate"])

    def _margin_ok(self, a) -> bool:
        for dtype in (np.float64, np.float32):
            p = self._points(a, dtype).astype(np.float64)
            p = p[p != 0]  # a 0 Hz lower edge is bin 0 exactly, in every precision
            if np.any(np.abs(p - np.round(p)) < self.MARGIN * np.maximum(1.0, np.abs(p))):
                return False
        return True

    def _attrs(self, ctx, int_dtype: str, m: int, d: int, out: str) -> dict:
        for _ in range(16):
            sr = ctx.choice(self.RATES + (ctx.rng.randint(64, 48000),))
            upper = float(ctx.rng.randint(2, sr // 2))
            lower = 0.0 if ctx.coin(0.3) else float(ctx.rng.randint(0, int(upper) - 1))
            a = {"num_mel_bins": m, "dft_length": d, "sample_rate": sr, "lower": lower, "upper": upper,
                 "dtype": out, "int_dtype": int_dtype}
            if self._margin_ok(a):
                return a
        return a

    def sample(self, ctx, ins):
        outs = [t for t in self.out_types if t in ctx.dtypes] or [dt.FLOAT32]
        return self._attrs(ctx, ins[0].dtype, ctx.int(1, 16), ctx.int(1, 64), ctx.choice(outs))

    def backward(self, ctx, out):
        if out.rank != 2 or out.dtype not in self.out_types:
            return None
        ints = [t for t in (dt.INT64, dt.INT32) if t in ctx.dtypes]
        if not ints:
            return None
        s, m = out.shape
        d = ctx.choice((2 * s - 2, 2 * s - 1)) if s >= 2 else 1
        x = TensorType(ctx.choice(ints), (ctx.rng.randint(1, 8),))
        return [x], self._attrs(ctx, x.dtype, m, d, out.dtype)

    def backward_ranks(self, out):
        return (1,)

    def requires(self, ins, a):
        return [ins[0].dtype == a["int_dtype"], a["dtype"] in self.out_types, a["num_mel_bins"] >= 1,
                a["dft_length"] >= 1,
                0 <= a["lower"] < a["upper"] <= a["sample_rate"] / 2, self._margin_ok(a)]

    def infer(self, ins, a):
        return [TensorType(a["dtype"], (a["dft_length"] // 2 + 1, a["num_mel_bins"]))]

    def onnx(self, b, a, xs, ys):
        ints = [b.const(np.asarray(a[k], dtype=dt.NUMPY[a["int_dtype"]]), hint=k)
                for k in ("num_mel_bins", "dft_length", "sample_rate")]
        edges = [b.const(np.asarray(a[k], dtype=np.float32), hint=k) for k in ("lower", "upper")]
        b.node("MelWeightMatrix", ints + edges, ys, output_datatype=b.opt(TENSOR_TYPES[a["dtype"]], 1))

    def torch(self, a, x):
        m, d = a["num_mel_bins"], a["dft_length"]
        bins = np.floor(self._points(a)).astype(np.int64)
        w = np.zeros((d // 2 + 1, m))
        for i in range(m):
            lo, mid, hi = bins[i:i + 3]
            if mid == lo:
                w[mid, i] = 1.0
            else:
                for j in range(lo, mid + 1):
                    w[j, i] = (j - lo) / (mid - lo)
            for j in range(mid, hi):
                w[j, i] = (hi - j) / (hi - mid)
        return torch.from_numpy(w).to(dt.torch_dtype(a["dtype"]))

    gaps: ClassVar[tuple] = (
        ("float16 or float64 edges", "onnxruntime has no float64 kernel and fails on float16 edges with a "
                                     "float16 output; onnx.reference computes the bins in the edges' precision"),
        ("integer outputs", "casts of the fractional weights to an integer type"),
        ("float16 output", "onnxruntime has no kernel (NOT_IMPLEMENTED); support probing goes by the "
                           "input signature, so such instances would drop the operator from its support set"),
        ("bin positions within MARGIN of an integer", "their floor depends on the evaluation's precision"),
    )

    def value_range(self, a, ranges, ins):
        return [_const_range(self, a)]

    def exact(self, a, exacts, ins):
        return _const_exact(self, a)


OPS = [MelWeightMatrix]
