"""Cross-check a spec's dtype signatures against the ONNX operator schema at an opset."""
from __future__ import annotations

from functools import lru_cache

import onnx.defs

from dlgate import dtypes as dt

_TYPE_STR = {dt.FLOAT32: "tensor(float)", dt.FLOAT64: "tensor(double)", dt.FLOAT16: "tensor(float16)",
             dt.INT8: "tensor(int8)", dt.UINT8: "tensor(uint8)", dt.INT32: "tensor(int32)",
             dt.INT64: "tensor(int64)", dt.BOOL: "tensor(bool)"}


@lru_cache(maxsize=None)
def _schema(op: str, opset: int):
    try:
        return onnx.defs.get_schema(op, opset)
    except onnx.defs.SchemaError:
        return None


@lru_cache(maxsize=None)
def allowed(op: str, sig: tuple, opset: int) -> bool:
    """True when ONNX defines ``op`` at ``opset`` and accepts these input dtypes."""
    schema = _schema(op, opset)
    if schema is None:
        return False
    constraints = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    bound: dict = {}
    formal = list(schema.inputs)
    for i, t in enumerate(sig):
        if not formal:
            return False
        f = formal[min(i, len(formal) - 1)]
        ts = _TYPE_STR[t]
        if f.type_str in constraints:
            if ts not in constraints[f.type_str]:
                return False
            if bound.setdefault(f.type_str, ts) != ts:
                return False
        elif f.type_str != ts:
            return False
    return True
