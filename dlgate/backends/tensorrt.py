"""NVIDIA TensorRT (10/11 Python API): ONNX parser, engine build, tensor-name based I/O.

Device buffers are torch CUDA tensors (no pycuda). Outputs whose shape depends on the
data (NonZero, Compress, Unique, which the generator emits) get TensorRT 10's
``IOutputAllocator``: TensorRT asks it for memory once it knows the size
(``reallocate_output_async``) and tells it the shape (``notify_shape``). Not yet run on a
GPU on this project's machines (``bench/gpu_check.py`` is prepared for that): written
against the TensorRT 10 API documentation.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from dlgate.backends.base import Backend, Model, Unavailable
from dlgate.backends.refusals import refused, symbolic_patterns
from dlgate.backends.selftest import check_outputs, probe_model

NO_GPU = "TensorRT needs an NVIDIA GPU with CUDA; none is visible"
LEVELS = {f"O{k}": k for k in range(6)}  # IBuilderConfig.builder_optimization_level 0..5 (TensorRT's default: 3)


class TensorRTParseError(RuntimeError):
    """The ONNX parser rejected the model; ``codes`` are the parser's ErrorCode names."""

    def __init__(self, message: str, codes: list):
        super().__init__(message)
        self.codes = codes


#: The floating-point dtypes the ``fp16`` option would let TensorRT compute in float16.
WIDER_FLOATS = ("float32", "float64", "bfloat16")


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
    """Options: ``workspace_mb`` (default 1024), ``fp16`` (default False: allow FP16 kernels).

    With ``fp16`` TensorRT may run any layer in float16; a float32 result computed so and
    judged at float32 tolerance against a float32 reference would be a false alarm by
    construction (float16 keeps 11 bits, and overflows past 65504 where float32 does not).
    So with ``fp16`` a model with any float32, float64 or bfloat16 tensor is refused
    (``unsupported``, saying so), and models whose floating-point tensors are all float16
    run with TensorRT's FP16 kernels, judged at float16 tolerance like any float16 output.
    """

    name = "tensorrt"
    symbolic_refusals = symbolic_patterns("tensorrt")  # dlgate.backends.refusals.SYMBOLIC
    package = "tensorrt"
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
            import tensorrt  # noqa: F401  # local: optional compiler, imported where it runs
        except ImportError as e:
            return f"the tensorrt package is not installed ({e}); pip install tensorrt"
        return None

    def self_test(self) -> None:
        """The start-up probe (one Add) parsed, built into an engine and run on the GPU
        with the right sum."""
        # with fp16 a float32 model is refused (see the class): the probe is float16 then
        model, inputs, expected = probe_model(dtype="float16" if self.options.get("fp16") else "float32")
        try:
            outs = self.run(self.compile(model), inputs)
        except Exception as e:  # a driver, CUDA or TensorRT library that does not work: cannot run
            raise Unavailable(f"{self.name} on cuda: the start-up probe (one Add) failed: "
                              f"{type(e).__name__}: {str(e).strip()[:500]}") from None
        check_outputs(f"{self.name} on cuda", outs, expected)

    def version(self) -> str:
        import tensorrt as trt  # local: optional compiler, imported where it runs

        return trt.__version__

    def _logger(self):
        import tensorrt as trt  # local: optional compiler, imported where it runs

        if not hasattr(self, "_trt_logger"):
            self._trt_logger = trt.Logger(trt.Logger.ERROR)
        return self._trt_logger

    def compile(self, model: Model) -> Any:
        if self.options.get("fp16"):
            wide = sorted({t.dtype for t in model.graph.tensors if t.dtype in WIDER_FLOATS})
            if wide:
                raise NotImplementedError(
                    f"option fp16: the model has {', '.join(wide)} tensors, which TensorRT's FP16 kernels may "
                    f"compute in float16, and a {wide[0]} reference cannot judge that without false alarms; "
                    f"with fp16 only models whose floating-point tensors are all float16 are run")
        import tensorrt as trt  # local: optional compiler, imported where it runs

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
        declared = {model.graph.name(t): model.graph.tensors[t].dtype for t in model.graph.outputs}
        return engine, context, io, model.input_names, model.output_names, declared

    def run(self, compiled: Any, inputs: list) -> list:
        import tensorrt as trt  # local: optional compiler, imported where it runs
        import torch

        engine, context, io, in_names, out_names, declared = compiled
        keep = []  # device buffers must outlive execute_async_v3
        for name, x in zip(in_names, inputs):
            if not io.get(name, False):
                continue  # an input TensorRT pruned (unused by the outputs)
            x = engine_input(name, np.asarray(x), _numpy_dtype(trt, engine.get_tensor_dtype(name)))
            t = torch.from_numpy(np.array(x, copy=True)).cuda().contiguous()
            if t.numel() == 0:
                t = torch.empty(1, dtype=t.dtype, device="cuda")  # a valid address for an empty tensor
            context.set_input_shape(name, tuple(x.shape))
            context.set_tensor_address(name, t.data_ptr())
            keep.append(t)
        results = {}
        allocator = None
        for name, is_input in io.items():
            if is_input:
                continue
            dtype = _torch_dtype(trt, engine.get_tensor_dtype(name))
            shape = tuple(context.get_tensor_shape(name))
            if any(d < 0 for d in shape):
                # a data-dependent shape (NonZero, Compress, Unique): known only once the
                # engine ran; TensorRT asks the allocator for the memory and tells it the shape
                if allocator is None:
                    allocator = _output_allocator(trt, torch)()
                if not context.set_output_allocator(name, allocator):
                    raise RuntimeError(f"TensorRT refused an output allocator for {name!r}")
                results[name] = (None, dtype)  # the buffer and shape come from the allocator
                continue
            out = torch.empty(max(1, int(np.prod(shape))), dtype=dtype, device="cuda")
            context.set_tensor_address(name, out.data_ptr())
            results[name] = (out, shape)
        stream = torch.cuda.Stream()
        torch.cuda.current_stream().synchronize()  # the input copies are done before TensorRT reads them
        if not context.execute_async_v3(stream.cuda_stream):
            raise RuntimeError("TensorRT execute_async_v3 failed")
        stream.synchronize()
        if allocator is not None and allocator.error is not None:
            raise RuntimeError(f"dlgate's TensorRT output allocator failed: {allocator.error}")
        outs = []
        for name in out_names:
            if name not in results:
                raise RuntimeError(f"TensorRT engine has no output {name!r} (outputs: {', '.join(results)})")
            out, shape = results[name]
            if out is None:
                out, shape = allocator.tensor(name, dtype=shape)
            n = int(np.prod(shape))
            outs.append(model_output(name, out[:n].reshape(shape).cpu().numpy().copy(), declared.get(name)))
        return outs

    def unsupported(self, exc: BaseException) -> bool:
        return refused("tensorrt", exc)  # the parser's UNSUPPORTED_* codes (dlgate.backends.refusals)


def _numpy_dtype(trt, dtype) -> np.dtype:
    import torch

    t = _torch_dtype(trt, dtype)
    if t == torch.bfloat16:
        raise NotImplementedError("TensorRT's engine takes a bfloat16 input, which has no NumPy dtype")
    return torch.empty(0, dtype=t).numpy().dtype


def engine_input(name: str, x: np.ndarray, want: np.dtype) -> np.ndarray:
    """``x`` in the dtype the engine takes for input ``name`` (``get_tensor_dtype``). The
    model's own dtype is what dlgate hands over; a TensorRT that takes another (int32 for
    an int64 input) gets the same values converted where every value survives the round
    trip, else it cannot run this input: a refusal, never a wrong answer of TensorRT's
    made by feeding it bytes of another type."""
    want = np.dtype(want)
    if x.dtype == want:
        return x
    y = x.astype(want)
    with np.errstate(invalid="ignore"):
        exact = np.array_equal(y.astype(x.dtype), x, equal_nan=x.dtype.kind in "fc")
    if not exact:
        raise NotImplementedError(f"TensorRT's engine takes {want} for input {name!r}, the model declares "
                                  f"{x.dtype}, and these values do not convert exactly")
    return y


def model_output(name: str, y: np.ndarray, declared: str | None) -> np.ndarray:
    """An engine output in the model's declared dtype where TensorRT narrowed an integer
    output (int32 for int64: widening is exact); any other difference is left for the
    oracle to see."""
    if declared is None or y.dtype == np.dtype(declared):
        return y
    want = np.dtype(declared)
    if y.dtype.kind in "iu" and want.kind in "iu" and np.can_cast(y.dtype, want, "safe"):
        return y.astype(want)
    return y


def _output_allocator(trt, torch, device: str = "cuda"):
    """A ``trt.IOutputAllocator`` keeping each data-dependent output in a torch CUDA byte
    buffer. TensorRT 10 calls ``reallocate_output_async`` (earlier versions
    ``reallocate_output``) with the size in bytes once it knows it, and ``notify_shape``
    with the output's shape; a zero-size output still gets a valid address (0 is how an
    allocator reports failure)."""

    class OutputAllocator(trt.IOutputAllocator):
        def __init__(self):
            trt.IOutputAllocator.__init__(self)
            self.buffers, self.shapes, self.error = {}, {}, None

        def _reserve(self, name, size, alignment):
            try:
                size, alignment = max(1, int(size)), max(1, int(alignment))
                buf = self.buffers.get(name)
                if buf is None or buf.numel() < size or buf.data_ptr() % alignment:
                    raw = torch.empty(size + alignment, dtype=torch.uint8, device=device)
                    offset = (-raw.data_ptr()) % alignment
                    buf = raw[offset:offset + size]
                    self.buffers[name] = buf
                return buf.data_ptr()
            except Exception as e:  # an exception must not cross back into TensorRT
                self.error = f"{type(e).__name__}: {e}"
                return 0

        def reallocate_output(self, tensor_name, memory, size, alignment):
            return self._reserve(tensor_name, size, alignment)

        def reallocate_output_async(self, tensor_name, memory, size, alignment, stream):
            return self._reserve(tensor_name, size, alignment)

        def notify_shape(self, tensor_name, shape):
            self.shapes[tensor_name] = tuple(int(d) for d in shape)

        def tensor(self, name, dtype):
            """(flat tensor of ``dtype``, shape) of output ``name`` after the run."""
            if name not in self.shapes:
                raise RuntimeError(f"TensorRT never told the shape of data-dependent output {name!r}")
            shape = self.shapes[name]
            n = int(np.prod(shape))
            itemsize = torch.empty(0, dtype=dtype).element_size()
            buf = self.buffers.get(name)
            if n == 0:
                return torch.empty(1, dtype=dtype, device=device), shape
            if buf is None or buf.numel() < n * itemsize:
                raise RuntimeError(f"TensorRT wrote {n} elements of {name!r} beyond the memory it asked for")
            return buf[:n * itemsize].view(dtype), shape

    return OutputAllocator
