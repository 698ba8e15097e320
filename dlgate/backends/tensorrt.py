"""NVIDIA TensorRT (10/11 Python API): ONNX parser, engine build, tensor-name based I/O.

Device buffers are torch CUDA tensors (no pycuda). Untested on this project's CPU-only
machines: written against the TensorRT 10 API documentation.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from dlgate.backends.base import Backend, Model

NO_GPU = "TensorRT needs an NVIDIA GPU with CUDA; none is visible"
LEVELS = {f"O{k}": k for k in range(6)}  # IBuilderConfig.builder_optimization_level 0..5 (TensorRT's default: 3)


class TensorRTParseError(RuntimeError):
    """The ONNX parser rejected the model; ``codes`` are the parser's ErrorCode names."""

    def __init__(self, message: str, codes: list):
        super().__init__(message)
        self.codes = codes


def _torch_dtype(trt, dtype):
    import torch

    table = {trt.DataType.FLOAT: torch.float32, trt.DataType.HALF: torch.float16,
             trt.DataType.INT8: torch.int8, trt.DataType.INT32: torch.int32,
             trt.DataType.BOOL: torch.bool}
    for name, tdt in (("INT64", torch.int64), ("UINT8", torch.uint8), ("BF16", torch.bfloat16)):
        if hasattr(trt.DataType, name):
            table[getattr(trt.DataType, name)] = tdt
    if dtype not in table:
        raise NotImplementedError(f"TensorRT I/O data type {dtype} has no torch equivalent here")
    return table[dtype]


class TensorRT(Backend):
    """Options: ``workspace_mb`` (default 1024), ``fp16`` (default False: allow FP16 kernels)."""

    name = "tensorrt"
    #: The ONNX parser's error code for a node it cannot take with dynamic shapes.
    symbolic_refusals = (r"UNSUPPORTED_NODE_DYNAMIC",)
    opt_levels = tuple(LEVELS)
    devices = ("cuda",)
    option_kinds = {"workspace_mb": "positive int", "fp16": "bool"}

    @classmethod
    def unavailable_reason(cls, device: str) -> str | None:
        try:
            import torch
        except ImportError:
            return NO_GPU + " (torch, used for device buffers, is not installed either)"
        if not torch.cuda.is_available():
            return NO_GPU
        try:
            import tensorrt  # noqa: F401
        except ImportError as e:
            return f"the tensorrt package is not installed ({e}); pip install tensorrt"
        return None

    def version(self) -> str:
        import tensorrt as trt

        return trt.__version__

    def _logger(self):
        import tensorrt as trt

        if not hasattr(self, "_trt_logger"):
            self._trt_logger = trt.Logger(trt.Logger.ERROR)
        return self._trt_logger

    def compile(self, model: Model) -> Any:
        import tensorrt as trt

        logger = self._logger()
        builder = trt.Builder(logger)
        network = builder.create_network(0)  # explicit batch is the only mode in TensorRT 10+
        parser = trt.OnnxParser(network, logger)
        if not parser.parse(model.onnx):
            errors = [parser.get_error(i) for i in range(parser.num_errors)]
            codes = [str(e.code()).split(".")[-1] for e in errors]
            lines = []
            for e in errors:
                op = e.node_operator() if hasattr(e, "node_operator") else ""
                where = f" (node {e.node()} {op})" if e.node() >= 0 else ""
                lines.append(f"{str(e.code()).split('.')[-1]}{where}: {e.desc()}")
            raise TensorRTParseError("TensorRT ONNX parser failed: " + "; ".join(lines or ["no details"]), codes)
        config = builder.create_builder_config()
        config.builder_optimization_level = LEVELS[self.opt_level]
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(self.options.get("workspace_mb", 1024)) << 20)
        if self.options.get("fp16"):
            config.set_flag(trt.BuilderFlag.FP16)
        serialized = builder.build_serialized_network(network, config)
        if serialized is None:
            raise RuntimeError("TensorRT failed to build an engine (build_serialized_network returned None)")
        runtime = trt.Runtime(logger)
        engine = runtime.deserialize_cuda_engine(serialized)
        if engine is None:
            raise RuntimeError("TensorRT failed to deserialize the engine it built")
        context = engine.create_execution_context()
        io = {}
        for i in range(engine.num_io_tensors):
            name = engine.get_tensor_name(i)
            io[name] = engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT
        return engine, context, io, model.input_names, model.output_names

    def run(self, compiled: Any, inputs: list) -> list:
        import tensorrt as trt
        import torch

        engine, context, io, in_names, out_names = compiled
        keep = []  # device buffers must outlive execute_async_v3
        for name, x in zip(in_names, inputs):
            if not io.get(name, False):
                continue  # an input TensorRT pruned (unused by the outputs)
            t = torch.from_numpy(np.array(x, copy=True)).cuda().contiguous()
            if t.numel() == 0:
                t = torch.empty(1, dtype=t.dtype, device="cuda")  # a valid address for an empty tensor
            context.set_input_shape(name, tuple(x.shape))
            context.set_tensor_address(name, t.data_ptr())
            keep.append(t)
        results = {}
        for name, is_input in io.items():
            if is_input:
                continue
            shape = tuple(context.get_tensor_shape(name))
            if any(d < 0 for d in shape):
                raise RuntimeError(f"TensorRT left output {name!r} with an unresolved shape {shape}")
            dtype = _torch_dtype(trt, engine.get_tensor_dtype(name))
            out = torch.empty(max(1, int(np.prod(shape))), dtype=dtype, device="cuda")
            context.set_tensor_address(name, out.data_ptr())
            results[name] = (out, shape)
        stream = torch.cuda.Stream()
        torch.cuda.current_stream().synchronize()  # the input copies are done before TensorRT reads them
        if not context.execute_async_v3(stream.cuda_stream):
            raise RuntimeError("TensorRT execute_async_v3 failed")
        stream.synchronize()
        outs = []
        for name in out_names:
            if name not in results:
                raise RuntimeError(f"TensorRT engine has no output {name!r} (outputs: {', '.join(results)})")
            out, shape = results[name]
            n = int(np.prod(shape))
            outs.append(out[:n].reshape(shape).cpu().numpy().copy())
        return outs

    def unsupported(self, exc: BaseException) -> bool:
        if isinstance(exc, TensorRTParseError):
            return "UNSUPPORTED_NODE" in exc.codes or "UNSUPPORTED_GRAPH" in exc.codes
        return isinstance(exc, NotImplementedError)
