"""Building a TIR program with a pass sequence for ``llvm`` (or ``cuda``) and running it, in
an isolated worker.

A build is what ``tvm.tirx.build`` does, with the pipeline spelled out: bind the target,
apply the sequence (names of :data:`dlgate.tir.passes.PASSES`, or ``package.module:function``
for a pass of one's own, e.g. an injected fault), then the host finalization
(:data:`dlgate.tir.passes.FINALIZE`) and code generation. Each failure is tagged with the
stage it happened in, because the oracle's rules depend on it
(:mod:`dlgate.tir.oracle`): ``validate`` (the text does not parse or is not well formed),
``passes`` (applying the sequence), ``lower`` (finalization and code generation) and ``run``.

Every build and run happens in a worker of :mod:`dlgate.exec.worker` (the backend
:class:`TirBackend`, forked from TVM's warm server), so a segfault or a hang in TVM is a
classified outcome (crash, timeout, oom), never the gate's end. A job is a
:class:`Job`, sent as the model's bytes; the worker parses the program, makes the inputs
itself from the program's parameters and the job's seed (:func:`make_inputs`, deterministic),
builds, runs once and returns every buffer argument after the run (TIR writes its results in
place), then, when asked, times ``repeats`` further runs (TVM's ``time_evaluator``) for the
performance oracle.

On ``cuda`` (the backend's device ``cuda``: :data:`TARGETS`) the target bound is ``cuda``
with an ``llvm`` host; the sequence must then hold :data:`dlgate.tir.passes.GPU_REQUIRED`
(``SplitHostDevice`` makes the device kernel), the host module takes the host finalization
and the device module TVM's device finalization
(:data:`dlgate.tir.passes.FINALIZE_DEVICE`) before code generation, as ``tvm.tirx.build``
does for a GPU target. A program that touches a buffer outside every thread-bound loop is
rejected (stage ``validate``): that code stays on the host, where the GPU's buffers cannot be
read. The inputs are copied to ``tvm.cuda(0)`` and every buffer back after the run. A TVM
built without CUDA, or a machine without a GPU, makes the backend unavailable with TVM's
reason (:meth:`TirBackend.unavailable_reason`, the one ``tvm:cuda`` gives), never a failed
case.

A rejection (an invalid program; a mutated sequence TVM refuses while
applying it) is raised as :class:`Rejected`, which the backend declares ``unsupported``: the
worker reports it as such, not as a compile error.
"""
from __future__ import annotations

import importlib
import json
import os
from dataclasses import asdict, dataclass, field

import numpy as np

from dlgate.backends.base import Backend, BackendSpec, Model
from dlgate.tir import passes as P

#: The backend as the registry finds it (``package.module:Class``): no entry point needed.
SPEC = BackendSpec("dlgate.tir.build:TirBackend")
#: The backend's device -> the TVM target a program is built for.
TARGETS = {"cpu": "llvm", "cuda": "cuda"}


class Rejected(Exception):
    """TVM refused the program or the pair before building it: not a finding. The message
    starts with the stage (``validate`` or ``passes``)."""


@dataclass(frozen=True)
class Job:
    """One build and run. ``reject_pass_errors``: an error while applying ``passes`` is a
    rejection (a mutated sequence) rather than a compile error (the minimal sequence, which
    every well-formed program must take); so is one while lowering a sequence that lacks a
    required pass (:func:`dlgate.tir.passes.complete`). ``repeats``: timed runs after the
    checked one (0: none). ``mode``: ``"build"``; ``"interp"`` for the NumPy interpreter
    (:mod:`dlgate.tir.interp`) on the same inputs; or ``"time"``: ``reference`` and
    ``passes`` both built in the one worker and timed in alternation, ``repeats`` rounds
    (:func:`paired_times`). ``coverage``: the build's coverage is measured (a worker started
    with a coverage library, :mod:`dlgate.tir.coverage`) and returned as its feedback."""

    text: str
    passes: tuple = field(default_factory=tuple)
    seed: int = 0
    reject_pass_errors: bool = False
    repeats: int = 0
    mode: str = "build"
    reference: tuple = field(default_factory=tuple)
    coverage: bool = False

    def encode(self) -> bytes:
        d = asdict(self)
        if not d["coverage"]:  # the bytes of a job without coverage stay as they were
            del d["coverage"]
        return json.dumps(d, sort_keys=True).encode()

    @staticmethod
    def decode(data: bytes) -> "Job":
        d = json.loads(data)
        d["passes"] = tuple(d["passes"])
        d["reference"] = tuple(d.get("reference", ()))
        return Job(**d)

    def model(self) -> Model:
        """The job as the worker's protocol carries a model (its bytes; no graph)."""
        return Model(onnx=self.encode(), graph=None)


def external(name: str) -> bool:
    """A pass of one's own (``package.module:function``), not one of TVM's table."""
    return ":" in name


def make_pass(name: str):
    """The pass ``name`` stands for: one of :data:`dlgate.tir.passes.PASSES`, or the pass (or
    zero-argument callable returning one) at ``package.module:function``."""
    if not external(name):
        return P.make(name)
    import tvm  # local: optional compiler, imported where it runs

    mod, _, attr = name.rpartition(":")
    item = getattr(importlib.import_module(mod), attr)
    return item if isinstance(item, tvm.transform.Pass) else item()


def check_sequence(names) -> list:
    """``names`` as a list of pass names (table names or ``package.module:function``), or
    ValueError naming the first that is neither."""
    if isinstance(names, (str, bytes)) or not isinstance(names, (list, tuple)):
        raise ValueError(f"expected a list of TIR pass names, got {names!r}")
    for n in names:
        if not isinstance(n, str) or not (n in P.PASSES or (external(n) and n.rpartition(":")[2].isidentifier())):
            raise ValueError(f"unknown TIR pass {n!r}")
    return list(names)


# -- the worker's side ------------------------------------------------------------------------
def parse(text: str, target: str = "llvm"):
    """The IRModule of a program's text, or :class:`Rejected` (stage ``validate``) when it does
    not parse to a module with one PrimFunc ``main`` that TVM's verifiers accept (on a GPU
    ``target``, also one whose every buffer access is under a thread-bound loop:
    :func:`host_accesses`)."""
    import tvm  # local: optional compiler, imported where it runs
    from tvm import tirx  # local: optional compiler, imported where it runs

    try:
        mod = tvm.script.from_source(text)
    except Exception as e:  # noqa: BLE001 - the parser raises many classes
        raise Rejected(f"validate: does not parse: {_line(e)}") from None
    if isinstance(mod, tirx.PrimFunc):
        mod = tvm.IRModule({"main": mod})
    if not isinstance(mod, tvm.IRModule) or [g.name_hint for g in mod.functions] != ["main"]:
        raise Rejected("validate: not one PrimFunc named main")
    if not well_formed(mod):
        raise Rejected("validate: not well formed")
    if target != "llvm":
        host = host_accesses(mod["main"])
        if host:
            raise Rejected(f"validate: {host} buffer access(es) outside every thread-bound loop would run on "
                           f"the host, which cannot read {target}'s buffers")
    return mod


def host_accesses(func) -> int:
    """How many buffer loads and stores of ``func`` lie under no thread-bound loop
    (``T.thread_binding``): on a GPU target they stay in the host function, which would
    dereference device memory."""
    from tvm import tirx  # local: optional compiler, imported where it runs

    from dlgate.tir import ast as A  # local: the AST walker imports TVM

    return sum(1 for s in A.sites(func)
               if (isinstance(s.node, tirx.BufferStore) or type(s.node).__name__ in ("TensorLoad", "BufferLoad"))
               and not any(lp.kind == tirx.ForKind.THREAD_BINDING for lp in s.scope.loops))


def bound_target(target: str = "llvm"):
    """The TVM target a build binds: ``llvm`` as its own host, a GPU target with an ``llvm`` host."""
    import tvm  # local: optional compiler, imported where it runs

    if target == "llvm":
        t = tvm.target.Target("llvm")
        return t.with_host(t)
    return tvm.target.Target(target, host="llvm")

def well_formed(mod) -> bool:
    """TVM's well-formedness checks: ``tvm.s_tir``'s verifier, and ``tvm.tirx``'s as well for a
    program without schedulable blocks (which tirx's verifier does not read)."""
    from tvm import s_tir, tirx  # local: optional compiler, imported where it runs

    try:
        if not s_tir.analysis.verify_well_formed(mod, assert_mode=False):
            return False
        if "T.sblock" in mod.script():
            return True
        return bool(tirx.analysis.verify_well_formed(mod, assert_mode=False))
    except Exception:  # noqa: BLE001 - a verifier that throws rejects as well
        return False


def apply_passes(mod, names, reject: bool, target: str = "llvm"):
    """``mod`` with ``target`` bound (:func:`bound_target`) and ``names`` applied in order.
    ``reject``: an error while applying them is a :class:`Rejected` (stage ``passes``)."""
    import tvm  # local: optional compiler, imported where it runs
    from tvm import tirx  # local: optional compiler, imported where it runs

    mod = tirx.transform.BindTarget(bound_target(target))(mod)
    try:
        seq = [make_pass(n) for n in names]
        return tvm.transform.Sequential(seq)(mod)
    except Exception as e:  # noqa: BLE001 - TVM's errors are many classes
        if reject:
            raise Rejected(f"passes: {_line(e)}") from None
        raise


def finalize(mod) -> tuple:
    """``(host module, {target: device module})`` of a module the sequence has been applied
    to, each finalized as ``tvm.tirx.build`` does (:data:`dlgate.tir.passes.FINALIZE` on the
    host, :data:`dlgate.tir.passes.FINALIZE_DEVICE` on each device module): everything before
    code generation, which needs no device (a GPU build's device side is checked here on a
    machine without one)."""
    import tvm  # local: optional compiler, imported where it runs
    from tvm.tirx.build import split_host_device_mods  # local: optional compiler

    def seq(names):
        return tvm.transform.Sequential([getattr(tvm.tirx.transform, n)() for n in names])

    host, device = split_host_device_mods(mod)
    return seq(P.FINALIZE)(host), {t: seq(P.FINALIZE_DEVICE)(m) for t, m in device.items()}


def lower(mod):
    """Finalization (:func:`finalize`) and code generation of a module the sequence has been
    applied to: ``target.build.llvm`` for the host, the device target's for its kernels."""
    import tvm  # local: optional compiler, imported where it runs
    from tvm.tirx.build import tir_to_runtime  # local: optional compiler

    host, device = finalize(mod)
    return tir_to_runtime(host, device, tvm.target.Target("llvm"))


def build(text: str, names, reject: bool = False, target: str = "llvm"):
    """The runtime module of a program built with a sequence (stages as in the module text)."""
    return lower(apply_passes(parse(text, target), names, reject, target))


def params(mod) -> list:
    """``(kind, shape, dtype)`` of each parameter of ``main``: ``("buffer", shape, dtype)``
    or ``("scalar", (), dtype)``; Rejected (stage ``validate``) for a buffer whose shape is
    not constant (its inputs could not be made)."""
    from tvm import tirx  # local: optional compiler, imported where it runs

    out = []
    for p in mod["main"].params:
        ty = p.ty
        if isinstance(ty, tirx.buffer.BufferType):
            try:
                shape = tuple(int(d) for d in ty.shape)
            except (TypeError, ValueError):
                raise Rejected(f"validate: parameter {p} has a symbolic shape") from None
            out.append(("buffer", shape, str(ty.dtype)))
        else:
            out.append(("scalar", (), str(ty.dtype)))
    return out


def make_inputs(mod, seed: int) -> list:
    """One NumPy value per parameter of ``mod``'s ``main``, from :func:`inputs_for`."""
    return inputs_for(params(mod), seed)


def inputs_for(signature: list, seed: int) -> list:
    """One NumPy value per ``(kind, shape, dtype)`` of ``signature``, from them and ``seed``
    alone: the same in every process (a repro script carries this function's source).
    Floats are uniform in [-2, 2) (no overflow in a few products), integers small (no
    overflow in a few products either: undefined behaviour the passes may legally change),
    booleans random; scalars are small positive integers (loop bounds, sizes). Every buffer
    is filled, outputs too, so that a program reading an output before writing it reads the
    same values in each build. A buffer is an array (a 0-d buffer a 0-d array), a scalar a
    NumPy scalar: the two are passed differently (:func:`to_argument`)."""
    out = []
    for k, (kind, shape, dtype) in enumerate(signature):
        rng = np.random.default_rng([seed & 0xFFFFFFFF, k])
        if kind == "scalar":
            out.append(np.dtype(dtype).type(rng.integers(1, 9)))
        elif dtype == "bool":
            out.append(rng.integers(0, 2, shape).astype(bool))
        elif dtype.startswith(("int", "uint")):
            lo = 0 if dtype.startswith("uint") else -8
            out.append(rng.integers(lo, 8, shape).astype(dtype))
        else:
            out.append(rng.uniform(-2.0, 2.0, shape).astype(dtype))
    return out


def to_argument(value, dev=None):
    """What the built function takes for a value of :func:`inputs_for`: a buffer (an array,
    of any rank, 0 included) as a fresh TVM tensor, a scalar parameter (a NumPy scalar) as a
    Python number. A 0-d buffer is still a buffer: passed as a number, TVM's packed function
    raises ``TypeError: expected Tensor``."""
    import tvm  # local: optional compiler, imported where it runs

    if isinstance(value, np.ndarray):
        return tvm.runtime.tensor(np.array(value, copy=True), device=dev)
    return value.item()


def execute(rt, values: list, repeats: int = 0, dev=None) -> tuple:
    """``(outputs, seconds)``: every argument after one run of ``main`` on copies of
    ``values`` (buffers as NumPy arrays, scalars as NumPy scalars), and the per-run seconds of
    ``repeats`` timed measurements (TVM's ``time_evaluator`` after a warm-up: the mean of
    as many calls as fill a millisecond), empty when ``repeats`` is 0. ``dev``: where the
    buffers live (default the CPU); each is copied back after the run."""
    import tvm  # local: optional compiler, imported where it runs

    dev = dev or tvm.cpu(0)
    args = [to_argument(v, dev) for v in values]
    rt["main"](*args)
    outs = [a.numpy() if hasattr(a, "numpy") else np.array(v) for a, v in zip(args, values)]
    seconds = []
    if repeats > 0:
        # each measurement runs the function for at least a millisecond (TVM raises the
        # number of calls until it does) and reports their mean: a single call of a small
        # program takes less than the timer's resolution
        timer = rt.time_evaluator("main", dev, number=1, repeat=repeats, min_repeat_ms=1)
        seconds = list(timer(*[to_argument(v, dev) for v in values]).results)
    return outs, seconds


def paired_times(first, second, values: list, rounds: int, dev=None) -> tuple:
    """``(first's seconds, second's seconds)``: ``rounds`` measurements of each runtime
    module, taken in alternation (first, second, first, ...), each the mean of as many calls
    as fill a millisecond. On a loaded machine the load drifts over seconds; measured in
    alternation, both builds see the same drift, where two measurements one after the other
    each see their own."""
    import tvm  # local: optional compiler, imported where it runs

    dev = dev or tvm.cpu(0)
    args = [to_argument(v, dev) for v in values]
    timers = [rt.time_evaluator("main", dev, number=1, repeat=1, min_repeat_ms=1) for rt in (first, second)]
    out: tuple = ([], [])
    for _ in range(rounds):
        for k, timer in enumerate(timers):
            out[k].append(timer(*args).results[0])
    return out


class TirBackend(Backend):
    """The worker side of a TIR job (:class:`Job`): parse, validate, build, run. Its outputs
    are the buffer arguments after the run and, last, a float64 array of the timed runs'
    seconds (empty without ``repeats``). Options ``coverage_library`` and
    ``coverage_objects`` (the campaign's ``tir_coverage_*`` keys): the worker measures the
    coverage of a job that asks (``Job.coverage``) in that gcc-instrumented library, its
    compile (parse, passes, code generation) from a reset of the counters to their dump,
    and returns it as the job's feedback; a library it cannot measure fails the start."""

    name = "tir"
    package = "tvm"
    devices = tuple(TARGETS)
    option_kinds = {"coverage_library": "", "coverage_objects": ""}

    @classmethod
    def unavailable_reason(cls, device: str) -> str | None:
        """TVM's own backend's reason (``tvm:cuda``): TVM missing, a build without CUDA, no GPU."""
        from dlgate.backends.tvm import TVM  # local: the graph backend names this one (no cycle at import)

        return TVM.unavailable_reason(device)

    @property
    def target(self) -> str:
        return TARGETS[self.device]

    @property
    def gpu(self) -> bool:
        return self.device != "cpu"

    def dev(self):
        import tvm  # local: optional compiler, imported where it runs

        return tvm.cuda(0) if self.gpu else tvm.cpu(0)

    def self_test(self) -> None:
        """On cuda: a thread-bound copy (:data:`PROBE`) built with the GPU's minimal sequence
        and run on ``tvm.cuda(0)`` must copy its input; Unavailable saying why otherwise."""
        if not self.gpu:
            return
        from dlgate.backends.base import Unavailable  # local: only the GPU start-up raises it

        try:
            mod = parse(PROBE, self.target)
            values = make_inputs(mod, 0)
            outs, _ = execute(lower(apply_passes(mod, P.minimal(gpu=True), False, self.target)), values, 0, self.dev())
        except Exception as e:  # a CUDA toolkit, NVRTC or driver that does not work: cannot run
            raise Unavailable(f"{self.name} on {self.device}: the start-up probe (a thread-bound copy) failed: "
                              f"{type(e).__name__}: {str(e).strip()[:500]}") from None
        if not np.array_equal(outs[1], values[0]):
            raise Unavailable(f"{self.name} on {self.device}: the start-up probe (a thread-bound copy) "
                              "computed wrong values")

    def start(self) -> None:
        """One thread for TVM's parallel loops: on a shared CI machine a thread pool's
        scheduling makes a parallel loop's time vary tenfold run to run, which the
        performance oracle would read as a slowdown. (A parallel loop's data races are not
        looked for: they are the program's undefined behaviour anyway.) TVM reads the
        variable when its pool starts, at the first parallel run, after this."""
        os.environ["TVM_NUM_THREADS"] = "1"
        super().start()
        self.collector = None
        if self.options.get("coverage_library"):
            from dlgate.tir.coverage import Collector  # local: only coverage workers need it

            self.collector = Collector(self.options["coverage_library"], self.options.get("coverage_objects"))

    def version(self) -> str:
        import tvm  # local: optional compiler, imported where it runs

        return tvm.__version__

    def compile(self, model: Model):
        job = Job.decode(model.onnx)
        if not job.coverage:
            return self._compile(job) + (None,)
        if getattr(self, "collector", None) is None:
            return self._compile(job) + ({"error": "coverage asked of a TIR worker without a coverage library"},)
        built, feedback = self.collector.measure(lambda: self._compile(job))
        return built + (feedback,)

    def feedback(self, compiled):
        return compiled[-1]

    def _compile(self, job: Job) -> tuple:
        target = self.target
        mod = parse(job.text, target)
        values = make_inputs(mod, job.seed)
        if job.mode == "interp":
            return job, None, values, mod
        if job.mode == "time":
            return job, (lower(apply_passes(mod, job.reference, False, target)),
                         lower(apply_passes(mod, job.passes, True, target))), values, mod
        if self.gpu and job.reject_pass_errors and not P.complete(job.passes, True):
            # on a GPU such a build may keep the threads on the host, reading device memory there
            raise Rejected("passes: the sequence lacks passes a GPU build needs "
                           f"({', '.join(sorted(P.GPU_REQUIRED - set(job.passes))) or 'their order'})")
        applied = apply_passes(mod, job.passes, job.reject_pass_errors, target)
        if job.reject_pass_errors and not P.complete(job.passes, self.gpu):
            try:  # a sequence without the required passes: what it cannot build is its own doing
                return job, lower(applied), values, mod
            except Exception as e:  # noqa: BLE001 - TVM's errors are many classes
                raise Rejected(f"passes: the sequence lacks required passes: {_line(e)}") from None
        return job, lower(applied), values, mod

    def run(self, compiled, inputs: list) -> list:
        job, rt, values, mod, _ = compiled
        if job.mode == "interp":
            from dlgate.tir.interp import evaluate  # local: only interpreter jobs need it

            return evaluate(mod["main"], values) + [np.zeros(0)]
        if job.mode == "time":
            return [np.array(t, dtype=np.float64) for t in paired_times(rt[0], rt[1], values, job.repeats, self.dev())]
        outs, seconds = execute(rt, values, job.repeats, self.dev())
        return outs + [np.array(seconds, dtype=np.float64)]

    def unsupported(self, exc: BaseException) -> bool:
        from dlgate.tir.interp import Unsupported  # local: only interpreter jobs raise it

        return isinstance(exc, (Rejected, Unsupported))


#: The GPU start-up probe: a copy, its loop bound to blocks and threads.
PROBE = """# from tvm.script import tirx as T
@T.prim_func
def main(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
    T.func_attr({"tirx.noalias": True})
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            b[bx * 32 + tx] = a[bx * 32 + tx]
"""


def _line(e: BaseException) -> str:
    """An error's type and its last non-empty line (TVM puts the check that failed there)."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[-1] if lines else ''}"[:300]
