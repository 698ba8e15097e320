"""Recurrent layers: LSTM, GRU and RNN (one layer, forward, reverse or bidirectional).

Only the sequence ``X`` is a graph tensor (and, in the ``*WeightInput`` twins, ``W``
too); the weights ``W``, ``R``, the bias ``B``, the initial states and LSTM's peepholes
``P`` are constants the lowering writes, drawn from a seed kept in the attributes
(multiples of 1/64, exact in every float type; ``R`` small enough that the recurrence
contracts). ``sequence_lens`` is an int32 constant with values in [1, seq_length].

Semantics, from the ONNX operator text (gate order iofc for LSTM, zrh for GRU), and
where the text is silent, from onnxruntime (the only runtime implementing all of it):

* ``activations`` name f, g(, h) per direction; ``activation_alpha``/``activation_beta``
  are *consumed in order* by the activations that take an alpha (beta): Affine,
  LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu (alpha); Affine, ScaledTanh,
  HardSigmoid (beta). Lists are either omitted or give a value to every consumer;
  omitted only when no activation is Affine, ScaledTanh or ThresholdedRelu (no ONNX
  operator defines the first two's defaults and onnxruntime reads them as 0; it reads
  ThresholdedRelu's as 0 too, where the ONNX operator's default is 1.0).
* ``clip`` clamps the inputs of the gate activations f and g; LSTM's h(C_t) is not
  clipped (onnxruntime's reading; the text, "applied to the input of activations", can
  be read to clip C_t there too, so where some |C_t| exceeds the clip, ``undefined``
  says the two readings differ).
* ``input_forget=1`` couples the gates as f = 1 - i (what onnxruntime computes; the ONNX
  text only says "couple").
* past a batch entry's ``sequence_lens``, Y is 0 and the state stops: Y_h (Y_c) is the
  last valid step's (for the reverse direction, the step at t = 0 after starting from
  t = len - 1).

Gate activations (LSTM's and GRU's f) other than Sigmoid and HardSigmoid can leave
[0, 1], where the recurrence may grow geometrically: such instances keep the sequence
short (``SHORT_SEQ``).
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.spec.base import OpSpec, TensorType

#: Activation -> (takes alpha, takes beta, default alpha, default beta, (lo, hi) of the
#: alpha drawn, (lo, hi) of the beta drawn). Defaults are the ONNX operators' (None: no
#: ONNX operator defines one; ThresholdedRelu's 1.0 is left out too, as onnxruntime
#: reads a missing one as 0: its alpha is always written).
ACTIVATIONS = {
    "Relu": (False, False, None, None, None, None),
    "Tanh": (False, False, None, None, None, None),
    "Sigmoid": (False, False, None, None, None, None),
    "Affine": (True, True, None, None, (-1.5, 1.5), (-0.5, 0.5)),
    "LeakyRelu": (True, False, 0.01, None, (0.0, 0.5), None),
    "ThresholdedRelu": (True, False, None, None, (0.0, 1.5), None),
    "ScaledTanh": (True, True, None, None, (-1.5, 1.5), (0.25, 1.5)),
    "HardSigmoid": (True, True, 0.2, 0.5, (0.0625, 0.5), (0.25, 0.75)),
    "Elu": (True, False, 1.0, None, (0.25, 1.5), None),
    "Softsign": (False, False, None, None, None, None),
    "Softplus": (False, False, None, None, None, None),
}
#: Gate activations whose values stay within [0, 1].
UNIT_GATES = ("Sigmoid", "HardSigmoid")
#: The longest sequence for instances whose gates may leave [0, 1].
SHORT_SEQ = 4
DIRECTIONS = ("forward", "reverse", "bidirectional")
GATED_GAPS = (("gate activations beyond [0, 1] over more than SHORT_SEQ steps",
               "the recurrence can grow geometrically"),)
MAX_HIDDEN = 16


def _q(x: float) -> float:
    """``x`` rounded to a multiple of 1/16 (exact in every float type)."""
    return round(x * 16) / 16


def act(name: str, alpha, beta, x):
    """One of the RNN activations, as the ONNX operator text writes it."""
    if name == "Relu":
        return torch.relu(x)
    if name == "Tanh":
        return torch.tanh(x)
    if name == "Sigmoid":
        return torch.sigmoid(x)
    if name == "Affine":
        return alpha * x + beta
    if name == "LeakyRelu":
        return torch.where(x >= 0, x, alpha * x)
    if name == "ThresholdedRelu":
        return torch.where(x > alpha, x, torch.zeros_like(x))  # ONNX: x if x > alpha, else 0
    if name == "ScaledTanh":
        return alpha * torch.tanh(beta * x)
    if name == "HardSigmoid":
        return torch.clamp(alpha * x + beta, 0.0, 1.0)
    if name == "Elu":
        return torch.where(x >= 0, x, alpha * torch.expm1(x))
    if name == "Softsign":
        return x / (1 + torch.abs(x))
    if name == "Softplus":
        return torch.logaddexp(x, torch.zeros_like(x))
    raise ValueError(f"unknown activation {name!r}")


class _Recurrent(OpSpec):
    """The three layers share shapes, attributes and the time loop; a subclass names its
    gates (``gates``: how many blocks W, R stack; ``acts``: activations per direction).
    float16 is computed in float32 and rounded once, as onnxruntime does (a float16
    recurrence stays within float16 tolerance of it: the states are bounded). Not
    generated: omitted alpha/beta lists where an activation has no agreed default (see
    the module), sequence_lens of 0 (no defined output), gates beyond [0, 1] over long
    sequences (``SHORT_SEQ``)."""

    ranks = (3,)
    symbolic_ok = False
    gates: ClassVar[int] = 1
    acts: ClassVar[tuple] = ("Tanh",)  # the default activations of one direction
    clipped: ClassVar[tuple] = (0, 1)  # the activations whose inputs ``clip`` clamps
    #: Whether W is a graph tensor (input 1) rather than a constant.
    w_input: ClassVar[bool] = False
    types: ClassVar[tuple] = dt.FLOATS
    output_names: ClassVar[tuple] = ("Y", "Y_h")
    gaps: ClassVar[tuple] = (
        ("activation_alpha/beta omitted with Affine or ScaledTanh", "no ONNX operator defines their "
                                                                     "defaults (onnxruntime reads 0)"),
        ("activation_alpha omitted with ThresholdedRelu", "onnxruntime reads alpha 0, not the ONNX "
                                                          "operator's default 1.0 (an onnxruntime deviation)"),
        ("sequence_lens of 0", "the outputs of an empty sequence are not defined"),
    )

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.arity = 2 if cls.w_input else 1
        cls.dtypes = tuple((t,) * cls.arity for t in cls.types)

    # -- shapes ---------------------------------------------------------------------------
    @staticmethod
    def _dims(x: TensorType, a: dict) -> tuple:
        """(seq_length, batch_size, input_size) of X."""
        s, b, i = x.shape
        return (b, s, i) if a["layout"] else (s, b, i)

    @staticmethod
    def _dirs(a: dict) -> int:
        return 2 if a["direction"] == "bidirectional" else 1

    def _w_shape(self, a, i: int) -> tuple:
        return (self._dirs(a), self.gates * a["hidden_size"], i)

    def _out_types(self, a, dtype, s, b) -> list:
        d, h = self._dirs(a), a["hidden_size"]
        y = (b, s, d, h) if a["layout"] else (s, d, b, h)
        state = (b, d, h) if a["layout"] else (d, b, h)
        return [TensorType(dtype, y if k == 0 else state) for k in a["outputs"]]

    def infer(self, ins, a):
        s, b, _ = self._dims(ins[0], a)
        return self._out_types(a, ins[0].dtype, s, b)

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self._w_shape(a, self._dims(ins[0], a)[2]))

    def requires(self, ins, a):
        x = ins[0]
        if x.rank != 3:
            return [False]
        s, b, i = self._dims(x, a)
        cons = [tuple(x.shape) == tuple(a["x_shape"]), x.dtype == a["dtype"], 1 <= a["hidden_size"] <= MAX_HIDDEN, a["layout"] in (0, 1), a["direction"] in DIRECTIONS]
        if a["seq_lens"] is not None:
            cons += [len(a["seq_lens"]) == b, all(1 <= n <= s for n in a["seq_lens"])]
        if not self._unit_gates(a):
            cons.append(s <= SHORT_SEQ)
        if self.w_input:
            cons.append(tuple(ins[1].shape) == self._w_shape(a, i))
        cons.append(len(a["outputs"]) >= 1)
        return cons

    # -- sampling -------------------------------------------------------------------------
    def _unit_gates(self, a) -> bool:
        """Whether every gate activation keeps its values within [0, 1]."""
        if self.gates == 1 or a["activations"] is None:
            return True
        n = len(self.acts)
        return all(a["activations"][k * n] in UNIT_GATES for k in range(self._dirs(a)))

    def _activations(self, ctx, a) -> None:
        """``activations`` and their alpha/beta lists, or the defaults."""
        a["activations"] = a["alpha"] = a["beta"] = None
        if ctx.coin(0.4):
            return
        names = list(ACTIVATIONS)
        acts = []
        for _ in range(self._dirs(a)):
            for k, default in enumerate(self.acts):
                gate = self.gates > 1 and k == 0
                if ctx.coin(0.4):
                    acts.append(default)
                elif gate and ctx.coin(0.5):
                    acts.append(ctx.choice(UNIT_GATES))
                else:
                    acts.append(ctx.choice(names))
        a["activations"] = acts
        need_default = any(ACTIVATIONS[n][2 + j] is None for n in acts for j in (0, 1) if ACTIVATIONS[n][j])
        for j, key in ((0, "alpha"), (1, "beta")):
            consumers = [n for n in acts if ACTIVATIONS[n][j]]
            if consumers and (need_default or ctx.coin(0.7)):
                a[key] = [_q(ctx.uniform(*ACTIVATIONS[n][4 + j])) for n in consumers]

    def _attrs(self, ctx, x: TensorType, layout: int, direction: str, hidden: int, outputs: list) -> dict:
        s, b, _ = (x.shape[1], x.shape[0], x.shape[2]) if layout else x.shape
        a = {"x_shape": list(x.shape), "dtype": x.dtype, "hidden_size": hidden, "direction": direction, "layout": layout,
             "seed": ctx.rng.randrange(1 << 30), "bias": ctx.coin(0.8), "init_h": ctx.coin(0.5),
             "seq_lens": None, "clip": None, "outputs": outputs}
        if ctx.coin(0.4):
            a["seq_lens"] = [ctx.rng.randint(1, s) if ctx.coin(0.7) else s for _ in range(b)]
        if ctx.coin(0.3):
            a["clip"] = ctx.choice((0.5, 1.0, _q(ctx.uniform(0.25, 4.0)) or 0.25))
        self._activations(ctx, a)
        self._extra(ctx, a)
        return a

    def _extra(self, ctx, a) -> None:
        """Attributes of one layer kind (LSTM's peepholes, GRU's linear_before_reset)."""

    def _outputs(self, ctx) -> list:
        n = len(self.output_names)
        if ctx.coin(0.4):
            return list(range(n))
        picked = [k for k in range(n) if ctx.coin(0.5)]
        return picked or [ctx.rng.randrange(n)]

    def _layout(self, ctx) -> int:
        return int(ctx.opset >= 14 and ctx.coin(0.3))

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0], self._layout(ctx), ctx.choice(DIRECTIONS), ctx.int(1, MAX_HIDDEN),
                           self._outputs(ctx))

    def backward(self, ctx, out):
        if out.dtype not in self.types or out.rank not in (3, 4):
            return None
        layout = self._layout(ctx)
        if out.rank == 4:  # Y first
            s, d, b, h = (out.shape[1], out.shape[2], out.shape[0], out.shape[3]) if layout else out.shape
            outputs = [0] + [k for k in range(1, len(self.output_names)) if ctx.coin(0.5)]
            s_free = False
        else:  # a state first (Y omitted): Y_h, or Y_c alone
            d, b, h = (out.shape[1], out.shape[0], out.shape[2]) if layout else out.shape
            first = ctx.rng.randrange(1, len(self.output_names))
            outputs = [first] + [k for k in range(first + 1, len(self.output_names)) if ctx.coin(0.5)]
            s, s_free = None, True
        if d not in (1, 2) or h > MAX_HIDDEN:
            return None
        direction = "bidirectional" if d == 2 else ctx.choice(DIRECTIONS[:2])
        i = ctx.int(1, 16)
        if s_free:
            s = ctx.int(1, 8)
        x = TensorType(out.dtype, (b, s, i) if layout else (s, b, i))
        a = self._attrs(ctx, x, layout, direction, h, outputs)
        if not self._unit_gates(a) and s > SHORT_SEQ:
            if not s_free:
                return None
            s = ctx.rng.randint(1, SHORT_SEQ)
            x = TensorType(out.dtype, (b, s, i) if layout else (s, b, i))
            a["x_shape"] = list(x.shape)
            if a["seq_lens"] is not None:
                a["seq_lens"] = [min(n, s) for n in a["seq_lens"]]
        ins = [x] + ([TensorType(out.dtype, self._w_shape(a, i))] if self.w_input else [])
        return ins, a

    def backward_ranks(self, out):
        return (3,)

    def discontinuous(self, a):
        return any(n == "ThresholdedRelu" for n in a["activations"] or ())

    def input_range(self, a, i):
        return (-0.5, 0.5) if i == 1 else None  # a graph W: small weights

    # -- constants ----------------------------------------------------------------------
    def _consts(self, a, x_shape: tuple) -> dict:
        """The constant inputs as float64 arrays: W (when a constant), R, B, initial_h,
        initial_c and P where the instance has them."""
        rng = np.random.default_rng(a["seed"])
        d, h, g = self._dirs(a), a["hidden_size"], self.gates
        s, b, i = (x_shape[1], x_shape[0], x_shape[2]) if a["layout"] else tuple(x_shape)

        def draw(shape, scale):
            return np.round(rng.uniform(-scale, scale, size=shape) * 64) / 64

        c = {"W": draw((d, g * h, i), 1.0 / np.sqrt(max(i, 1))), "R": draw((d, g * h, h), 0.5 / np.sqrt(h))}
        c["B"] = draw((d, 2 * g * h), 0.5)
        state = (b, d, h) if a["layout"] else (d, b, h)
        c["initial_h"] = draw(state, 1.0)
        c["initial_c"] = draw(state, 1.0)
        c["P"] = draw((d, 3 * h), 0.25)
        return c

    # -- lowering -----------------------------------------------------------------------
    def _inputs(self, b, a, xs, consts, dtype) -> list:
        """The node's inputs in the schema's order ("" where absent)."""
        const = lambda k: b.const(consts[k].astype(dtype), hint=k)  # noqa: E731
        ins = [xs[0], xs[1] if self.w_input else const("W"), const("R"),
               const("B") if a["bias"] else "",
               b.const(np.asarray(a["seq_lens"], dtype=np.int32), hint="seq_lens") if a["seq_lens"] is not None else "",
               const("initial_h") if a["init_h"] else ""]
        ins += self._more_inputs(b, a, const)
        while ins[-1] == "":
            ins.pop()
        return ins

    def _more_inputs(self, b, a, const) -> list:
        return []

    def onnx_attrs(self, a, b):
        attrs = {"hidden_size": a["hidden_size"], "direction": b.opt(a["direction"], "forward"),
                 "clip": a["clip"], "activations": a["activations"],
                 "activation_alpha": a["alpha"], "activation_beta": a["beta"]}
        if b.opset >= 14:
            attrs["layout"] = b.opt(a["layout"], 0)
        return attrs

    def onnx(self, b, a, xs, ys):
        dtype = dt.NUMPY[a["dtype"]]
        consts = self._consts(a, tuple(a["x_shape"]))
        outs = [""] * len(self.output_names)
        for k, y in zip(a["outputs"], ys):
            outs[k] = y
        while outs[-1] == "":
            outs.pop()
        b.node(self.onnx_op, self._inputs(b, a, xs, consts, dtype), outs, **self.onnx_attrs(a, b))

    # -- reference ------------------------------------------------------------------------
    def _act_fns(self, a) -> list:
        """Per direction, the activation functions (with their alpha/beta bound)."""
        n = len(self.acts)
        names = a["activations"] or list(self.acts) * self._dirs(a)
        alphas, betas = list(a["alpha"] or []), list(a["beta"] or [])
        fns = []
        for name in names:
            takes_a, takes_b, da, db = ACTIVATIONS[name][:4]
            al = (alphas.pop(0) if a["alpha"] is not None else da) if takes_a else None
            be = (betas.pop(0) if a["beta"] is not None else db) if takes_b else None
            fns.append(lambda x, name=name, al=al, be=be: act(name, al, be, x))
        clip = a["clip"]
        if clip is not None:
            fns = [(lambda x, f=f: f(torch.clamp(x, -clip, clip))) if k % n in self.clipped else f
                   for k, f in enumerate(fns)]
        return [fns[k * n:(k + 1) * n] for k in range(self._dirs(a))]

    def _step(self, a, fns, x, w, r, bias, p, h, c):
        """One time step of one direction: the new (h, c)."""
        raise NotImplementedError

    def torch(self, a, x, *rest):
        return self._run(a, x, *rest)[0]

    def _run(self, a, x, *rest):
        """(the outputs, every direction's cell states C_t stacked). float16 is computed in
        float32 and rounded once (as onnxruntime does)."""
        out_dtype = x.dtype
        if x.dtype == torch.float16:
            x, rest = x.float(), [r.float() for r in rest]
        consts = self._consts(a, tuple(x.shape))
        tc = {k: torch.from_numpy(v).to(x.dtype) for k, v in consts.items()}
        w = rest[0] if self.w_input else tc["W"]
        if a["layout"]:
            x = x.transpose(0, 1)
        s, b, _ = x.shape
        d, h, g = self._dirs(a), a["hidden_size"], self.gates
        zeros = torch.zeros((d, b, h), dtype=x.dtype)
        bias = tc["B"] if a["bias"] else torch.zeros((d, 2 * g * h), dtype=x.dtype)
        h0 = tc["initial_h"] if a["init_h"] else zeros
        c0 = tc["initial_c"] if a.get("init_c") else zeros
        if a["layout"]:
            h0 = h0.transpose(0, 1) if a["init_h"] else h0
            c0 = c0.transpose(0, 1) if a.get("init_c") else c0
        p = tc["P"] if a.get("peepholes") else torch.zeros((d, 3 * h), dtype=x.dtype)
        lens = torch.tensor(a["seq_lens"] if a["seq_lens"] is not None else [s] * b).reshape(b, 1)
        fns = self._act_fns(a)
        ys, hs, cs, call = [], [], [], []
        for k in range(d):
            reverse = a["direction"] == "reverse" or k == 1
            ht, ct = h0[k], c0[k]
            y = [None] * s
            for t in (range(s - 1, -1, -1) if reverse else range(s)):
                hn, cn = self._step(a, fns[k], x[t], w[k], tc["R"][k], bias[k], p[k], ht, ct)
                live = t < lens
                ht = torch.where(live, hn, ht)
                ct = torch.where(live, cn, ct)
                y[t] = torch.where(live, hn, torch.zeros_like(hn))
                call.append(ct)
            ys.append(torch.stack(y))
            hs.append(ht)
            cs.append(ct)
        y, yh, yc = torch.stack(ys, 1), torch.stack(hs), torch.stack(cs)
        if a["layout"]:
            y, yh, yc = y.permute(2, 0, 1, 3), yh.transpose(0, 1), yc.transpose(0, 1)
        outs = (y, yh, yc)
        return tuple(outs[k].to(out_dtype).contiguous() for k in a["outputs"]), torch.stack(call)

    # -- onnx.reference -------------------------------------------------------------------
    def reference_defect(self, a, ins, opset):
        s = self._dims(ins[0], a)[0]
        if a["seq_lens"] is not None and min(a["seq_lens"]) < s:
            return f"onnx.reference's {self.onnx_op} ignores sequence_lens"
        if a["clip"] is not None:
            return f"onnx.reference's {self.onnx_op} ignores clip"
        return self._act_defect(a)

    def _act_defect(self, a) -> str | None:
        if a["activations"] is not None and a["activations"] != list(self.acts) * self._dirs(a):
            return f"onnx.reference's {self.onnx_op} ignores activations (always the defaults)"
        return None



class LSTM(_Recurrent):
    """``it, ot, ft`` = f(.), ``ct`` = g(.), ``Ht = ot * h(Ct)``, with peepholes P[iof]
    (``Po`` meets the new ``Ct``) and ``input_forget``. No float64: onnxruntime's kernel
    throws a RUNTIME_EXCEPTION for it rather than declaring it NOT_IMPLEMENTED."""

    onnx_op = "LSTM"
    gates = 4
    acts = ("Sigmoid", "Tanh", "Tanh")
    types = (dt.FLOAT32, dt.FLOAT16)
    output_names = ("Y", "Y_h", "Y_c")
    gaps = _Recurrent.gaps + GATED_GAPS + (
        ("float64", "onnxruntime's LSTM throws RUNTIME_EXCEPTION \"LSTM operator does not support double "
                    "yet\" (not NOT_IMPLEMENTED), which the spec checks do not accept as unsupported"),)

    def _extra(self, ctx, a):
        a["init_c"] = ctx.coin(0.5)
        a["peepholes"] = ctx.coin(0.4)
        a["input_forget"] = int(ctx.coin(0.25))

    def _more_inputs(self, b, a, const):
        return [const("initial_c") if a["init_c"] else "", const("P") if a["peepholes"] else ""]

    def onnx_attrs(self, a, b):
        return {**super().onnx_attrs(a, b), "input_forget": b.opt(a["input_forget"], 0)}

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


class GRU(_Recurrent):
    """``zt, rt`` = f(.), ``ht`` = g(.) with the reset applied before (default) or after
    (``linear_before_reset``) the recurrence's product, ``Ht = (1 - zt) ht + zt Ht-1``.
    No float64, as for LSTM."""

    onnx_op = "GRU"
    gates = 3
    acts = ("Sigmoid", "Tanh")
    types = (dt.FLOAT32, dt.FLOAT16)
    gaps = _Recurrent.gaps + GATED_GAPS + (
        ("float64", "onnxruntime's GRU throws RUNTIME_EXCEPTION \"GRU operator does not support double "
                    "yet\" (not NOT_IMPLEMENTED), which the spec checks do not accept as unsupported"),)

    def _extra(self, ctx, a):
        a["linear_before_reset"] = int(ctx.coin(0.5))

    def onnx_attrs(self, a, b):
        return {**super().onnx_attrs(a, b), "linear_before_reset": b.opt(a["linear_before_reset"], 0)}

    def _step(self, a, fns, x, w, r, bias, p, h, c):
        f, g = fns
        n = a["hidden_size"]
        wb, rb = bias[:3 * n], bias[3 * n:]
        xw = x @ w.T + wb
        blk = lambda v, k: v[..., k * n:(k + 1) * n]  # noqa: E731
        hr = h @ r[:2 * n].T + rb[:2 * n]
        z = f(blk(xw, 0) + blk(hr, 0))
        rt = f(blk(xw, 1) + blk(hr, 1))
        if a["linear_before_reset"]:
            ht = g(blk(xw, 2) + rt * (h @ blk(r.T, 2) + blk(rb, 2)))
        else:
            ht = g(blk(xw, 2) + (rt * h) @ blk(r.T, 2) + blk(rb, 2))
        return (1 - z) * ht + z * h, c


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


class LSTMWeightInput(LSTM):
    """LSTM whose W is a graph tensor."""

    name = "LSTMWeightInput"
    w_input = True


class GRUWeightInput(GRU):
    name = "GRUWeightInput"
    w_input = True


class RNNWeightInput(RNN):
    name = "RNNWeightInput"
    w_input = True


OPS = [LSTM, GRU, RNN, LSTMWeightInput, GRUWeightInput, RNNWeightInput]
