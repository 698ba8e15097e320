"""Every operator spec against ONNX's checker and reference evaluator, onnxruntime and
its own PyTorch implementation, on single-operator models over random shapes."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from onnx.reference import ReferenceEvaluator

from dlgate.graph.ir import domain_spans, random_values
from dlgate.materialize.torch_model import GraphModule
from dlgate.ops import schema
from dlgate.ops.registry import all_specs
from dlgate.probe.single import single_op_graph, single_op_model
from tests.helpers import U8S8_SATURATING, finite, mismatch, ort_run, saturating_cpu

SPECS = all_specs()
OPSETS = (13, 17, 21)
#: Defects of onnx.reference itself, where it cannot serve as the tie-breaker.
#: Keys are (operator, first input dtype or None for all).
REFERENCE_DEFECTS = {
    ("Mean", None): "onnx.reference's Mean adds in place into its first input, so it cannot broadcast it",
    ("InstanceNormalization", "float16"): "onnx.reference computes float16 variances in float16; "
                                          "onnxruntime (and our implementation) use float32 statistics",
}
#: Defects of onnxruntime where it fails a valid model it means to decline (an operator it
#: has no kernel for) with an error other than NOT_IMPLEMENTED. Keys are (operator, opset),
#: values (a fragment of its error, the reason).
ORT_DEFECTS = {
    ("DequantizeLinear", 28): (
        "InsertedPrecisionFreeCast",
        "onnxruntime (1.32) has no DequantizeLinear(28) kernel: with output_dtype float16 its "
        "InsertCastTransformer wraps the node in Casts to and from float32 that contradict output_dtype, "
        "and the session fails with a Type Error instead of NOT_IMPLEMENTED (as for a float32 output)"),
}
SEEDS = 4
#: Specs whose single-operator draws rarely fit: how many indexes to try instead. AffineGrid's
#: theta must be (N, 2, 3) (a 3-D grid is rank 5, beyond the probe's rank 4), which about one
#: index in eight draws.
MORE_SEEDS = {"AffineGrid": 16}


def _opsets(spec) -> list:
    """The common opsets the spec is defined at, its own first one when newer, and the newest."""
    import onnx.defs

    newest = onnx.defs.onnx_opset_version()
    return sorted({o for o in OPSETS + (max(spec.min_opset, OPSETS[-1]), newest) if spec.available(o)})


def _cases(spec):
    for opset in _opsets(spec):
        if not spec.available(opset):
            continue
        for sig in spec.dtypes:
            if schema.allowed(spec.onnx_op, sig, opset):
                yield opset, sig


def _scale(ref) -> float:
    """The absolute tolerance's scale, as the oracle's: the largest finite |value| of the
    output, at least 1 (a float16 result that cancels, a*(1/b) + 1/b near 0 out of terms near
    60, keeps an absolute error of its terms' rounding; compared element by element against
    its own small value it would fail)."""
    x = np.asarray(ref, dtype=np.float64) if np.issubdtype(np.asarray(ref).dtype, np.floating) else None
    if x is None or not x.size or not np.isfinite(x).any():
        return 1.0
    return max(1.0, float(np.abs(x[np.isfinite(x)]).max()))


def _numeric_inputs(g, rng, restricted: bool = False):
    """Plain random inputs; for an operator with a restricted domain, drawn inside it as
    the generator draws them (out of it the result may be undefined or, as LinearAttention's
    growing delta-rule state, too ill-conditioned to compare)."""
    spans = domain_spans(g, SPECS) if restricted else {}
    return [random_values(rng, g.tensors[t], spans.get(t)) for t in g.inputs]


@pytest.mark.parametrize("name", list(SPECS))
def test_spec(name):
    spec = SPECS[name]
    built = 0
    for opset, sig in _cases(spec):
        for k in range(MORE_SEEDS.get(name, SEEDS)):
            g = single_op_graph(name, sig, opset, k)
            if g is None:
                continue
            built += 1
            node = g.nodes[0]
            where = f"{name} {sig} opset {opset} attrs {node.attrs} inputs {[str(t) for t in g.input_types()]}"
            model = single_op_model(g, k)
            onnx.checker.check_model(onnx.load_from_string(model), full_check=True)
            rng = np.random.default_rng(k)
            feeds = _numeric_inputs(g, rng, spec.restricted)
            with torch.no_grad():
                ours = [o.numpy() for o in GraphModule(g)(*[torch.from_numpy(x.copy()) for x in feeds])]
            for t, y in zip(g.outputs, ours):
                want = g.tensors[t]
                assert (str(y.dtype), tuple(y.shape)) == (want.dtype, tuple(want.shape)), f"{where}: torch gives {y.dtype}{y.shape}, spec says {want}"
            if not finite(*feeds, *ours):
                continue
            defect = spec.reference_defect(node.attrs, g.input_types(), opset)
            if defect is None and (name, None) not in REFERENCE_DEFECTS and (name, sig[0]) not in REFERENCE_DEFECTS:
                try:
                    ref = ReferenceEvaluator(onnx.load_from_string(model)).run(None, {g.name(t): x for t, x in zip(g.inputs, feeds)})
                except TypeError as e:
                    # onnx.reference's element-wise kernels write into numpy scalars for
                    # rank-0 inputs ("return arrays must be of ArrayType"): its defect.
                    assert "ArrayType" in str(e.__cause__ or e) and any(x.ndim == 0 for x in feeds), f"{where}: {e}"
                    ref = ours
                for a, b in zip(ref, ours):
                    err = mismatch(np.asarray(a), b, _scale(b))
                    assert err is None, f"{where}: ONNX reference vs torch: {err}"
            try:
                got = ort_run(model, g, feeds)
            except Exception as e:  # an operator/dtype onnxruntime does not implement
                known = ORT_DEFECTS.get((name, opset))
                assert "NOT_IMPLEMENTED" in str(e) or "not supported" in str(e).lower() or \
                    (known is not None and known[0] in str(e)), f"{where}: {e}"
                continue
            for a, b in zip(got, ours):
                err = mismatch(a, b, _scale(b))
                if err is not None and name in U8S8_SATURATING and saturating_cpu():
                    continue  # onnxruntime's documented u8s8 saturation on this CPU (U8S8_SATURATING)
                assert err is None, f"{where}: onnxruntime vs torch: {err}"
    assert built, f"no single-operator model of {name} could be built"
