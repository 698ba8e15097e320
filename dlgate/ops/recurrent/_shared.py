"""What the recurrent operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType


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
    types: ClassVar[tuple] = dt.FLOATS
    gates: ClassVar[int] = 1
    acts: ClassVar[tuple] = ("Tanh",)  # the default activations of one direction
    clipped: ClassVar[tuple] = (0, 1)  # the activations whose inputs ``clip`` clamps
    #: Whether W is a graph tensor (input 1) rather than a constant.
    w_input: ClassVar[bool] = False
    output_names: ClassVar[tuple] = ("Y", "Y_h")

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

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self._w_shape(a, self._dims(ins[0], a)[2]))

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

    def _out_types(self, a, dtype, s, b) -> list:
        d, h = self._dirs(a), a["hidden_size"]
        y = (b, s, d, h) if a["layout"] else (s, d, b, h)
        state = (b, d, h) if a["layout"] else (d, b, h)
        return [TensorType(dtype, y if k == 0 else state) for k in a["outputs"]]

    def infer(self, ins, a):
        s, b, _ = self._dims(ins[0], a)
        return self._out_types(a, ins[0].dtype, s, b)

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

    gaps: ClassVar[tuple] = (
        ("activation_alpha/beta omitted with Affine or ScaledTanh", "no ONNX operator defines their "
                                                                     "defaults (onnxruntime reads 0)"),
        ("activation_alpha omitted with ThresholdedRelu", "onnxruntime reads alpha 0, not the ONNX "
                                                          "operator's default 1.0 (an onnxruntime deviation)"),
        ("sequence_lens of 0", "the outputs of an empty sequence are not defined"),
    )
    safe = {1: (-0.5, 0.5)}  # a graph W: small weights

    def discontinuous(self, a):
        return any(n == "ThresholdedRelu" for n in a["activations"] or ())

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
