"""The element types dlgate generates, and their names in ONNX, NumPy and PyTorch."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

FLOAT32, FLOAT64, FLOAT16 = "float32", "float64", "float16"
INT8, UINT8, INT32, INT64, BOOL = "int8", "uint8", "int32", "int64", "bool"

ALL = (FLOAT32, FLOAT64, FLOAT16, INT32, INT64, INT8, UINT8, BOOL)
FLOATS = (FLOAT32, FLOAT64, FLOAT16)
SIGNED = (INT32, INT64, INT8)
INTS = (INT32, INT64, INT8, UINT8)
NUMERIC = FLOATS + INTS
#: Types most operators accept in ONNX and in both reference runtimes.
COMMON_INTS = (INT32, INT64)
COMMON = FLOATS + COMMON_INTS

ONNX = {
    FLOAT32: TensorProto.FLOAT, FLOAT64: TensorProto.DOUBLE, FLOAT16: TensorProto.FLOAT16,
    INT8: TensorProto.INT8, UINT8: TensorProto.UINT8, INT32: TensorProto.INT32,
    INT64: TensorProto.INT64, BOOL: TensorProto.BOOL,
}
FROM_ONNX = {v: k for k, v in ONNX.items()}
NUMPY = {name: np.dtype(name) for name in ALL}


def torch_dtype(name: str):
    import torch

    return getattr(torch, name)


def is_float(name: str) -> bool:
    return name in FLOATS


def is_int(name: str) -> bool:
    return name in INTS


def check(name: str) -> str:
    if name not in ALL:
        raise ValueError(f"unknown dtype {name!r}; expected one of {', '.join(ALL)}")
    return name
