"""Misbehaving backends for the isolation tests (loaded by name in worker processes)."""
import ctypes
import os
import subprocess
import sys
import time

import numpy as np

from dlgate.backends.base import Backend, Unavailable
from dlgate.backends.onnxruntime import OnnxRuntime
from dlgate.backends.testing import _misconverted
from dlgate.backends.tvm import TVM


class Good(Backend):
    """Returns zeros of the graph's output types."""

    name = "good"

    def version(self):
        return "1"

    def compile(self, model):
        return model.graph

    def run(self, graph, inputs):
        return [np.zeros(graph.tensors[t].shape, graph.tensors[t].dtype) for t in graph.outputs]


class Segfault(Good):
    name = "segfault"

    def run(self, graph, inputs):
        ctypes.string_at(0)  # reads address 0: SIGSEGV


class SegfaultOn(OnnxRuntime):
    """onnxruntime, dying of SIGSEGV running a model that holds the operator type option
    ``on`` names: a crash tied to one operator, which reduces to it."""

    name = "segfault-on"
    option_names = OnnxRuntime.option_names + ("on",)

    def compile(self, model):
        import onnx

        ops = {n.op_type for n in onnx.load_from_string(model.onnx).graph.node}
        return self.options.get("on") in ops, super().compile(model)

    def run(self, compiled, inputs):
        crash, session = compiled
        if crash:
            ctypes.string_at(0)  # reads address 0: SIGSEGV
        return super().run(session, inputs)


class BusError(Good):
    """Reads a mapped page past the end of its file: SIGBUS."""

    name = "buserror"

    def run(self, graph, inputs):
        import mmap
        import tempfile

        with tempfile.TemporaryFile() as f:
            f.write(b"\0" * mmap.PAGESIZE)
            f.flush()
            m = mmap.mmap(f.fileno(), mmap.PAGESIZE)
            f.truncate(0)
            ctypes.string_at(ctypes.addressof(ctypes.c_char.from_buffer(m)), 1)  # the page is gone: SIGBUS


class BadFree(Good):
    """Frees a pointer into the middle of a heap block: glibc aborts with ``free(): invalid pointer``."""

    name = "badfree"

    def run(self, graph, inputs):
        libc = ctypes.CDLL(None)
        libc.calloc.restype = ctypes.c_void_p
        libc.free.argtypes = [ctypes.c_void_p]
        libc.free(libc.calloc(1, 64) + 16)  # zeroed: the "chunk header" glibc reads first is 0, never garbage


class Abort(Good):
    name = "abort"

    def compile(self, model):
        os.abort()


class Hang(Good):
    name = "hang"

    def run(self, graph, inputs):
        time.sleep(3600)


class HangingModuleText(Hang):
    """In place of TVM's module printer (``dlgate.reduce.tvmscript.MODULE_TEXT``): never
    answers, as when TVM's importer hangs on the model."""

    name = "hanging-module-text"
    option_names = ("path", "plain")


class Spins(Good):
    """Computes for option ``cpu_s`` seconds of its own CPU time (default: for ever, a hang that
    spins), then answers as Good."""

    name = "spins"

    def run(self, graph, inputs):
        need = float(self.options.get("cpu_s", "inf"))
        start = time.thread_time()
        while time.thread_time() - start < need:
            pass
        return super().run(graph, inputs)


class Hog(Good):
    name = "hog"

    def run(self, graph, inputs):
        blocks = []
        while True:  # touch every page so it is resident; past 2 GiB (a cap that failed) it only waits
            if len(blocks) < 64:
                blocks.append(np.ones(32 * 2**20, dtype=np.uint8))
            time.sleep(0.01)


class TreeHog(Good):
    """Its run starts a child in a session of its own (outside the worker's process group) that holds
    option ``mb`` MiB resident (its pid written to option ``pids`` first) and hangs: the worker stays
    small, only a memory cap that counts the whole process tree sees the child."""

    name = "treehog"
    option_kinds = {"mb": "", "pids": ""}

    def run(self, graph, inputs):
        code = (f"import os, time; os.setsid(); open({self.options['pids']!r}, 'a').write(f'{{os.getpid()}}\\n'); "
                f"held = b'x' * ({int(self.options['mb'])} * 2**20); time.sleep(3600)")
        subprocess.Popen([sys.executable, "-c", code])
        time.sleep(3600)


class Spawner(Good):
    """Its run starts a child that starts a grandchild, each in a session of its own (so no process
    group holds them), appends "child grandchild" pids to option ``pids`` and hangs: a timeout must
    end the whole tree, whatever process group its members are in."""

    name = "spawner"
    option_kinds = {"pids": ""}

    def run(self, graph, inputs):
        grandchild = "import os, time; os.setsid(); time.sleep(3600)"
        code = (f"import os, subprocess, sys, time; os.setsid(); "
                f"g = subprocess.Popen([sys.executable, '-c', {grandchild!r}]); "
                f"open({self.options['pids']!r}, 'a').write(f'{{os.getpid()}} {{g.pid}}\\n'); time.sleep(3600)")
        subprocess.Popen([sys.executable, "-c", code])
        time.sleep(3600)


class Declines(Good):
    name = "declines"

    def compile(self, model):
        raise NotImplementedError("operator Foo is not implemented for int8")


class Raises(Good):
    name = "raises"

    def run(self, graph, inputs):
        raise RuntimeError("internal error at 0x7f3a12 in pass FuseOps")


class QuantRaises(Good):
    """Raises on every model that holds a QuantizeLinear, whatever its values: a compiler
    error a reduction can keep while it shrinks the quantization's scale."""

    name = "quantraises"

    def compile(self, model):
        import onnx

        if any(n.op_type == "QuantizeLinear" for n in onnx.load_from_string(model.onnx).graph.node):
            raise RuntimeError("QuantizeLinear lowering failed")
        return model.graph


class OrtDefaultAccuracy(OnnxRuntime):
    """onnxruntime with its own session defaults: MatMulNBits, fused from a 4-bit
    DequantizeLinear -> MatMul, then quantizes the activations to int8 (accuracy level 4),
    a result about 0.5% off the specification's."""

    name = "ortdefaultaccuracy"
    session_config: dict = {}


class SymbolicSigmoidFails(Good):
    """Fails at run time on a model that declares symbolic input dims and holds a Sigmoid
    (a rewrite that fires only where shapes are unknown); any other model runs (zeros)."""

    name = "symbolicsigmoidfails"

    def compile(self, model):
        import onnx

        m = onnx.load_from_string(model.onnx)
        symbolic = any(d.dim_param for i in m.graph.input for d in i.type.tensor_type.shape.dim)
        return model.graph, symbolic and any(n.op_type == "Sigmoid" for n in m.graph.node)

    def run(self, compiled, inputs):
        graph, fails = compiled
        if fails:
            raise RuntimeError("fused Sigmoid kernel: unknown batch")
        return super().run(graph, inputs)


def _symbolic(model) -> bool:
    import onnx

    m = onnx.load_from_string(model.onnx)
    return any(d.dim_param for i in m.graph.input for d in i.type.tensor_type.shape.dim)


class SymbolicCompileFails(Good):
    """An internal compile error on any model that declares symbolic input dims; the same
    model with static shapes compiles (zeros)."""

    name = "symboliccompilefails"

    def compile(self, model):
        if _symbolic(model):
            raise RuntimeError("InternalError: Check failed: (lhs_extent == rhs_extent) is false")
        return super().compile(model)


class SymbolicDeclines(SymbolicCompileFails):
    """Declines symbolic input dims in its own words (``symbolic_refusals``)."""

    name = "symbolicdeclines"
    symbolic_refusals = (r"requires a statically known",)

    def compile(self, model):
        if _symbolic(model):
            raise ValueError("Unsqueeze requires a statically known input rank.")
        return super().compile(model)


class AlwaysCompileFails(Good):
    """An internal compile error on every model, symbolic dims or not."""

    name = "alwayscompilefails"

    def compile(self, model):
        raise RuntimeError("InternalError: Check failed: (lhs_extent == rhs_extent) is false")


class LevelRefuses(Good):
    """Declines every model at its higher optimization level, as a fusion into a node without
    a kernel does; at the lower one it runs, or (option ``low`` = "error") fails to compile
    for another reason."""

    name = "levelrefuses"
    opt_levels = ("low", "high")
    refusals_by_level = True
    option_kinds = {"low": ""}

    def compile(self, model):
        if self.opt_level == "high":
            raise NotImplementedError("no kernel for the fused node")
        if self.options.get("low") == "error":
            raise RuntimeError("type inference failed")
        return model.graph


class Broken(Good):
    name = "broken"

    def __init__(self, **kw):
        raise RuntimeError("cannot initialise")


class NoGpu(Good):
    name = "nogpu"

    @classmethod
    def unavailable_reason(cls, device):
        return "needs a GPU; none is visible"


class EnvBug(Backend):
    """onnxruntime's answers, plus one wherever the environment variable ``FAKE_BUG`` is
    "1" in the worker: a compiler whose build (environment) decides whether a bug is there,
    for the head-versus-base tests. "first" or "last": only in the first or the last
    floating-point output (two bugs, in different outputs, when a model has several)."""

    name = "envbug"

    def version(self):
        return "1"

    def compile(self, model):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        return ort.InferenceSession(model.onnx, so, providers=["CPUExecutionProvider"])

    def run(self, sess, inputs):
        outs = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs)})
        bug = os.environ.get("FAKE_BUG")
        floats = [k for k, o in enumerate(outs) if o.dtype.kind == "f"]
        hit = {"1": floats, "first": floats[:1], "last": floats[-1:]}.get(bug, [])
        return [o + 1 if k in hit else o for k, o in enumerate(outs)]


class EnvOpBugs(EnvBug):
    """onnxruntime's answers, with every result of the operator types ``FAKE_WRONG`` names
    (comma-separated) off by one in this build: a compiler bug tied to an operator, as real
    ones are, wherever the operator sits in a model and whichever outputs it reaches (a cut
    or a cone of the model keeps it). Head and base builds of one compiler that get other
    operators wrong."""

    name = "envopbugs"

    def compile(self, model):
        import onnx
        from onnx import helper, numpy_helper

        wrong = {op for op in os.environ.get("FAKE_WRONG", "").split(",") if op}
        m = onnx.shape_inference.infer_shapes(onnx.load_from_string(model.onnx))
        types = {vi.name: vi.type.tensor_type.elem_type for vi in [*m.graph.value_info, *m.graph.output]}
        nodes = []
        for k, n in enumerate(m.graph.node):
            nodes.append(n)
            if n.op_type not in wrong:
                continue
            for j, y in enumerate(list(n.output)):
                right, one = f"{y}__right{k}", f"{y}__one{k}"
                n.output[j] = right
                dtype = helper.tensor_dtype_to_np_dtype(types[y])
                m.graph.initializer.append(numpy_helper.from_array(np.ones((), dtype), one))
                nodes.append(helper.make_node("Add", [right, one], [y], name=f"{n.name}__wrong{j}"))
        del m.graph.node[:]
        m.graph.node.extend(nodes)
        return super().compile(type(model)(m.SerializeToString(), model.graph))


class Flaky(EnvBug):
    """Wrong on every other compilation in a worker (every run of that compiled model, the
    further input sets of a dynamic case included): a failure that a re-run does not
    reproduce."""

    name = "flaky"
    compiles = 0

    def compile(self, model):
        type(self).compiles += 1
        return super().compile(model), type(self).compiles % 2 == 1

    def run(self, compiled, inputs):
        sess, wrong = compiled
        outs = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs)})
        if wrong:
            outs = [o + 1 if o.dtype.kind == "f" else o for o in outs]
        return outs


class EnvFaults(EnvBug):
    """onnxruntime's answers, with a build's faults set by its environment, met in the
    model's node order (the first one raises): ``FAKE_REFUSE`` names an operator type the
    build has no kernel for (a refusal naming it); ``FAKE_FAULT`` one whose lowering fails,
    with the message spelled as ``FAKE_SPELLING`` says ("old" or "new": another source
    line, another C++ signature, another stack), as two releases of one compiler spell one
    failure. Head and base builds of one compiler, for the sharing tests."""

    name = "envfaults"

    def compile(self, model):
        import onnx

        refuse, fault = os.environ.get("FAKE_REFUSE"), os.environ.get("FAKE_FAULT")
        for n in onnx.load_from_string(model.onnx).graph.node:
            if n.op_type == refuse:
                raise NotImplementedError(f"Failed to find kernel for {n.op_type}(13) (node {n.name}). "
                                          "Kernel not found")
            if n.op_type == fault:
                self._lower_failed(n.op_type)
        return super().compile(model)

    def _lower_failed(self, op):
        if os.environ.get("FAKE_SPELLING") == "new":
            self._lower_new(op)
        raise RuntimeError(f"/build/src/lower/lower_{op.lower()}.cc:78 lower::Lower{op}::Lower{op}(const "
                           f"NodeProtoHelper<ProtoContext>&, const string&) x.rank() == 4 was false. "
                           f"{op} lowering needs a 4-D input.")

    def _lower_new(self, op):
        raise RuntimeError(f"/build/src/lower/lower_{op.lower()}.cc:91 lower::Lower{op}::Lower{op}(const "
                           f"InfoType&, const std::string&) [with InfoType = lower::KernelInfo; std::string = "
                           f"std::__cxx11::basic_string<char>] x.rank() == 4 was false. {op} lowering needs a "
                           f"4-D input.")



class EnvFaultsLevels(EnvFaults):
    """:class:`EnvFaults` with two optimization levels, ``zero`` and ``default``, that fail
    alike: one cause met at two levels of one backend."""

    name = "envfaults-levels"
    opt_levels = ("zero", "default")

class GpuFaults(EnvBug):
    """onnxruntime's answers on a pretend GPU (device ``cuda``), whose faults the worker's
    environment sets; the device's state is a folder, ``FAKE_GPU_STATE``, shared by the
    worker processes of one build. ``FAKE_GPU_FAULT``:

    * ``lost:OP``: the first run of a model holding operator OP fails with CUDA's words
      for a device gone bad, and the device stays gone: from then on the start-up
      self-test fails, as a real probe does on a GPU that fell off the bus;
    * ``kernel:OP``: every run of a model holding operator OP fails with an illegal memory
      access, the device staying healthy (a bug in a kernel the compiler generated).
    """

    name = "gpufaults"
    devices = ("cpu", "cuda")

    def _state(self, name: str) -> str:
        return os.path.join(os.environ["FAKE_GPU_STATE"], name)

    def self_test(self):
        if os.environ.get("FAKE_GPU_STATE") and os.path.exists(self._state("lost")):
            raise Unavailable("gpufaults on cuda: the start-up probe failed: CUDA error: no CUDA-capable device is "
                              "detected")

    def compile(self, model):
        import onnx

        ops = {n.op_type for n in onnx.load_from_string(model.onnx).graph.node}
        return super().compile(model), ops

    def run(self, compiled, inputs):
        sess, ops = compiled
        kind, _, arg = os.environ.get("FAKE_GPU_FAULT", "").partition(":")
        if kind == "lost" and arg in ops:
            open(self._state("lost"), "w").close()
            raise RuntimeError("CUDA error: unspecified launch failure\nCUDA kernel errors might be "
                               "asynchronously reported at some other API call")
        if kind == "kernel" and arg in ops:
            raise RuntimeError(f"CUDA error: an illegal memory access was encountered (in the kernel of {arg})")
        return super().run(sess, inputs)


class EnvTVM(TVM):
    """The real TVM, with a Relax pass that miscompiles Sigmoid added wherever ``FAKE_BUG``
    is "1" in the worker: a head build carrying a regression its base build lacks."""

    name = "envtvm"

    def compile(self, model):
        if os.environ.get("FAKE_BUG") == "1":
            self.options = dict(self.options, extra_passes=["dlgate.backends.testing:sigmoid_to_tanh"])
        return super().compile(model)


class BrokenImport(Good):
    """A broken build: importing the compiler raises (e.g. a libtvm.so that does not load)."""

    name = "brokenimport"

    def __init__(self, *a, **k):
        raise OSError("libtvm.so: cannot open shared object file: No such file or directory")


class DiesOnStart(Good):
    """A build that segfaults while the worker starts it."""

    name = "diesonstart"

    def __init__(self, *a, **k):
        ctypes.string_at(0)


class EnvBroken(EnvBug):
    """Starts only where ``FAKE_BROKEN`` is not "1": a base environment whose compiler
    does not import."""

    name = "envbroken"

    def __init__(self, *a, **k):
        if os.environ.get("FAKE_BROKEN") == "1":
            raise ImportError("No module named 'tvm' (a base environment without the compiler)")
        super().__init__(*a, **k)


class PrintsEnv(Good):
    """A compiler that shows what it can see: it prints its whole environment (into the
    worker's log) and fails with an error holding the environment too; and, where
    ``PRINTS_ENV_FILE`` names a file, that file's text: a secret it got hold of some other
    way than its environment, which only redaction can keep out of dlgate's output. Where
    ``PRINTS_ENV_DUMP`` names a file, the whole environment is also written there as JSON
    (an error message is cut at 4,000 characters)."""

    name = "printsenv"

    def run(self, graph, inputs):
        import json

        seen = "\n".join(f"{k}={v}" for k, v in sorted(os.environ.items()))
        if os.environ.get("PRINTS_ENV_DUMP"):
            with open(os.environ["PRINTS_ENV_DUMP"], "w") as f:
                json.dump(dict(os.environ), f)
        path, extra = os.environ.get("PRINTS_ENV_FILE"), ""
        if path:
            with open(path) as f:
                extra = f"file: {f.read()}\n"
        print(f"{seen}\n{extra}", flush=True)  # the log's tail ends with the file
        raise RuntimeError(f"environment:\n{extra}{seen}")  # the message starts with it


class SlowCompile(EnvBug):
    """onnxruntime's answers after sleeping in compile for option ``seconds`` (default an
    hour: a compile that hangs). Where option ``marker`` names a file, each compile first
    appends the worker's pid to it, so a test can tell that a worker is busy compiling."""

    name = "slowcompile"
    option_names = ("marker", "seconds")

    def compile(self, model):
        marker = self.options.get("marker")
        if marker:
            with open(marker, "a") as f:
                f.write(f"{os.getpid()}\n")
        time.sleep(float(self.options.get("seconds", 3600)))
        return super().compile(model)


class HangsOn(EnvBug):
    """onnxruntime's answers, except that compile hangs (an hour) on a model holding every
    operator type option ``hang`` names (comma-separated), and sleeps option ``slow_s``
    seconds on one holding those ``slow`` names: a compiler hang tied to operators, and a
    slowness that is not a hang."""

    name = "hangson"
    option_names = ("hang", "slow", "slow_s")

    def compile(self, model):
        import onnx

        ops = {n.op_type for n in onnx.load_from_string(model.onnx).graph.node}

        def named(key):
            want = {x for x in str(self.options.get(key, "")).split(",") if x}
            return bool(want) and want <= ops
        if named("hang"):
            time.sleep(3600)
        if named("slow"):
            time.sleep(float(self.options.get("slow_s", 0)))
        return super().compile(model)


class HangsOnLevels(HangsOn):
    """:class:`HangsOn` with two optimization levels: at ``default`` it hangs on the operators
    option ``hang`` names, at ``zero`` on those ``hang_zero`` names (the same when not given):
    one hang met at both levels of a backend, or one hang at each level."""

    name = "hangson-levels"
    option_names = HangsOn.option_names + ("hang_zero",)
    opt_levels = ("zero", "default")

    def compile(self, model):
        if self.opt_level == "zero" and self.options.get("hang_zero"):
            self.options = dict(self.options, hang=self.options["hang_zero"])
        return super().compile(model)


class FirstShape(Backend):
    """onnxruntime that specializes the model on the shapes of its first run (an injected
    dynamic-shape bug): later runs at other shapes get the first run's outputs, resized."""

    name = "first-shape"

    def version(self):
        return "1"

    def compile(self, model):
        import onnxruntime as ort

        return {"session": ort.InferenceSession(model.onnx, providers=["CPUExecutionProvider"]), "first": None}

    def run(self, compiled, inputs):
        sess = compiled["session"]
        if compiled["first"] is None:
            names = [i.name for i in sess.get_inputs()]
            compiled["first"] = sess.run(None, dict(zip(names, inputs)))
            return compiled["first"]
        return [np.resize(o, o.shape) for o in compiled["first"]]  # the cached shape's result


class OldRuntime(Backend):
    """onnxruntime that refuses models newer than opset 20, as an older runtime does."""

    name = "old-runtime"

    def version(self):
        return "1"

    def compile(self, model):
        import onnx
        import onnxruntime as ort

        opset = next(o.version for o in onnx.load_from_string(model.onnx).opset_import if o.domain in ("", "ai.onnx"))
        if opset > 20:
            raise RuntimeError(f"ONNX Runtime only *guarantees* support for models stamped with opset version 20 "
                               f"(model opset {opset})")
        return ort.InferenceSession(model.onnx, providers=["CPUExecutionProvider"])

    def run(self, sess, inputs):
        return sess.run(None, dict(zip([i.name for i in sess.get_inputs()], inputs)))

    def unsupported(self, exc):
        return "NOT_IMPLEMENTED" in str(exc)


class OrtGpuBuild(OnnxRuntime):
    """onnxruntime asked for a GPU provider that its build lists but cannot load (the CUDA
    or cuDNN libraries missing): the real onnxruntime, with the check that this build lists
    the provider left out, so asking it for CUDAExecutionProvider gets onnxruntime's real
    answer to a provider it cannot load: a warning, and a session on the CPU."""

    name = "ortgpubuild"

    @classmethod
    def unavailable_reason(cls, device):
        return None


class OrtGpuLostMidRun(OrtGpuBuild):
    """The same, where the provider loaded at start-up (the start-up probe passed, as on a
    GPU machine) and is lost afterwards: every session then falls back to the CPU."""

    name = "ortgpulostmidrun"

    def self_test(self):
        return None


class OrtWrongProbe(OnnxRuntime):
    """onnxruntime whose probe session's node runs on the CPU though the CUDA provider is
    among the session's providers (what the profile shows where a provider takes no node)."""

    name = "ortwrongprobe"

    @classmethod
    def unavailable_reason(cls, device):
        return None

    def _check_provider(self, sess):
        return None


class ArgMaxInt32(OnnxRuntime):
    """onnxruntime whose ArgMax makes int32 indices (ONNX says int64), as TVM 0.25's TopK did:
    an ArgMax output the model returns comes out int32 (a ``dtype_mismatch``); one another
    operator consumes fails to compile, in TVM's words, where the int32 meets an int64."""

    name = "argmaxint32"

    def compile(self, model):
        import onnx

        g = onnx.load_from_string(model.onnx).graph
        made = {o for n in g.node if n.op_type == "ArgMax" for o in n.output}
        if any(i in made for n in g.node for i in n.input):
            raise TypeError("Binary operators must have the same datatype for both operands.  However, "
                            "R.add(lv, lv1) uses datatype int32 on the LHS and datatype int64 on the RHS.")
        sess, ins, outs = super().compile(model)
        return sess, ins, outs, [o in made for o in outs]

    def run(self, compiled, inputs):
        sess, ins, outs, narrowed = compiled
        got = super().run((sess, ins, outs), inputs)
        return [o.astype(np.int32) if n else o for o, n in zip(got, narrowed)]


class ReluAddRaises(OnnxRuntime):
    """onnxruntime that fails to compile wherever an Add consumes a Relu's output (a fusion
    gone wrong) and computes everything else right: an error that needs two operators,
    neither wrong on its own."""

    name = "reluaddraises"

    def compile(self, model):
        import onnx

        g = onnx.load_from_string(model.onnx).graph
        relu = {o for n in g.node if n.op_type == "Relu" for o in n.output}
        if any(n.op_type == "Add" and any(i in relu for i in n.input) for n in g.node):
            raise RuntimeError("Relu+Add fusion: operand layouts differ")
        return super().compile(model)


class MulOneAtFurtherBindings(OnnxRuntime):
    """onnxruntime that computes ``x * 1`` (a Mul by a constant of ones, what a ``mul_one``
    twin inserts) as ``x + 1``, but only when the inputs' shapes are not the graph's first
    binding: right on every static model and at a dynamic case's first binding, so only an
    equivalence oracle that also compares the twin at a further binding meets it."""

    name = "mul-one-at-further-bindings"

    def compile(self, model):
        from dlgate.backends.testing import _mul_one_broken

        broken = _mul_one_broken(model)
        first = [tuple(model.graph.tensors[t].shape) for t in model.graph.inputs]
        return super().compile(model), super().compile(broken) if broken is not model else None, first

    def run(self, compiled, inputs):
        right, wrong, first = compiled
        at_first = [tuple(np.shape(x)) for x in inputs] == first
        return super().run(right if at_first or wrong is None else wrong, inputs)


class Scheduling(Good):
    """Reports how it is scheduled: its own niceness, and its session's scheduler group's
    (Linux's ``/proc/self/autogroup``, ``/autogroup-N nice K``; -1 where there is none)."""

    name = "scheduling"

    def run(self, graph, inputs):
        try:
            with open("/proc/self/autogroup") as f:
                group = int(f.read().split()[-1])
        except (OSError, ValueError, IndexError):
            group = -1
        return [np.array([os.nice(0), group, os.getsid(0) == os.getpid()], dtype=np.int64)]


class SchedulingWarm(Scheduling):
    """The same, forked from PyTorch's warm server (:mod:`dlgate.exec.servers`)."""

    name = "scheduling-warm"
    package = "torch"


# -- compilers with planted faults, for the multi-failure and reduction-reuse tests -------------
# (here, not in their test modules: a worker loads its backend's module, and a test module
# imports the whole gate and pytest, a second or two for every worker start)
def abs_plus_one():
    """``offset_op_pass("relax.abs", 1.0)``: the second injected fault (loaded by name in TVM's workers)."""
    from dlgate.backends.testing import offset_op_pass

    return offset_op_pass("relax.abs", 1.0)


def _has(model: bytes, op_type: str) -> bool:
    import onnx

    return any(n.op_type == op_type for n in onnx.load_from_string(model).graph.node)


class RefusesAbs(TVM):
    """TVM that has no converter for Abs (refused as TVM refuses, naming it) and, where
    ``bug`` is set, gets every Sigmoid wrong."""

    name = "refuses-abs"
    bug = True
    message = "The following operators are not supported for frontend ONNX: Abs"

    def compile(self, model):
        if _has(model.onnx, "Abs"):
            raise NotImplementedError(self.message)
        if self.bug:
            self.options = dict(self.options, extra_passes=["dlgate.backends.testing:sigmoid_plus_half"])
        return super().compile(model)


class RefusesQuietly(RefusesAbs):
    """The same, with a refusal that names no operator (the reducer finds it)."""

    message = "this build has no converter for one of the model's operators"


class RefusesAbsHealthy(RefusesAbs):
    """A correct TVM that has no converter for Abs."""

    bug = False


class RefusesSymbolic(TVM):
    """TVM that cannot compile symbolic input dimensions, and says so (unsupported, for a
    dynamic model), and gets every Sigmoid wrong."""

    symbolic_refusals = TVM.symbolic_refusals + (r"symbolic dimensions are not handled",)

    def compile(self, model):
        import onnx

        if any(d.dim_param for i in onnx.load_from_string(model.onnx).graph.input
               for d in i.type.tensor_type.shape.dim):
            raise RuntimeError("symbolic dimensions are not handled by this build")
        self.options = dict(self.options, extra_passes=["dlgate.backends.testing:sigmoid_plus_half"])
        return super().compile(model)


class EnvTvmFaults(TVM):
    """TVM with the injected faults that ``FAKE_FAULTS`` names in the worker's environment
    (``sigmoid``, ``abs``): a head build and a base build that differ."""

    FAULTS = {"sigmoid": "dlgate.backends.testing:sigmoid_plus_half", "abs": "tests.fake_backends:abs_plus_one"}

    def compile(self, model):
        names = [f for f in os.environ.get("FAKE_FAULTS", "").split(",") if f]
        self.options = dict(self.options, extra_passes=[self.FAULTS[n] for n in names])
        return super().compile(model)


class TwoFaults(OnnxRuntime):
    """onnxruntime with two independent broken conversions: Softsign run as Softplus and
    Sin run as Cos (loaded by name in the workers)."""

    name = "two-faults"

    def compile(self, model):
        return super().compile(_misconverted(_misconverted(model, "Softsign", "Softplus"), "Sin", "Cos"))


class EnvSoftsign(OnnxRuntime):
    """onnxruntime with Softsign run as Softplus where the build's environment says so
    (``FAKE_WRONG=Softsign``): head and base builds of one compiler, for the sharing tests."""

    name = "env-softsign"

    def compile(self, model):
        if os.environ.get("FAKE_WRONG") == "Softsign":
            model = _misconverted(model, "Softsign", "Softplus")
        return super().compile(model)
