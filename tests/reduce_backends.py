"""Backends with planted faults for the cause-reduction tests (``tests/test_reduce_cause.py``),
loaded by name in worker processes: here rather than in the test module, which imports the
whole gate (PyTorch included) into every worker that loads its backend."""
from __future__ import annotations

from dlgate.backends.base import Backend
from dlgate.ops.registry import get


class _Ort(Backend):
    """onnxruntime, unoptimized, with ``fault(graph)`` raising at compile time and
    ``wrong(graph)`` making every float output off by one."""

    name = "ortlike"

    def version(self):
        return "1"

    def fault(self, graph):
        pass

    def wrong(self, graph) -> bool:
        return False

    def compile(self, model):
        import onnxruntime as ort

        self.fault(model.graph)
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        return ort.InferenceSession(model.onnx, so, providers=["CPUExecutionProvider"]), self.wrong(model.graph)

    def run(self, compiled, inputs):
        sess, wrong = compiled
        outs = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs)})
        return [o + 1 if wrong and o.dtype.kind == "f" else o for o in outs]


class ConstFoldMod(_Ort):
    """Fails to constant-fold a Mod whose operands are both constants (directly or through
    operators on constants only): reproduced by a Mod of two constants, never by a Mod of a
    graph input."""

    name = "constfoldmod"

    def fault(self, graph):
        const = set(graph.consts)
        for n in graph.nodes:
            if all(t in const for t in n.inputs):
                const.update(n.outputs)
                if n.op == "Mod":
                    raise RuntimeError("ConstantFolding: fmod of two constants is not implemented")


class NamesFirstOp(_Ort):
    """Fails on any model holding a Mul, with a message naming the model's *first* operator
    and its dtype, as dtype-propagation errors do: removing an unrelated first operator
    changes the exact signature but not the cluster."""

    name = "namesfirstop"

    def fault(self, graph):
        if any(n.op == "Mul" for n in graph.nodes):
            first = graph.nodes[0]
            raise RuntimeError(f"In {get(first.op).onnx_op}: Binary operators must have the same datatype, "
                               f"got {graph.tensors[first.inputs[0]].dtype} and float16")


class PrintsConstants(_Ort):
    """Fails on any Mul, printing its first operand as TVM does: inline when a constant."""

    name = "printsconstants"

    def fault(self, graph):
        for n in graph.nodes:
            if n.op == "Mul":
                x = "R.const(1.5, 'float32')" if n.inputs[0] in graph.consts else "lv1"
                raise RuntimeError(f"Binary operators must have the same datatype. However, R.multiply({x}, lv2)")


class DtypeLeak(_Ort):
    """An Abs whose result a Reciprocal reads, through any operators between, fails as TVM's
    dtype propagation does (Abs "makes" the wrong dtype; Reciprocal's divide breaks on it)."""

    name = "dtypeleak"

    def fault(self, graph):
        leaked = set()
        for n in graph.nodes:
            if n.op == "Reciprocal" and leaked & set(n.inputs):
                raise TypeError("Binary operators must have the same datatype for both operands. However, "
                                "R.divide(R.const(1.0, \"float16\"), lv3) uses datatype T.float16 on the LHS "
                                "and datatype T.float32 on the RHS")
            if n.op == "Abs" or leaked & set(n.inputs):
                leaked.update(n.outputs)


class PositiveSlope(_Ort):
    """Wrong on a HardSigmoid with a positive ``alpha``, whatever its ``beta``."""

    name = "positiveslope"

    def wrong(self, graph):
        return any(n.op == "HardSigmoid" and n.attrs["alpha"] > 0 for n in graph.nodes)


class NoLayerNorm(_Ort):
    """Fails on every LayerNormalization, whatever its attributes."""

    name = "nolayernorm"

    def fault(self, graph):
        if any(n.op == "LayerNormalization" for n in graph.nodes):
            raise RuntimeError("LayerNormalization is not lowered")
