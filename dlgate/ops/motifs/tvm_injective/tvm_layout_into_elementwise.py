from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.tvm_common import ACTIVATIONS, activation
from dlgate.ops.motifs.tvm_injective._shared import _Injective, _moving_perm
from dlgate.ops.registry import get


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

    onnx_op = "Transpose"
    onnx_ops = tuple(k for k in LAYOUT if k != "Transpose") + tuple(ACTIVATIONS)
    rewrite = "FuseOps (injective into element-wise)"
    expects = tuple(f"fused:{n}_{s}" for names in LAYOUT.values() for n in names for s in ACTIVATIONS.values())
    arity = 1
    ranks = (2, 3, 4)

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


OPS = [TvmLayoutIntoElementwise]
