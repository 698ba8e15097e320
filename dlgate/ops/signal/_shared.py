"""What the signal operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType


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

    def sample(self, ctx, ins):
        outs = [t for t in self.out_types if t in ctx.dtypes] or [dt.FLOAT32]
        return {"periodic": int(ctx.coin(0.6)), "dtype": ctx.choice(outs), "size": ins[0].shape[-1],
                "int_dtype": ins[0].dtype, "from_shape": ins[0].dtype == dt.INT64 and ctx.coin(0.3)}

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

    def requires(self, ins, a):
        return [ins[0].rank >= 1, ins[0].dtype == a["int_dtype"], a["dtype"] in self.out_types,
                ins[0].shape[-1] == a["size"], a["size"] >= (1 if a["periodic"] else 2),
                not a["from_shape"] or a["int_dtype"] == dt.INT64]

    def infer(self, ins, a):
        return [TensorType(a["dtype"], (a["size"],))]

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

    def value_range(self, a, ranges, ins):
        return [_const_range(self, a)]

    def exact(self, a, exacts, ins):
        return _const_exact(self, a)
