"""TVM Relax ``FuseOps``, phase 1: injective ops (reshape, transpose, strided_slice,
concatenate, broadcast_to, pad, tile...) fuse into an injective or element-wise consumer
when every path to their post-dominator is injective, giving one fused function per
chain (``reshape_transpose``, ``strided_slice_concatenate``, ``pad_relu``). Element-wise
ops likewise go into a following select. The condition each motif may break,
``injective_path``, reads the chain's first output a second time through a reduction
(ReduceMax over every axis) added to the motif's result: the path to the
post-dominator then holds a reduction and the chain does not fuse."""
from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.spec.motif import In, Motif, Out, Step
from dlgate.spec.motifs.tvm_common import ACTIVATIONS, activation
from dlgate.spec.registry import get

FLOAT_SIGS = tuple((t,) for t in dt.FLOATS)


def _rejoin(s: list, src: int) -> list:
    """``s`` plus ReduceMax(every axis) of step ``src``'s output added to the last step's."""
    k = len(s)
    return s + [Step("ReduceMax", {"keepdims": 0}, (Out(src),)), Step("Add", {}, (Out(k - 1), Out(k)))]


class _Injective(Motif):
    optimizer = "tvm"
    conditions = ("injective_path",)

    def chain(self, a) -> list:
        raise NotImplementedError

    def steps(self, a):
        s = self.chain(a)
        return _rejoin(s, 0) if a["violate"] == "injective_path" else s


class TvmReshapeTranspose(_Injective):
    """Reshape (its shape spelled with 0 and -1 as exporters do, which the importer
    resolves statically) then Transpose, or Transpose then Reshape: one injective
    function, ``reshape_transpose`` or ``transpose_reshape``."""

    name = "TvmReshapeTranspose"
    onnx_op = "Reshape"
    onnx_ops = ("Transpose",)
    rewrite = "FuseOps (injective chain: reshape + transpose)"
    expects = ("fused:reshape_transpose", "fused:transpose_reshape")
    arity = 1
    ranks = (2, 3, 4)
    dtypes = FLOAT_SIGS + ((dt.INT32,), (dt.INT64,))

    def draw(self, ctx, ins, violate):
        x = ins[0]
        first = ctx.choice(("Reshape", "Transpose"))
        if first == "Reshape":
            r = get("Reshape").sample(ctx, [x])
            t = _moving_perm(ctx, len(r["shape"]))
        else:
            r = _moving_perm(ctx, x.rank)
            t = get("Reshape").sample(ctx, [x.with_shape(get("Transpose").out_shape(x.shape, r))])
        return {"first": first, "a1": r, "a2": t}

    def requires(self, ins, a):
        # a transpose that moves nothing, or a rank-1 one, is dropped by the importer
        if a["first"] == "Reshape" and len(a["a1"]["shape"]) < 2:
            return [False]
        return super().requires(ins, a)

    def chain(self, a):
        second = "Transpose" if a["first"] == "Reshape" else "Reshape"
        return [Step(a["first"], a["a1"], (In(0),)), Step(second, a["a2"], (Out(0),))]


def _moving_perm(ctx, r: int) -> dict:
    """Transpose attributes whose permutation moves at least one axis (rank >= 2)."""
    a = get("Transpose").attrs(ctx, r)
    if r >= 2 and a["perm"] == list(range(r)):
        a = {"perm": list(range(r - 1, -1, -1)), "omit": ctx.coin(0.5)}
    return a


class TvmSliceConcat(_Injective):
    """Slice (strided, negative steps and clamped bounds included) concatenated with
    another input along one axis: ``strided_slice_concatenate``."""

    name = "TvmSliceConcat"
    onnx_op = "Slice"
    onnx_ops = ("Concat",)
    rewrite = "FuseOps (injective chain: strided_slice + concatenate)"
    expects = ("fused:strided_slice_concatenate",)
    arity = 2
    ranks = (1, 2, 3, 4)
    dtypes = tuple((t, t) for t in dt.FLOATS + (dt.INT32, dt.INT64))

    def draw(self, ctx, ins, violate):
        x = ins[0]
        for _ in range(4):  # a slice that keeps the whole tensor is dropped by the importer
            sl = get("Slice").sample(ctx, ins[:1])
            out = get("Slice").infer(ins[:1], sl)[0]
            if not _identity(x, out, sl):
                break
        ax = ctx.axis(out.rank)
        return {"slice": sl, "concat": {"axis": ax}, "other": list(set_dim(out.shape, ax, ctx.dim(8)))}

    def chain(self, a):
        return [Step("Slice", a["slice"], (In(0),)), Step("Concat", a["concat"], (Out(0), In(1)))]

    def requires(self, ins, a):
        ok = super().requires(ins, a)
        if not ok[0]:
            return ok
        return [not _identity(ins[0], get("Slice").infer(ins[:1], a["slice"])[0], a["slice"])]


def _identity(x, out, sl) -> bool:
    """Whether Slice attributes ``sl`` keep all of ``x`` in order (output ``out``)."""
    if out.shape != x.shape:
        return False
    axes = get("Slice")._axes(sl, x.rank)
    steps = get("Slice")._steps(sl)
    return all(st == 1 or x.shape[ax] == 1 for ax, st in zip(axes, steps))

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0].with_dtype(dtype).with_shape(a["other"])


def set_dim(shape, ax, d) -> tuple:
    s = list(shape)
    s[ax % len(s)] = d
    return tuple(s)


#: Layout ONNX operators -> the names their Relax lowering gives the injective PrimFuncs
#: (DepthToSpace and SpaceToDepth are reshape, transpose, reshape).
LAYOUT = {"Pad": ("pad", "mirror_pad", "replicate_pad", "circular_pad"), "Tile": ("tile",), "Unsqueeze": ("expand_dims",),
          "Transpose": ("transpose",), "Expand": ("broadcast_to",), "Flatten": ("reshape",),
          "DepthToSpace": ("reshape_transpose_reshape",), "SpaceToDepth": ("reshape_transpose_reshape",),
          "Trilu": ("triu", "tril")}


class TvmLayoutIntoElementwise(_Injective):
    """A layout operator (Pad, Tile, Unsqueeze, Transpose, Expand, Flatten, DepthToSpace,
    SpaceToDepth, Trilu) followed by an activation: the injective PrimFuncs fuse into the
    element-wise one, ``<layout>_<act>``."""

    name = "TvmLayoutIntoElementwise"
    onnx_op = "Transpose"
    onnx_ops = tuple(k for k in LAYOUT if k != "Transpose") + tuple(ACTIVATIONS)
    rewrite = "FuseOps (injective into element-wise)"
    expects = tuple(f"fused:{n}_{s}" for names in LAYOUT.values() for n in names for s in ACTIVATIONS.values())
    arity = 1
    ranks = (2, 3, 4)
    dtypes = FLOAT_SIGS

    def draw(self, ctx, ins, violate):
        x = ins[0]
        ops = [k for k in LAYOUT if x.rank in get(k).ranks and get(k).available(ctx.opset)  # Trilu: from 14
               and (k not in ("DepthToSpace", "SpaceToDepth") or x.rank == 4)]
        op = ctx.choice(ops)
        if op == "Transpose":
            la = _moving_perm(ctx, x.rank)
        elif op == "Unsqueeze":  # one axis: the importer writes one expand_dims per axis
            la = {"axes": [ctx.rng.randint(0, x.rank)]}
        else:
            la = get(op).sample(ctx, ins)
        act, act_attrs = activation(ctx, x)
        return {"op": op, "op_attrs": la, "act": act, "act_attrs": act_attrs}

    def chain(self, a):
        return [Step(a["op"], a["op_attrs"], (In(0),)), Step(a["act"], a["act_attrs"], (Out(0),))]


#: Ordered comparisons -> their Relax PrimFunc names.
COMPARE = {"Greater": "greater", "Less": "less", "GreaterOrEqual": "greater_equal", "LessOrEqual": "less_equal"}


class TvmCompareSelect(Motif):
    """``Where(x <cmp> y, x, y)`` (a max or min written as a select, as exporters do): the
    comparison's only consumer is the select, both element-wise, one function
    ``<cmp>_where``. Broken (``single_consumer``): the comparison is also cast, reduced (max)
    and added to the result, so its post-dominator lies past a reduction: no fusion."""

    name = "TvmCompareSelect"
    onnx_op = "Greater"  # the schema the (T, T) signature is checked against
    onnx_ops = ("Where", "Less", "GreaterOrEqual", "LessOrEqual", "Cast", "ReduceMax", "Add")
    optimizer = "tvm"
    rewrite = "FuseOps (comparison into select)"
    expects = tuple(f"fused:{c}_where" for c in COMPARE.values())
    conditions = ("single_consumer",)
    arity = 2
    ranks = (1, 2, 3, 4)
    dtypes = tuple((t, t) for t in dt.FLOATS)

    def draw(self, ctx, ins, violate):
        return {"cmp": ctx.choice(tuple(COMPARE)), "dtype": ins[0].dtype}

    def steps(self, a):
        s = [Step(a["cmp"], {}, (In(0), In(1))), Step("Where", {}, (Out(0), In(0), In(1)))]
        if a["violate"] == "single_consumer":
            s += [Step("Cast", {"to": a["dtype"]}, (Out(0),)), Step("ReduceMax", {"keepdims": 0}, (Out(2),)),
                  Step("Add", {}, (Out(1), Out(3)))]
        return s

    def input_type(self, ctx, i, ins, a, dtype):
        return get("Greater").input_type(ctx, i, ins, {}, dtype)


OPS = [TvmReshapeTranspose, TvmSliceConcat, TvmLayoutIntoElementwise, TvmCompareSelect]
