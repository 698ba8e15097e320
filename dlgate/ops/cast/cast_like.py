from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, Restricted, TensorType
from dlgate.ops.cast._shared import cast_losses, cast_nonfinite, cast_undefined, cast_undefined_elements, to_dtype


class CastLike(Restricted, OpSpec):
    """``y = cast(x, dtype of target)``; the target's values and shape are irrelevant.
    Same semantics and hazard as Cast."""
    onnx_op = "CastLike"
    arity = 2
    min_opset = 15
    dtypes = tuple((s, t) for s in dt.ALL for t in dt.ALL)

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, ctx.shape(ctx.rng.randint(0, 2), numel_cap=16))

    def backward(self, ctx, out):
        sigs = [s for s in self.dtypes if s[1] == out.dtype and s[0] in ctx.dtypes]
        if not sigs:
            return None
        sig = ctx.choice(sigs)
        like = TensorType(sig[1], ctx.shape(ctx.rng.randint(0, 2), numel_cap=16))
        return [TensorType(sig[0], out.shape), like], {}

    def infer(self, ins, a):
        return [TensorType(ins[1].dtype, ins[0].shape)]

    def torch(self, a, x, like):
        return to_dtype(x, like.dtype)

    keeps_integers = True
    jumps = True  # when the target is an integer or bool type
    value_inputs = (0,)
    exact_values = True
    def losses(self, a, x, like):
        return cast_losses(x, str(like.dtype).replace("torch.", ""))

    def undefined(self, a, ins, out_types):
        return cast_undefined(ins[0], out_types[0].dtype)

    def undefined_elements(self, a, ins, out_types):
        return [cast_undefined_elements(ins[0], out_types[0].dtype)]

    def defines_nonfinite(self, a, ins):
        return cast_nonfinite(ins[0].dtype, ins[1].dtype)


OPS = [CastLike]
