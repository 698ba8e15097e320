from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import INF, OpSpec, TensorType
from dlgate.ops.layout._shared import factor
from dlgate.ops.shapecalc._shared import MAX_LIST, _argmax, _argmax_attrs, _argmax_ok, _mask


#: Mask dtypes for NonZero's constant masks: those onnxruntime's NonZero implements.
MASK_DTYPES = (dt.BOOL, dt.FLOAT32, dt.FLOAT16, dt.INT32, dt.INT64, dt.UINT8)


class NonZero(OpSpec):
    """``x[mask]`` as exporters write it: ``GatherND(x, Transpose(NonZero(mask)))``; outputs
    the selected values (nnz,) + x.shape[k:] and NonZero's indices (k, nnz). The mask
    (rank k >= 1) is either a constant made by the lowering (``mode`` "const", over x's
    leading dims, of ``mdtype``: any nonzero value counts, a float -0.0 does not) or, for
    float inputs, ``Equal(ArgMax(x, axis, keepdims=1), positions)`` (``mode`` "argmax",
    positions a constant 0..n-1 along ``axis``): exactly one true entry per line along
    ``axis`` (its first maximum), so nnz = numel / n is known while the positions depend on
    the data. Not generated: rank-0 masks (NonZero of a scalar is (0, nnz): zero-sized),
    float64/int8 masks (onnxruntime's NonZero lacks them), arg-max masks of integer inputs
    (integer ties are frequent, see ArgMax)."""

    onnx_op = "NonZero"
    onnx_ops = ("Transpose", "GatherND", "ArgMax", "Equal")
    n_outputs = 2
    symbolic_ok = False
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)

    @staticmethod
    def _mask_values(ctx, flags: list, mdtype: str) -> list:
        if mdtype == dt.BOOL:
            return [bool(f) for f in flags]
        if dt.is_float(mdtype):
            zero, on = (0.0, -0.0), (1.0, -2.5, 0.5, 3.0)
        else:
            zero, on = (0,), ((1, 2, 7) if mdtype == dt.UINT8 else (1, -3, 2, 5))
        return [ctx.choice(on) if f else ctx.choice(zero) for f in flags]

    def _const(self, ctx, x_shape, nnz: int | None = None, k: int | None = None) -> dict | None:
        ks = [j for j in range(1, len(x_shape) + 1) if sym.prod(x_shape[:j]) <= MAX_LIST
              and (nnz is None or sym.prod(x_shape[:j]) >= nnz) and (k is None or j == k)]
        if not ks:
            return None
        k = ctx.choice(ks)
        size = sym.prod(x_shape[:k])
        nnz = ctx.rng.randint(1, size) if nnz is None else nnz
        mdtype = ctx.choice(MASK_DTYPES)
        vals = self._mask_values(ctx, _mask(ctx, size, nnz), mdtype)
        mask = np.empty(size, dtype=object)
        mask[:] = vals
        return {"mode": "const", "mask": mask.reshape(tuple(x_shape[:k])).tolist(), "mdtype": mdtype}

    def sample(self, ctx, ins):
        x = ins[0]
        if dt.is_float(x.dtype) and ctx.coin(0.5):
            return dict(mode="argmax", **_argmax_attrs(ctx, x.shape, ctx.rng.randrange(x.rank)))
        return self._const(ctx, x.shape) or {"mode": "const", "mask": [], "mdtype": dt.BOOL}

    def backward(self, ctx, out):
        if out.rank < 1 or not self.sigs(out.dtype):
            return None
        nnz, rest = out.shape[0], tuple(out.shape[1:])
        if out.rank == 1 and dt.is_float(out.dtype) and ctx.coin(0.5):
            n = ctx.dim(8)
            lead = factor(ctx, nnz, ctx.rng.randint(0, min(3, ctx.limits.max_rank - 1)))
            if lead is not None and nnz * n <= ctx.limits.max_elems and max(lead, default=1) <= 4 * ctx.limits.max_dim:
                ax = ctx.rng.randint(0, len(lead))
                shape = tuple(lead[:ax]) + (n,) + tuple(lead[ax:])
                return [out.with_shape(shape)], dict(mode="argmax", **_argmax_attrs(ctx, shape, ax))
        k = ctx.rng.randint(1, max(1, min(3, ctx.limits.max_rank - len(rest))))
        budget = min(MAX_LIST, max(1, ctx.limits.max_elems // max(1, sym.prod(rest))))
        for _ in range(3):
            size = nnz + ctx.rng.randint(0, 12)
            size = nnz if size > budget else size
            lead = factor(ctx, size, k)
            if lead is None or size > MAX_LIST:
                continue
            x = out.with_shape(tuple(lead) + rest)
            a = self._const(ctx, x.shape, nnz, k)
            if a is not None:
                return [x], a
        return None

    def mask(self, a, x):
        if a["mode"] == "argmax":
            ax = a["axis"] % x.dim()
            am = torch.argmax(x, dim=ax, keepdim=True)  # the first maximum, as ONNX
            return am == torch.from_numpy(_positions(a["n"], ax, x.dim()))
        return torch.tensor(np.array(a["mask"], dtype=dt.NUMPY[a["mdtype"]])) != 0

    def _nnz(self, a, x):
        if a["mode"] == "argmax":
            return sym.div(sym.prod(x.shape), a["n"]), x.rank
        m = np.asarray(a["mask"], dtype=np.float64)
        return int(np.count_nonzero(m)), m.ndim

    def requires(self, ins, a):
        x = ins[0]
        if a["mode"] == "argmax":
            return _argmax_ok(x, a)
        m = np.asarray(a["mask"], dtype=np.float64)
        return [1 <= m.ndim <= x.rank, m.size <= MAX_LIST, tuple(m.shape) == tuple(x.shape[:m.ndim]),
                int(np.count_nonzero(m)) >= 1]

    def infer(self, ins, a):
        x = ins[0]
        nnz, k = self._nnz(a, x)
        return [x.with_shape((nnz,) + tuple(x.shape[k:])), TensorType(dt.INT64, (k, nnz))]

    def onnx(self, b, a, xs, ys):
        if a["mode"] == "argmax":
            am = _argmax(b, xs[0], a, 1)
            pos = b.const(_positions(a["n"], a["axis"] % a["rank"], a["rank"]))
            mask = b.node("Equal", [am, pos], 1)[0]
        else:
            mask = b.const(np.array(a["mask"], dtype=dt.NUMPY[a["mdtype"]]))
        b.node("NonZero", [mask], [ys[1]])
        idx = b.node("Transpose", [ys[1]], 1, perm=[1, 0])[0]
        b.node("GatherND", [xs[0], idx], [ys[0]], batch_dims=b.opt(0, 0))

    def torch(self, a, x):
        m = self.mask(a, x)
        return x[m], m.nonzero().T.contiguous()

    jumps = True
    gaps: ClassVar[tuple] = (
        ("rank-0 masks", "NonZero of a scalar has shape (0, nnz): zero-sized tensors are not generated"),
        ("masks of float64/int8", "onnxruntime's NonZero does not implement them"),
        ("masks computed from data with a data-dependent count", "shapes must be known at generation"),
        ("arg-max masks of integer inputs", "integer ties are frequent; see ArgMax"),
    )

    def value_range(self, a, ranges, ins):
        x = ins[0]
        hi = max(x.shape)
        return [tuple(ranges[0]), (0.0, INF if sym.is_sym(hi) else float(hi - 1))]


def _positions(n: int, ax: int, rank: int) -> np.ndarray:
    """0..n-1 shaped to broadcast along axis ``ax`` of a rank-``rank`` tensor."""
    shape = [1] * rank
    shape[ax] = n
    return np.arange(n, dtype=np.int64).reshape(shape)


OPS = [NonZero]
