"""Apache TVM (Relax): the ONNX importer, a Relax pipeline, the Relax VM."""
from __future__ import annotations

import importlib
import re
from typing import Any

import numpy as np

from dlgate.backends._cuda import NO_CUDA, missing
from dlgate.backends.base import PHASE, Backend, Model, Unavailable
from dlgate.backends.refusals import refused, symbolic_patterns
from dlgate.backends.selftest import check_outputs, probe_model
from dlgate.backends.tvm_passes import check_pass_names, make_pass

TARGETS = {"cpu": "llvm", "cuda": "cuda"}
#: Relax pipelines, lowest first. TVM 0.27's registered "zero" pipeline (legalize + fuse) does
#: not lower to VM code by itself, so it cannot be passed to ``tvm.compile`` alone; the levels are:
#: "zero": ``default_build`` (legalize + lowering, no constant folding or fusion; what
#: ``tvm.compile(relax_pipeline="default")`` does on a CPU target);
#: "default": ``relax.get_default_pipeline(target)``, TVM's target-specific default (on llvm:
#: library dispatch, legalize, FoldConstant, FuseOps, FuseTIR, lowering; on cuda: with DLight).
PIPELINES = {"zero": "default_build", "default": "target-default"}
#: What TVM says when it declines part of a valid model (no converter for an operator, or a
#: converter that says in words that it does not support an attribute, dtype or mode) is in
#: ``dlgate.backends.refusals.TABLE["tvm"]``: a missing feature, not a wrong answer. A
#: converter that crashes on what it claims to handle (a TypeError, an AssertionError, an
#: unknown intrinsic) stays a compile error.

def _resolve_pass(item):
    """A pass, a zero-argument callable returning one, or ``"package.module:function"``."""
    import tvm  # local: optional compiler, imported where it runs

    if isinstance(item, str):
        mod, _, attr = item.partition(":")
        item = getattr(importlib.import_module(mod), attr)
    if isinstance(item, tvm.transform.Pass):
        return item
    p = item()
    if not isinstance(p, tvm.transform.Pass):
        raise TypeError(f"extra_passes entry {item!r} returned {type(p).__name__}, not a tvm.transform.Pass")
    return p


def _importer_raised(exc: BaseException) -> None:
    """Mark ``exc`` as raised by TVM's ONNX importer (the error record's ``phase``): some
    words are TVM's refusal only there (``refusals.SYMBOLIC``)."""
    try:
        setattr(exc, PHASE, "import")
    except (AttributeError, TypeError):  # an exception type without a __dict__: left unmarked
        pass


class TVM(Backend):
    """``from_onnx`` then ``tvm.compile`` then ``relax.VirtualMachine``.

    Options: ``extra_passes``: a sequence of Relax passes (or zero-argument callables
    returning one, or ``"package.module:function"`` strings), applied in order to the
    imported IRModule before ``tvm.compile``; tests use it to inject a miscompilation
    (see :mod:`dlgate.backends.testing`). ``passes``: the whole Relax pass sequence by name
    (``"FoldConstant"``, or ``"package.module:function"``) instead of ``extra_passes`` and the
    pipeline, then the build with no pipeline of its own: what a pass-list reduction
    (:mod:`dlgate.backends.tvm_passes`) tries.
    """

    name = "tvm"
    symbolic_refusals = symbolic_patterns("tvm")  # dlgate.backends.refusals.SYMBOLIC
    package = "tvm"
    opt_levels = tuple(PIPELINES)
    devices = tuple(TARGETS)
    #: Compiling costs ~60 ms a model: probe three opsets, the others take the nearest lower.
    probe_opsets = (13, 17, 21, 24, 28)
    probe_tries = 2
    #: The TIR mode's backend (``tir_share``, :mod:`dlgate.gate.run.tir`): TIR programs built with this TVM.
    tir_backend = "dlgate.tir.build:TirBackend"
    option_kinds = {"extra_passes": "", "record_rewrites": "bool", "passes": ""}  # checked below

    @classmethod
    def check_options(cls, options: dict) -> None:
        super().check_options(options)
        if options.get("passes") is not None:
            if options.get("extra_passes"):
                raise ValueError("options 'passes' and 'extra_passes': give one (passes is the whole sequence)")
            check_pass_names(options["passes"])
        passes = options.get("extra_passes")
        if passes is None:
            return
        if isinstance(passes, (str, bytes)) or not isinstance(passes, (list, tuple)):
            raise ValueError(f"option 'extra_passes': expected a list of \"package.module:function\" names, got {passes!r}")
        for p in passes:
            if isinstance(p, str):
                mod, _, attr = p.partition(":")
                if not mod or not attr.isidentifier() or not all(x.isidentifier() for x in mod.split(".")):
                    raise ValueError(f"option 'extra_passes': expected \"package.module:function\", got {p!r}")
            elif not callable(p):  # a tvm.transform.Pass, or a callable returning one (from Python)
                raise ValueError(f"option 'extra_passes': expected \"package.module:function\" names, got {p!r}")

    @classmethod
    def unavailable_reason(cls, device: str) -> str | None:
        reason = missing("tvm")
        if reason:
            return reason
        if device == "cuda":
            import tvm  # local: optional compiler, imported where it runs

            if not tvm.runtime.enabled("cuda"):
                return "this TVM build has no CUDA runtime (the apache-tvm wheel is CPU-only); build TVM with CUDA"
            if not tvm.cuda(0).exist:
                return NO_CUDA
        return None

    def self_test(self) -> None:
        """On cuda: the device must exist (``tvm.cuda(0).exist``), and the start-up probe
        (one Add) must compile for the ``cuda`` target and run there with the right sum.
        On the CPU the first case is the test (a compile costs ~60 ms at every start)."""
        if self.device != "cuda":
            return
        import tvm  # local: optional compiler, imported where it runs

        if not tvm.cuda(0).exist:
            raise Unavailable(f"{self.name} on cuda: {NO_CUDA} (tvm.cuda(0).exist is False)")
        model, inputs, expected = probe_model()
        try:
            outs = self.run(self.compile(model), inputs)
        except Exception as e:  # a CUDA toolkit, NVRTC or driver that does not work: cannot run
            raise Unavailable(f"{self.name} on cuda: the start-up probe (one Add) failed: "
                              f"{type(e).__name__}: {str(e).strip()[:500]}") from None
        check_outputs(f"{self.name} on cuda", outs, expected)

    def version(self) -> str:
        import tvm  # local: optional compiler, imported where it runs

        return tvm.__version__

    def _pipeline(self, target):
        import tvm  # local: optional compiler, imported where it runs
        from tvm import relax

        if PIPELINES[self.opt_level] == "target-default":
            return relax.get_default_pipeline(target)
        build = relax.get_pipeline("default_build")
        if self.device != "cuda":
            return build
        # Unscheduled TIR has no thread bindings: a GPU needs at least DLight's fallback schedule.
        from tvm.s_tir import dlight as dl  # local: optional compiler, imported where it runs

        @tvm.transform.module_pass(opt_level=0, name="BuildWithGpuFallbackSchedule")
        def _build_gpu(mod, _ctx):
            with target:
                mod = relax.transform.LegalizeOps()(mod)
                mod = dl.ApplyDefaultSchedule(dl.gpu.Fallback())(mod)
                return build(mod)

        return _build_gpu

    def compile(self, model: Model) -> Any:
        import onnx
        import tvm  # local: optional compiler, imported where it runs
        from tvm.relax.frontend.onnx import from_onnx  # local: optional compiler, imported where it runs

        proto = onnx.load_from_string(model.onnx)
        try:
            mod = from_onnx(proto, keep_params_in_input=False)
        except tvm.error.OpNotImplemented as e:
            _sort_unsupported(e)
            _importer_raised(e)
            raise
        except Exception as e:
            _importer_raised(e)
            raise
        vm, dev = self._build(mod, self.options.get("extra_passes", ()), self.options.get("record_rewrites", True),
                              self.options.get("passes"))
        initializers = {t.name for t in proto.graph.initializer}
        order = [i.name for i in proto.graph.input if i.name not in initializers]
        pos = {n: k for k, n in enumerate(model.input_names)}
        return vm, dev, [pos[n] for n in order]

    def _build(self, mod, extra_passes, record_rewrites: bool, explicit=None) -> tuple:
        """The Relax module through ``extra_passes``, the pipeline and the VM: ``(vm, dev)``;
        records the passes that changed it (``rewrites``) when asked. ``explicit``: the whole
        pass sequence by name instead (the ``passes`` option). Shared with ``tvm-relax``."""
        import tvm  # local: optional compiler, imported where it runs
        from tvm import relax

        target = tvm.target.Target(TARGETS[self.device])
        if explicit is not None:  # the whole sequence, by name (a pass-list reduction's candidate)
            with target:
                mod = tvm.transform.Sequential([make_pass(n) for n in explicit])(mod)
        for item in extra_passes if explicit is None else ():
            mod = _resolve_pass(item)(mod)
        rec = _Rewrites.make() if record_rewrites else None
        ctx = tvm.transform.PassContext.current()
        if rec is not None:
            ctx.override_instruments(list(ctx.instruments) + [rec])
        try:
            ex = tvm.compile(mod, target=target, relax_pipeline=self._pipeline(target) if explicit is None else None)
        finally:
            if rec is not None:
                ctx.override_instruments([i for i in ctx.instruments if not i.same_as(rec)])
        self._rewrites = rec.kinds() if rec is not None else None
        dev = tvm.cuda(0) if self.device == "cuda" else tvm.cpu(0)
        return relax.VirtualMachine(ex, dev), dev

    def rewrites(self, compiled: Any) -> list | None:
        return getattr(self, "_rewrites", None)

    def run(self, compiled: Any, inputs: list) -> list:
        import tvm  # local: optional compiler, imported where it runs

        vm, dev, order = compiled
        out = vm["main"](*[tvm.runtime.tensor(np.array(inputs[k], order="C"), dev) for k in order])
        return _arrays(out)

    @classmethod
    def repro_source(cls, spec) -> str | None:
        opts = dict(spec.options)
        passes = list(opts.get("extra_passes", ()) or ())
        if any(not isinstance(p, str) for p in passes):
            return None
        level = spec.opt_level or cls.opt_levels[-1]
        gpu = spec.device == "cuda"
        lines = [
            "import tvm",
            "from tvm import relax",
            "from tvm.relax.frontend.onnx import from_onnx",
            "",
            f"TARGET = {TARGETS[spec.device]!r}  # device {spec.device}, optimization level {level}",
            f"PIPELINE = {PIPELINES[level]!r}",
            f"EXTRA_PASSES = {passes!r}  # 'module:function' passes applied after import",
            "",
            "",
            "def run(model_bytes, input_names, inputs, output_names):",
            "    import importlib",
            "    import onnx",
            "    proto = onnx.load_from_string(model_bytes)",
            "    mod = from_onnx(proto, keep_params_in_input=False)",
            "    for item in EXTRA_PASSES:",
            "        m, _, f = item.partition(':')",
            "        p = getattr(importlib.import_module(m), f)",
            "        mod = (p() if not isinstance(p, tvm.transform.Pass) else p)(mod)",
            "    target = tvm.target.Target(TARGET)",
            "    if PIPELINE == 'target-default':",
            "        pipeline = relax.get_default_pipeline(target)",
            "    else:",
            "        pipeline = relax.get_pipeline('default_build')",
        ]
        if gpu:
            lines += [
                "        from tvm.s_tir import dlight as dl",
                "        build = pipeline",
                "",
                "        @tvm.transform.module_pass(opt_level=0, name='BuildWithGpuFallbackSchedule')",
                "        def pipeline(mod, _ctx):",
                "            with target:",
                "                mod = relax.transform.LegalizeOps()(mod)",
                "                mod = dl.ApplyDefaultSchedule(dl.gpu.Fallback())(mod)",
                "                return build(mod)",
            ]
        lines += [
            "    ex = tvm.compile(mod, target=target, relax_pipeline=pipeline)",
            f"    dev = tvm.{'cuda' if gpu else 'cpu'}(0)",
            "    vm = relax.VirtualMachine(ex, dev)",
            "    out = vm['main'](*[tvm.runtime.tensor(x, dev) for x in inputs])",
            "    import numpy as np",
            "    # a tensor, a Shape (an output computed by ONNX Shape: its values, int64), or a tuple",
            "    outs = [out] if hasattr(out, 'numpy') or type(out).__name__ in ('Shape', 'ShapeTuple') else list(out)",
            "    return [o.numpy() if hasattr(o, 'numpy') else np.array([int(d) for d in o], dtype=np.int64) for o in outs]",
        ]
        return "\n".join(lines) + "\n"

    def unsupported(self, exc: BaseException) -> bool:
        return refused("tvm", exc)


#: TVM's importer names the operators it has no converter for in the order of a Python set,
#: which the process's string hash seed decides: sorted, one model gives one message (and
#: one signature) in every run.
_NO_CONVERTER = "The following operators are not supported for frontend ONNX: "


def _sort_unsupported(exc: BaseException) -> None:
    text = exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], str) else None
    if text is not None and text.startswith(_NO_CONVERTER):
        names = text[len(_NO_CONVERTER):].split(", ")
        exc.args = (_NO_CONVERTER + ", ".join(sorted(names)),)


def _arrays(out) -> list:
    """The VM's result as NumPy arrays: one result or a tuple of them, each a tensor or a
    ``Shape`` (what Relax returns for an output computed by ONNX Shape: its values, int64)."""
    items = [out] if hasattr(out, "numpy") or _is_shape(out) else list(out)
    return [o.numpy() if hasattr(o, "numpy") else np.array([int(d) for d in o], dtype=np.int64) for o in items]


def _is_shape(o) -> bool:
    return type(o).__name__ in ("Shape", "ShapeTuple")


#: Pass names that only wrap others, or lower TIR (they change every module they see).
_NOT_REWRITES = ("sequential", "_pipeline")
_LOWERING_PREFIXES = ("tirx.", "s_tir.", "tir.")


class _Rewrites:
    """A pass instrument recording which Relax passes changed the module (structural hash
    before and after) and which fused functions appeared: ``pass:FoldConstant``,
    ``fused:matmul_where_add`` (numbering suffixes dropped)."""

    @staticmethod
    def make():
        import tvm  # local: optional compiler, imported where it runs

        @tvm.instrument.pass_instrument
        class Instrument:
            def __init__(self):
                self.changed, self.fused, self._before = set(), set(), []

            def run_before_pass(self, mod, info):
                # a pass whose change is never recorded (a wrapper, TIR lowering) is not hashed:
                # hashing the TIR module around each of its passes was ~15% of a TVM build
                self._before.append(_hash(mod) if _recorded(info.name) else None)

            def run_after_pass(self, mod, info):
                before = self._before.pop()
                if before is not None and before != _hash(mod):
                    self.changed.add(info.name)
                for gv in mod.get_global_vars():
                    if gv.name_hint.startswith("fused_"):
                        self.fused.add(re.sub(r"\d+(?=_|$)", "", gv.name_hint[len("fused_"):]).replace("tir_", ""))

            def kinds(self) -> list:
                return sorted([f"pass:{n}" for n in self.changed] + [f"fused:{n}" for n in self.fused])

        return Instrument()


def _recorded(name: str) -> bool:
    """Whether a pass's change of the module is recorded as a rewrite (not a wrapper, not TIR
    lowering)."""
    return name not in _NOT_REWRITES and not name.startswith(_LOWERING_PREFIXES)


def _hash(mod) -> int:
    import tvm_ffi  # local: optional compiler, imported where it runs

    return tvm_ffi.structural_hash(mod)
