"""The TensorRT backend's parts that need no GPU: the fp16 option refuses what a float32
reference cannot judge, engine input dtypes are checked (a conversion only where exact),
narrowed integer outputs are widened back, and the output allocator that data-dependent
shapes (NonZero, Compress, Unique) need follows TensorRT 10's IOutputAllocator protocol
(driven here as TensorRT drives it, on CPU torch buffers)."""
from __future__ import annotations

import types

import numpy as np
import pytest

from dlgate.backends.selftest import probe_model
from dlgate.backends.tensorrt import TensorRT, _output_allocator, engine_input, model_output


def backend(**options) -> TensorRT:
    b = object.__new__(TensorRT)  # no GPU here: constructed without the availability check
    b.device, b.opt_level, b.options = "cuda", "O3", options
    return b


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fp16_refuses_a_model_with_wider_floats_saying_why(dtype):
    m, _, _ = probe_model(dtype)
    b = backend(fp16=True)
    with pytest.raises(NotImplementedError, match=f"option fp16: the model has {dtype} tensors") as e:
        b.compile(m)
    assert b.unsupported(e.value)  # a refusal with its reason, never a finding


def test_fp16_takes_a_float16_model_to_tensorrt():
    m, _, _ = probe_model("float16")
    try:
        import tensorrt  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError):  # past the fp16 check: on to TensorRT, which is not installed here
            backend(fp16=True).compile(m)
        return
    pytest.skip("tensorrt is installed: bench/gpu_check.py runs it")


def test_engine_inputs_convert_only_where_exact():
    x = np.array([1, -2, 3], np.int64)
    got = engine_input("x", x, np.dtype(np.int32))
    assert got.dtype == np.int32 and got.tolist() == [1, -2, 3]
    assert engine_input("x", x, np.dtype(np.int64)) is x
    with pytest.raises(NotImplementedError, match="takes int32 for input 'x', the model declares int64"):
        engine_input("x", np.array([2**40], np.int64), np.dtype(np.int32))
    with pytest.raises(NotImplementedError, match="do not convert exactly"):
        engine_input("y", np.array([0.1], np.float32), np.dtype(np.float16))
    nan = engine_input("z", np.array([np.nan, 1.5], np.float32), np.dtype(np.float16))
    assert nan.dtype == np.float16 and np.isnan(nan[0]) and nan[1] == 1.5


def test_narrowed_integer_outputs_are_widened_back_and_nothing_else_is_touched():
    y = np.array([[0, 2]], np.int32)
    assert model_output("o", y, "int64").dtype == np.int64
    f = np.array([1.0], np.float32)
    assert model_output("o", f, "float64") is f  # a float32 answer to a float64 output: the oracle sees it
    assert model_output("o", y, None) is y


def fake_trt():
    class IOutputAllocator:
        def __init__(self):
            pass

    return types.SimpleNamespace(IOutputAllocator=IOutputAllocator)


def test_the_output_allocator_follows_tensorrts_protocol():
    import torch

    alloc = _output_allocator(fake_trt(), torch, device="cpu")()
    # TensorRT 10: the size in bytes once known, then the shape (NonZero of a 2-D input: [2, 3] int64)
    ptr = alloc.reallocate_output_async("idx", 0, 48, 256, 0)
    assert ptr and ptr % 256 == 0
    want = np.array([[0, 1, 1], [2, 0, 1]], np.int64)
    buf = alloc.buffers["idx"]
    buf[:48].copy_(torch.from_numpy(want.view(np.uint8).ravel()))  # what the engine writes there
    alloc.notify_shape("idx", (2, 3))
    out, shape = alloc.tensor("idx", torch.int64)
    assert shape == (2, 3) and np.array_equal(out[:6].reshape(shape).numpy(), want)
    # a larger request later gets new memory; a smaller one keeps it
    assert alloc.reallocate_output("idx", ptr, 16, 256) == ptr
    assert alloc.reallocate_output_async("idx", ptr, 4096, 256, 0) != 0 and alloc.buffers["idx"].numel() >= 4096
    # an empty result (NonZero of all zeros) still gets a valid address, and an empty output
    assert alloc.reallocate_output_async("none", 0, 0, 256, 0) != 0
    alloc.notify_shape("none", (2, 0))
    out, shape = alloc.tensor("none", torch.int64)
    assert out[:0].reshape(shape).numpy().shape == (2, 0)


def test_the_output_allocator_reports_what_tensorrt_never_said():
    import torch

    alloc = _output_allocator(fake_trt(), torch, device="cpu")()
    with pytest.raises(RuntimeError, match="never told the shape"):
        alloc.tensor("idx", torch.int64)
    alloc.reallocate_output_async("idx", 0, 8, 8, 0)
    alloc.notify_shape("idx", (4,))  # 32 bytes for 8 asked: the engine wrote past its memory
    with pytest.raises(RuntimeError, match="beyond the memory it asked for"):
        alloc.tensor("idx", torch.int64)
    # an allocation that fails returns 0 (TensorRT's failure signal) and is reported after the run
    alloc2 = _output_allocator(fake_trt(), torch, device="no-such-device")()
    assert alloc2.reallocate_output_async("idx", 0, 8, 8, 0) == 0 and alloc2.error
