from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.signal._shared import _as_real, _complex, _int_dtype


class STFT(OpSpec):
    """Frames of ``frame_length`` every ``frame_step`` samples of a [batch, length, 1 or 2]
    signal, times the window, DFT'd (``onesided`` for real signals: the default). The
    window is a constant (drawn from a seed) or absent (all ones); ``frame_length`` is
    written, or omitted when the window gives it. Not generated: neither window nor
    frame_length (onnxruntime fails), onesided with a complex signal (ONNX forbids it);
    ``onesided`` is always written (ONNX's shape inference reads it omitted as 0)."""

    onnx_op = "STFT"
    min_opset = 17
    ranks = (3,)
    dtypes = tuple((t,) for t in dt.FLOATS)
    symbolic_ok = False
    schema_inputs = (0, 2)  # the signal and (in STFTWindowInput) the window
    #: Whether the window is a graph tensor (input 1).
    w_input: ClassVar[bool] = False

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.arity = 2 if cls.w_input else 1
        cls.dtypes = tuple((t,) * cls.arity for t in dt.FLOATS)

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, (a["frame_length"],))

    def _attrs(self, ctx, c: int, fl: int) -> dict:
        window = "input" if self.w_input else ctx.choice(("none", "const"))
        return {"dtype": None, "frame_length": fl, "frame_step": ctx.int(1, max(1, fl + 2)), "window": window,
                "spell_length": window == "none" or ctx.coin(0.5),
                "onesided": int(c == 1 and ctx.coin(0.7)), "seed": ctx.rng.randrange(1 << 30)}

    def sample(self, ctx, ins):
        x = ins[0]
        a = self._attrs(ctx, x.shape[2], ctx.int(1, x.shape[1]))
        a["dtype"] = x.dtype
        return a

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank != 4 or out.shape[3] != 2:
            return None
        bsz, frames, bins = out.shape[:3]
        c = ctx.choice((1, 2))
        onesided = c == 1 and ctx.coin(0.7)
        fl = ctx.choice((2 * bins - 2, 2 * bins - 1)) if onesided else bins
        if fl < 1:
            return None
        a = self._attrs(ctx, c, fl)
        a["onesided"], a["dtype"] = int(onesided), out.dtype
        n = fl + (frames - 1) * a["frame_step"] + ctx.rng.randint(0, a["frame_step"] - 1)
        x = TensorType(out.dtype, (bsz, n, c))
        return [x] + ([TensorType(out.dtype, (fl,))] if self.w_input else []), a

    def backward_ranks(self, out):
        return (3,)

    def _frames(self, a, n: int) -> int:
        return (n - a["frame_length"]) // a["frame_step"] + 1

    def requires(self, ins, a):
        x = ins[0]
        if x.rank != 3:
            return [False]
        fl = a["frame_length"]
        cons = [x.dtype == a["dtype"], x.shape[2] in (1, 2), 1 <= fl <= x.shape[1], a["frame_step"] >= 1,
                a["window"] != "none" or a["spell_length"], not (a["onesided"] and x.shape[2] == 2)]
        if self.w_input:
            cons.append(tuple(ins[1].shape) == (fl,))
        return cons

    def infer(self, ins, a):
        x = ins[0]
        fl = a["frame_length"]
        bins = fl // 2 + 1 if a["onesided"] else fl
        return [x.with_shape((x.shape[0], self._frames(a, x.shape[1]), bins, 2))]

    def _window(self, a) -> np.ndarray:
        rng = np.random.default_rng(a["seed"])
        return np.round(rng.uniform(-1.0, 1.0, size=a["frame_length"]) * 64) / 64

    def onnx(self, b, a, xs, ys):
        dtype = _int_dtype(b)
        win = {"none": "", "const": None, "input": xs[-1]}[a["window"]]
        if win is None:
            win = b.const(self._window(a).astype(dt.NUMPY[a["dtype"]]), hint="window")
        ins = [xs[0], b.const(np.asarray(a["frame_step"], dtype=dtype)), win]
        if a["spell_length"]:
            ins.append(b.const(np.asarray(a["frame_length"], dtype=dtype)))
        while ins[-1] == "":
            ins.pop()
        # always written: ONNX's shape inference reads an omitted onesided as 0 (the
        # schema's default, and onnxruntime's, is 1), so the full checker refuses the model
        b.node("STFT", ins, ys, onesided=a["onesided"])

    def torch(self, a, x, w=None):
        fl, step = a["frame_length"], a["frame_step"]
        frames = x.unfold(1, fl, step)[:, :self._frames(a, x.shape[1])]  # [B, F, c, fl]
        frames = frames.permute(0, 1, 3, 2)  # [B, F, fl, c]
        if a["window"] == "const":
            w = torch.from_numpy(self._window(a)).to(x.dtype)
        if w is not None:
            frames = frames * w.reshape(fl, 1)
        s = _complex(frames)
        y = torch.fft.rfft(s, n=fl, dim=2) if a["onesided"] else torch.fft.fft(s, n=fl, dim=2)
        return _as_real(y, x.dtype)

    gaps: ClassVar[tuple] = (
        ("neither window nor frame_length", "onnxruntime fails (\"Tensor shape.Size() must be >= 0\") though "
                                           "ONNX says the frame is then the whole signal"),
        ("onesided with a complex signal", "ONNX says it is not possible"),
        ("onesided omitted (its default, 1)", "ONNX's shape inference reads it as 0, so the full checker "
                                              "refuses the model: always written"),
    )


class STFTWindowInput(STFT):
    """STFT whose window is a graph tensor."""

    name = "STFTWindowInput"
    w_input = True


OPS = [STFT, STFTWindowInput]
