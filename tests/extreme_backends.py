"""onnxruntime with a fault injected into its handling of special values (loaded by name in
worker processes): each is what a compiler's unsafe rewrite of IEEE arithmetic would do."""
import numpy as np

from dlgate.backends.onnxruntime import OnnxRuntime


def _floats(arrays, fn):
    return [fn(np.array(a, copy=True)) if np.issubdtype(np.asarray(a).dtype, np.floating) else a for a in arrays]


def _flush(x: np.ndarray) -> np.ndarray:
    x[np.abs(x) < np.finfo(x.dtype).smallest_normal] = 0  # keeps the sign of -0.0 only where it was
    return x


class FlushSubnormals(OnnxRuntime):
    """Denormals are zero on the way in, flushed to zero on the way out (FTZ/DAZ)."""

    name = "flush-subnormals"

    def run(self, compiled, inputs):
        return _floats(super().run(compiled, _floats(inputs, _flush)), _flush)


class InfToFinite(OnnxRuntime):
    """Infinities come out as the dtype's largest finite value (a saturating conversion)."""

    name = "inf-to-finite"

    def run(self, compiled, inputs):
        return _floats(super().run(compiled, inputs),
                       lambda x: np.where(np.isinf(x), np.sign(x) * np.finfo(x.dtype).max, x).astype(x.dtype))


class NanToZero(OnnxRuntime):
    """NaN comes out as 0 (a max(x, 0)-style rewrite, or a NaN-blind select)."""

    name = "nan-to-zero"

    def run(self, compiled, inputs):
        return _floats(super().run(compiled, inputs), lambda x: np.where(np.isnan(x), 0, x).astype(x.dtype))
