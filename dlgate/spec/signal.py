"""Signal processing: DFT, STFT, the Hann, Hamming and Blackman windows and
MelWeightMatrix (opset 17; DFT's axis became an input at opset 20).

Complex tensors are real ones with a last axis of 2 (real, imaginary); a last axis of 1
holds a real signal. Lengths, steps and axes are constants the lowering writes.

The window operators and MelWeightMatrix take only integer and float scalars, all
constants here, so their specs take one graph tensor of an integer type (int32 or
int64: the type the size, or the mel integers, are written in): its values are not
read; a window's size is its last dimension (written as a constant, or read from it
with Shape -> Gather, as exporters write ``torch.hann_window(x.shape[-1])``). Their
float output is a graph tensor like any other, which the generator connects to other
operators. (A float first input is impossible: the signature of a spec is checked
against the ONNX operator's formal inputs, here an integer scalar.)
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.spec.base import OpSpec, TensorType


def _spell(ctx, ax: int, rank: int) -> int:
    return ax - rank if ctx.coin(0.3) else ax


def _complex(x):
    """A (..., 1) or (..., 2) real tensor as a real (...) or complex (...) tensor, widened
    to float32 for float16 (PyTorch's CPU FFT has no float16; every runtime computes the
    transform wider and rounds once)."""
    if x.dtype == torch.float16:
        x = x.float()
    if x.shape[-1] == 1:
        return x[..., 0]
    return torch.complex(x[..., 0], x[..., 1])


def _as_real(y, dtype):
    """A real (...) or complex (...) tensor as (..., 1) or (..., 2) of ``dtype``."""
    out = y.unsqueeze(-1) if not y.is_complex() else torch.view_as_real(y.resolve_conj())
    return out.to(dtype)


def _int_dtype(b) -> np.dtype:
    """int32 or int64, a spelling choice (ONNX's T2 allows both)."""
    return np.dtype(b.rng.choice(("int64", "int32")))


class DFT(OpSpec):
    """Forward or inverse DFT along ``axis`` (not the last, complex axis), of real (last
    axis 1) or complex (last axis 2) input, ``dft_length`` omitted or shorter or longer
    than the axis (the signal is then cut or zero-padded); ``onesided`` forward of real
    input (RFFT: the first L // 2 + 1 bins) or inverse of complex input (IRFFT: a real
    signal of length L, as ``numpy.fft.irfft``). float16 is transformed in float32 and
    rounded once, as onnxruntime and onnx.reference do. Not generated: an IRFFT whose
    dft_length cuts or pads the one-sided spectrum (L // 2 + 1 other than its length),
    where ONNX does not say which bins are read."""

    onnx_op = "DFT"
    min_opset = 17
    ranks = (2, 3, 4, 5)
    dtypes = tuple((t,) for t in dt.FLOATS)
    symbolic_ok = False
    gaps: ClassVar[tuple] = (
        ("IRFFT with a dft_length that cuts or pads the one-sided spectrum (L // 2 + 1 != its length)",
         "ONNX does not say which bins are used; onnxruntime and numpy.fft.irfft differ"),
    )

    # -- shapes --------------------------------------------------------------------------
    @staticmethod
    def _length(a, n: int) -> int:
        """The transform's length L."""
        if a["dft_length"] is not None:
            return a["dft_length"]
        return 2 * (n - 1) if a["onesided"] and a["inverse"] else n

    def requires(self, ins, a):
        x = ins[0]
        r = x.rank
        if r < 2 or not (-r <= a["axis"] <= r - 2) or a["axis"] == -1:
            return [False]
        c, n = x.shape[-1], x.shape[a["axis"] % r]
        L = self._length(a, n)
        cons = [c in (1, 2), L >= 1]
        if a["onesided"]:
            cons.append(c == (2 if a["inverse"] else 1))
            if a["inverse"]:
                cons.append(L // 2 + 1 == n)  # IRFFT reads exactly the given bins
        return cons

    def infer(self, ins, a):
        x = ins[0]
        ax, n = a["axis"] % x.rank, x.shape[a["axis"]]
        L = self._length(a, n)
        m = L // 2 + 1 if a["onesided"] and not a["inverse"] else L
        c = 1 if a["onesided"] and a["inverse"] else 2
        s = list(x.shape)
        s[ax], s[-1] = m, c
        return [x.with_shape(s)]

    # -- sampling ------------------------------------------------------------------------
    def sample(self, ctx, ins):
        x = ins[0]
        r = x.rank
        c = x.shape[-1]
        ax = ctx.rng.randrange(max(1, r - 1))
        n = x.shape[ax]
        if c == 2:
            inverse, onesided = int(ctx.coin(0.5)), int(ctx.coin(0.3))
        else:
            inverse = int(ctx.coin(0.3))
            onesided = int(not inverse and ctx.coin(0.4))
        if onesided and inverse:  # IRFFT
            choices = [2 * n - 1] + ([None, 2 * n - 2] if n >= 2 else [])
            length = ctx.choice(choices)
        else:
            length = None if ctx.coin(0.4) else ctx.choice((n, ctx.rng.randint(1, max(1, n - 1)),
                                                            ctx.rng.randint(n + 1, 2 * n + 4)))
        return {"axis": _spell(ctx, ax, r), "inverse": inverse, "onesided": onesided, "dft_length": length}

    def backward(self, ctx, out):
        r = out.rank
        if out.dtype not in dt.FLOATS or r not in self.ranks or out.shape[-1] not in (1, 2):
            return None
        ax = ctx.rng.randrange(r - 1)
        m = out.shape[ax]
        s = list(out.shape)
        if out.shape[-1] == 1:  # IRFFT: L = m, from n = m // 2 + 1 complex bins
            n = m // 2 + 1
            if m < 1:
                return None
            length = ctx.choice((None, m)) if m >= 2 and m % 2 == 0 else m
            a = {"inverse": 1, "onesided": 1, "dft_length": length}
            s[ax], s[-1] = n, 2
        elif ctx.coin(0.3):  # RFFT: m = L // 2 + 1 bins of a real signal
            L = ctx.choice((2 * m - 2, 2 * m - 1)) if m >= 2 else 1
            n = L if ctx.coin(0.5) else ctx.rng.randint(1, L + 4)
            a = {"inverse": 0, "onesided": 1, "dft_length": None if n == L and ctx.coin(0.5) else L}
            s[ax], s[-1] = n, 1
        else:  # complex to complex, forward or inverse
            n = m if ctx.coin(0.5) else ctx.rng.randint(1, m + 4)
            a = {"inverse": int(ctx.coin(0.5)), "onesided": 0, "dft_length": None if n == m and ctx.coin(0.5) else m}
            s[ax], s[-1] = n, ctx.choice((1, 2))
        a["axis"] = _spell(ctx, ax, r)
        return [out.with_shape(s)], a

    def backward_ranks(self, out):
        return (out.rank,)

    # -- lowering --------------------------------------------------------------------------
    def onnx(self, b, a, xs, ys):
        ins = [xs[0], b.const(np.asarray(a["dft_length"], dtype=_int_dtype(b))) if a["dft_length"] is not None else ""]
        attrs = {"inverse": b.opt(a["inverse"], 0), "onesided": b.opt(a["onesided"], 0)}
        if b.opset >= 20:
            if a["axis"] != -2 or b.rng.random() < 0.5:
                ins.append(b.const(np.asarray(a["axis"], dtype=np.int64)))
        else:
            attrs["axis"] = b.opt(a["axis"], 1)
        while ins[-1] == "":
            ins.pop()
        b.node("DFT", ins, ys, **attrs)

    def torch(self, a, x):
        ax = a["axis"] % x.dim()
        L = self._length(a, x.shape[ax])
        s = _complex(x)
        if a["onesided"] and a["inverse"]:
            y = torch.fft.irfft(s, n=L, dim=ax)
        elif a["onesided"]:
            y = torch.fft.rfft(s, n=L, dim=ax)
        elif a["inverse"]:
            y = torch.fft.ifft(s, n=L, dim=ax)
        else:
            y = torch.fft.fft(s, n=L, dim=ax)
        return _as_real(y, x.dtype)


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
    gaps: ClassVar[tuple] = (
        ("neither window nor frame_length", "onnxruntime fails (\"Tensor shape.Size() must be >= 0\") though "
                                           "ONNX says the frame is then the whole signal"),
        ("onesided with a complex signal", "ONNX says it is not possible"),
        ("onesided omitted (its default, 1)", "ONNX's shape inference reads it as 0, so the full checker "
                                              "refuses the model: always written"),
    )

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.arity = 2 if cls.w_input else 1
        cls.dtypes = tuple((t,) * cls.arity for t in dt.FLOATS)

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


class STFTWindowInput(STFT):
    """STFT whose window is a graph tensor."""

    name = "STFTWindowInput"
    w_input = True


#: Window -> the coefficients (a0, a1, a2) of ``a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N)``,
#: as float32 constants in ONNX's function bodies (Hamming's are 25/46 and 21/46).
WINDOWS = {"HannWindow": (0.5, 0.5, 0.0), "HammingWindow": (0.54347825, 0.45652175, 0.0),
           "BlackmanWindow": (0.42, 0.5, 0.08)}
#: 2 pi as the function bodies write it (float32).
TAU = 6.2831855
#: ``output_datatype`` values of the float types generated.
TENSOR_TYPES = {dt.FLOAT32: 1, dt.FLOAT16: 10, dt.FLOAT64: 11}


def _const_range(spec, a) -> tuple:
    """The bounds of an output that is a constant (it reads no input value)."""
    y = spec.torch(a, None).double()
    return (float(y.min()), float(y.max()))


def _const_exact(spec, a) -> float:
    """The element of a constant output nearest 0, a value the output always holds."""
    y = spec.torch(a, None).double().reshape(-1)
    return float(y[y.abs().argmin()])


class _Window(OpSpec):
    """A window of ``size`` = the last dimension of the (integer) first input, whose values
    are not read: computed as ONNX's function body does, in float32 (N = size, or size - 1
    for a symmetric window; angles ``n * (2 pi / N)``), then cast to ``output_datatype``
    (float32 or float16). Not generated: float64 and integer outputs, a symmetric window
    of size 1 (see ``gaps``)."""

    min_opset = 17
    ranks = (1, 2, 3, 4)
    dtypes = ((dt.INT64,), (dt.INT32,))
    symbolic_ok = False
    out_types: ClassVar[tuple] = (dt.FLOAT32, dt.FLOAT16)
    gaps: ClassVar[tuple] = (
        ("float64 output", "the function body computes in float32 and casts: the float32 cos of one runtime "
                           "and another differ by more than the float64 tolerance (onnx.reference computes "
                           "in float64)"),
        ("integer outputs", "casts of values in [0, 1] to an integer jump at rounding-level differences"),
        ("symmetric (periodic=0) window of size 1", "the function body divides 0 by 0 (NaN)"),
        ("a window multiplied into a float tensor within one spec", "a spec's signature types the "
         "operator's formal inputs (here an integer size): the generator connects the window's output "
         "to float tensors instead"),
    )

    def sample(self, ctx, ins):
        outs = [t for t in self.out_types if t in ctx.dtypes] or [dt.FLOAT32]
        return {"periodic": int(ctx.coin(0.6)), "dtype": ctx.choice(outs), "size": ins[0].shape[-1],
                "int_dtype": ins[0].dtype, "from_shape": ins[0].dtype == dt.INT64 and ctx.coin(0.3)}

    def requires(self, ins, a):
        return [ins[0].rank >= 1, ins[0].dtype == a["int_dtype"], a["dtype"] in self.out_types,
                ins[0].shape[-1] == a["size"], a["size"] >= (1 if a["periodic"] else 2),
                not a["from_shape"] or a["int_dtype"] == dt.INT64]

    def infer(self, ins, a):
        return [TensorType(a["dtype"], (a["size"],))]

    def backward(self, ctx, out):
        if out.rank != 1 or out.dtype not in self.out_types:
            return None
        ints = [t for t in (dt.INT64, dt.INT32) if t in ctx.dtypes]
        if not ints:
            return None
        lead = () if ctx.coin(0.6) else (ctx.rng.randint(1, 4),)
        x = TensorType(ctx.choice(ints), lead + out.shape)
        a = self.sample(ctx, [x])
        a["dtype"] = out.dtype
        return [x], a

    def backward_ranks(self, out):
        return (1, 2)

    def value_range(self, a, ranges, ins):
        return [_const_range(self, a)]

    def exact(self, a, exacts, ins):
        return _const_exact(self, a)

    def onnx(self, b, a, xs, ys):
        if a["from_shape"]:
            shape = b.node("Shape", [xs[0]], 1)[0]
            size = b.node("Gather", [shape, b.const(np.asarray(-1, dtype=np.int64))], 1)[0]
        else:
            size = b.const(np.asarray(a["size"], dtype=dt.NUMPY[a["int_dtype"]]), hint="size")
        b.node(self.onnx_op, [size], ys, periodic=b.opt(a["periodic"], 1),
               output_datatype=b.opt(TENSOR_TYPES[a["dtype"]], 1))

    def torch(self, a, x):
        a0, a1, a2 = (torch.tensor(v, dtype=torch.float32) for v in WINDOWS[self.onnx_op])
        n = torch.tensor(float(a["size"] - (0 if a["periodic"] else 1)), dtype=torch.float32)
        ang = torch.arange(a["size"], dtype=torch.float32) * (torch.tensor(TAU, dtype=torch.float32) / n)
        y = (a0 - a1 * torch.cos(ang)) + a2 * torch.cos(ang * 2)
        return y.to(dt.torch_dtype(a["dtype"]))


class HannWindow(_Window):
    onnx_op = "HannWindow"
    onnx_ops = ("Shape", "Gather")


class HammingWindow(_Window):
    onnx_op = "HammingWindow"
    onnx_ops = ("Shape", "Gather")


class BlackmanWindow(_Window):
    onnx_op = "BlackmanWindow"
    onnx_ops = ("Shape", "Gather")


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
    gaps: ClassVar[tuple] = (
        ("float16 or float64 edges", "onnxruntime has no float64 kernel and fails on float16 edges with a "
                                     "float16 output; onnx.reference computes the bins in the edges' precision"),
        ("integer outputs", "casts of the fractional weights to an integer type"),
        ("float16 output", "onnxruntime has no kernel (NOT_IMPLEMENTED); support probing goes by the "
                           "input signature, so such instances would drop the operator from its support set"),
        ("bin positions within MARGIN of an integer", "their floor depends on the evaluation's precision"),
    )

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

    def requires(self, ins, a):
        return [ins[0].dtype == a["int_dtype"], a["dtype"] in self.out_types, a["num_mel_bins"] >= 1,
                a["dft_length"] >= 1,
                0 <= a["lower"] < a["upper"] <= a["sample_rate"] / 2, self._margin_ok(a)]

    def infer(self, ins, a):
        return [TensorType(a["dtype"], (a["dft_length"] // 2 + 1, a["num_mel_bins"]))]

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

    def value_range(self, a, ranges, ins):
        return [_const_range(self, a)]

    def exact(self, a, exacts, ins):
        return _const_exact(self, a)

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


OPS = [DFT, STFT, STFTWindowInput, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix]
