"""Helpers for testing the gate itself: deliberate miscompilations to inject into a backend.

``TVM(extra_passes=[rewrite_op_pass("relax.sigmoid", "relax.tanh")])`` compiles every model
with each ``relax.sigmoid`` call replaced by ``relax.tanh``: a known-wrong compiler, so end-to-end
tests and benchmarks can check that the gate catches it (and only on models using the op).
Imports TVM only when a pass is built. ``MisconvertingOnnxRuntime`` (one operator run as
another) and ``RefusingOnnxRuntime`` (operator types whose kernels are gone, refused as
onnxruntime refuses them) and ``MulOneOnnxRuntime`` (``x * 1`` computed as ``x + 1``) are cheap onnxruntime-based compilers with a known fault, nameable
as ``dlgate.backends.testing:NAME`` in a campaign's ``backends``.
"""
from __future__ import annotations

import os

from dlgate.backends.base import Model
from dlgate.backends.onnxruntime import OnnxRuntime


def _call_pass(name: str, src: str, replace):
    """A Relax module pass that visits every function of the module and replaces each call
    of operator ``src`` by ``replace(mutator, call)`` (after visiting its arguments)."""
    import tvm  # local: optional compiler, imported where it runs
    from tvm import relax
    from tvm.relax.expr_functor import PyExprMutator, mutator  # local: optional compiler, imported where it runs

    src_op = tvm.ir.Op.get(src)

    @mutator
    class _Mutator(PyExprMutator):
        def __init__(self, mod):
            super().__init__(mod)
            self.mod_ = mod

        def visit_call_(self, call):
            call = self.visit_expr_post_order(call)
            if isinstance(call.op, tvm.ir.Op) and call.op.same_as(src_op):
                return replace(self, call)
            return call

        def transform(self):
            for gv, func in self.mod_.functions_items():
                if isinstance(func, relax.Function):
                    self.builder_.update_func(gv, self.visit_expr(func))
            return self.builder_.get()

    @tvm.transform.module_pass(opt_level=0, name=name.replace(".", "_"))
    def _pass(mod, _ctx):
        return _Mutator(mod).transform()

    return _pass


def rewrite_op_pass(src: str = "relax.sigmoid", dst: str = "relax.tanh"):
    """A Relax module pass replacing every call of operator ``src`` by ``dst`` (same arguments
    and attributes: pick operators of the same signature, e.g. two unary or two binary ones)."""
    import tvm  # local: optional compiler, imported where it runs
    from tvm import relax

    dst_op = tvm.ir.Op.get(dst)
    return _call_pass(f"Rewrite_{src}_to_{dst}", src, lambda _m, call: relax.Call(
        dst_op, call.args, call.attrs, call.ty_args, call.span))  # ty_args: sinfo_args before 0.27


def sigmoid_to_tanh():
    """``rewrite_op_pass("relax.sigmoid", "relax.tanh")``, nameable as
    ``"dlgate.backends.testing:sigmoid_to_tanh"`` in a TVM ``extra_passes`` option."""
    return rewrite_op_pass("relax.sigmoid", "relax.tanh")


def add_to_subtract():
    """``rewrite_op_pass("relax.add", "relax.subtract")``."""
    return rewrite_op_pass("relax.add", "relax.subtract")


def offset_op_pass(src: str, delta: float = 1.0):
    """A Relax module pass adding ``delta`` to every result of operator ``src`` (a
    tensor-valued call): a miscompilation for any operator family, whatever the operator's
    signature (``offset_op_pass("relax.nn.layer_norm")``)."""
    from tvm import relax  # local: optional compiler, imported where it runs

    def offset(m, call):
        call = m.builder_.normalize(call)
        sinfo = getattr(call, "ty", None) or getattr(call, "struct_info_", None)  # 0.27 / older
        tensor = getattr(relax, "TensorType", None) or relax.TensorStructInfo
        if isinstance(sinfo, tensor) and str(sinfo.dtype):
            dtype = str(sinfo.dtype)
            return relax.op.add(call, relax.const(delta if "float" in dtype else int(delta), dtype))
        return call

    return _call_pass(f"Offset_{src}", src, offset)


def sigmoid_plus_half():
    """``offset_op_pass("relax.sigmoid", 0.5)``: wrong on every Sigmoid, wherever it saturates
    (a Sigmoid swapped for a Tanh agrees within tolerance on large inputs)."""
    return offset_op_pass("relax.sigmoid", 0.5)


def bitwise_and_to_or():
    """``rewrite_op_pass("relax.bitwise_and", "relax.bitwise_or")``, nameable as
    ``"dlgate.backends.testing:bitwise_and_to_or"`` in a TVM ``extra_passes`` option."""
    return rewrite_op_pass("relax.bitwise_and", "relax.bitwise_or")


def trilu_plus_one():
    """``offset_op_pass`` on ``relax.tril`` then on ``relax.triu`` (ONNX Trilu, either way
    round): every Trilu result off by one."""
    import tvm  # local: optional compiler, imported where it runs

    return tvm.transform.Sequential([offset_op_pass("relax.tril"), offset_op_pass("relax.triu")])


def sequence_concat_plus_one():
    """``offset_op_pass("relax.concat")``: TVM lowers ConcatFromSequence (and Concat) to
    ``relax.concat``; every concatenation off by one (the sequence family's injected bug)."""
    return offset_op_pass("relax.concat")


def softmax_offset():
    """``offset_op_pass("relax.nn.softmax", 0.5)``: every softmax result off by 0.5, as
    ``"dlgate.backends.testing:softmax_offset"`` (attention, written out or fused)."""
    return offset_op_pass("relax.nn.softmax", 0.5)


def quantize_offset():
    """``offset_op_pass("relax.quantize", 64)``: every quantized value (QuantizeLinear, and
    the Q of a QDQ pair) off by 64 steps (wrapping around the integer type), far beyond
    the float tolerance once dequantized."""
    return offset_op_pass("relax.quantize", 64.0)


def grid_sample_offset():
    """``offset_op_pass("relax.image.grid_sample", 0.5)``: what TVM's importer makes of
    ONNX GridSample, miscompiled (the spatial family's end-to-end test)."""
    return offset_op_pass("relax.image.grid_sample", 0.5)


def sqrt_plus_one():
    """``offset_op_pass("relax.sqrt", 1.0)``: every square root one too large (TVM's
    MeanVarianceNormalization divides by one; the extra-operators family's end-to-end test)."""
    return offset_op_pass("relax.sqrt", 1.0)


def mul_one_to_add():
    """A Relax module pass that mishandles ``x * 1``: a ``relax.multiply`` whose second
    operand is a constant holding only ones becomes ``x + 1`` (the equivalence oracle's
    injected fault: wrong only where a model multiplies by one)."""
    import numpy as np  # local: with the pass, in the worker that runs TVM
    from tvm import relax  # local: optional compiler, imported where it runs

    def fold(_m, call):
        c = call.args[1]
        if isinstance(c, relax.Constant) and np.all(c.data.numpy() == 1):
            return relax.op.add(call.args[0], c)
        return call

    return _call_pass("MulOneToAdd", "relax.multiply", fold)


def _ones(m) -> set:
    """Names of ``m``'s initializers that hold only ones."""
    from onnx import numpy_helper  # local: importing this module needs no onnx

    return {i.name for i in m.graph.initializer if numpy_helper.to_array(i).size and (numpy_helper.to_array(i) == 1).all()}


def _mul_one_broken(model):
    """``model`` with every ``Mul`` by a constant of ones run as ``Add``: ``x * 1`` computed
    as ``x + 1``; itself when it holds none."""
    import onnx  # local: importing this module needs no onnx

    m = onnx.load_from_string(model.onnx)
    ones = _ones(m)
    hit = False
    for node in m.graph.node:
        if node.op_type == "Mul" and node.domain in ("", "ai.onnx") and len(node.input) == 2 and node.input[1] in ones:
            node.op_type = "Add"
            hit = True
    return Model(m.SerializeToString(), model.graph) if hit else model


#: Set to ``1`` in a worker's environment, ``MulOneOnnxRuntime`` is the build with the fault
#: fixed (a head-versus-base run's base build).
MUL_ONE_FIXED_ENV = "DLGATE_MUL_ONE_FIXED"


def _mul_one_onnxruntime():
    class MulOneOnnxRuntime(OnnxRuntime):
        """onnxruntime with a broken algebraic simplification: ``x * 1`` (a Mul whose second
        input is a constant of ones) is computed as ``x + 1``. Right on every model that
        never multiplies by one, so only an equivalence oracle whose twin inserts ``x * 1``
        meets it (the reference run of the case itself passes)."""

        name = "mul-one-onnxruntime"

        def compile(self, model):
            if os.environ.get(MUL_ONE_FIXED_ENV) == "1":  # the build with the fix, for a base build
                return super().compile(model)
            return super().compile(_mul_one_broken(model))

    return MulOneOnnxRuntime


def _misconverted(model, convert_from: str, convert_to: str):
    """``model`` (a :class:`dlgate.backends.base.Model`) with every node of ONNX type
    ``convert_from`` turned into ``convert_to`` (same inputs and attributes); itself when it
    holds none."""
    import onnx

    m = onnx.load_from_string(model.onnx)
    hit = False
    for node in m.graph.node:
        if node.op_type == convert_from and node.domain in ("", "ai.onnx"):
            node.op_type = convert_to
            hit = True
    return Model(m.SerializeToString(), model.graph) if hit else model


def _misconverting_onnxruntime():
    class MisconvertingOnnxRuntime(OnnxRuntime):
        """onnxruntime with one operator's conversion broken on purpose: every node of type
        ``convert_from`` is run as ``convert_to`` (same inputs and attributes: pick two
        operators of one signature, e.g. ``Softsign`` and ``Softplus``). A known-wrong
        compiler that is cheap to run, for the change-aware tests and benchmarks: the fault
        sits in one "converter", and only models holding that operator meet it."""

        name = "misconverting-onnxruntime"
        option_kinds = dict(OnnxRuntime.option_kinds, convert_from="", convert_to="")

        @classmethod
        def check_options(cls, options: dict) -> None:
            super().check_options(options)
            for k in ("convert_from", "convert_to"):
                if not isinstance(options.get(k), str) or not options[k]:
                    raise ValueError(f"option {k!r}: expected an ONNX operator type")

        def compile(self, model):
            return super().compile(_misconverted(model, self.options["convert_from"], self.options["convert_to"]))

    return MisconvertingOnnxRuntime


#: The environment variable naming (comma-separated) more ONNX operator types
#: :class:`RefusingOnnxRuntime` refuses, in the worker's environment: the build's.
REFUSE_ENV = "DLGATE_REFUSE"
#: The environment variable ``FROM:TO`` giving :class:`RefusingOnnxRuntime` a broken
#: conversion when its options give none (``dlgate reduce --backend`` takes no options).
CONVERT_ENV = "DLGATE_CONVERT"


def _refused_types(value) -> list:
    """ONNX operator types from a ``refuse`` option or :data:`REFUSE_ENV`: a list, or a
    comma-separated string."""
    items = value.split(",") if isinstance(value, str) else list(value or ())
    return [x.strip() for x in items if isinstance(x, str) and x.strip()]


def _refusing_onnxruntime():
    class RefusingOnnxRuntime(OnnxRuntime):
        """onnxruntime that has lost the kernels of some operator types: a model holding a
        node of a refused type is refused when it is compiled, in onnxruntime's own words
        and exception (``NOT_IMPLEMENTED : Could not find an implementation for Tanh(13)
        node with name 'n2'``, the first such node in graph order), so the gate sees the
        refusal (``unsupported``) onnxruntime gives for a missing kernel. The types refused
        are the option ``refuse`` (a list, or comma-separated) and those named by the
        worker's environment variable ``DLGATE_REFUSE``: the environment is the build, so a
        head-versus-base run whose head sets it and whose base (``base.env``) does not has
        head lose a kernel the base build has, a support regression. ``convert_from`` and
        ``convert_to`` (both or neither; else the environment's ``DLGATE_CONVERT=FROM:TO``)
        break a conversion as :class:`MisconvertingOnnxRuntime` does, for a model holding a
        refusal and a wrong answer behind it."""

        name = "refusing-onnxruntime"
        option_kinds = dict(OnnxRuntime.option_kinds, refuse="", convert_from="", convert_to="")

        @classmethod
        def check_options(cls, options: dict) -> None:
            super().check_options(options)
            refuse = options.get("refuse", ())
            if not (isinstance(refuse, str) or (isinstance(refuse, (list, tuple))
                                                and all(isinstance(x, str) for x in refuse))):
                raise ValueError("option 'refuse': expected ONNX operator types (a list, or comma-separated)")
            given = [k for k in ("convert_from", "convert_to") if k in options]
            if given and len(given) < 2:
                raise ValueError("options 'convert_from' and 'convert_to': give both or neither")
            for k in given:
                if not isinstance(options[k], str) or not options[k]:
                    raise ValueError(f"option {k!r}: expected an ONNX operator type")

        def refused_types(self) -> set:
            return set(_refused_types(self.options.get("refuse"))) | set(_refused_types(os.environ.get(REFUSE_ENV)))

        def compile(self, model):
            import onnx
            from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as OrtNotImplemented

            refuse = self.refused_types()
            if refuse:
                m = onnx.load_from_string(model.onnx)
                opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), 1)
                for node in m.graph.node:
                    if node.op_type in refuse and node.domain in ("", "ai.onnx"):
                        since = onnx.defs.get_schema(node.op_type, opset).since_version
                        raise OrtNotImplemented(f"[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an "
                                                f"implementation for {node.op_type}({since}) node with name "
                                                f"'{node.name}'")
            convert = (self.options["convert_from"], self.options["convert_to"]) if "convert_from" in self.options \
                else tuple(x.strip() for x in os.environ.get(CONVERT_ENV, "").split(":", 1))
            if len(convert) == 2 and all(convert):
                model = _misconverted(model, *convert)
            return super().compile(model)

    return RefusingOnnxRuntime


_BUILT = {"MisconvertingOnnxRuntime": _misconverting_onnxruntime, "RefusingOnnxRuntime": _refusing_onnxruntime,
          "MulOneOnnxRuntime": _mul_one_onnxruntime}


def __getattr__(name: str):
    # built on first use, so importing this module needs no onnxruntime
    if name in _BUILT:
        cls = _BUILT[name]()
        globals()[name] = cls
        return cls
    raise AttributeError(name)
