"""Dtype gaps derived from the ONNX schema (``dlgate.ops.dtype_gaps``): every type a spec'd
operator's schema allows (among dlgate's dtypes) is drawn by a spec or explained; the types
widened to close gaps generate and agree with onnxruntime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch

from dlgate.graph.ir import random_values
from dlgate.materialize.torch_model import GraphModule
from dlgate.ops import dtype_gaps
from dlgate.ops.registry import all_specs
from dlgate.probe.single import single_op_graph, single_op_model
from tests.helpers import mismatch, ort_run


def test_every_derived_gap_has_a_reason():
    missing = [g.what for g in dtype_gaps.unexplained()]
    assert missing == [], "dtype gaps nobody explained (add them to dtype_gaps.REASONS or close them):\n" + \
        "\n".join(missing)


def test_every_reason_still_names_a_gap():
    """A reason whose gap was closed is stale: it would hide the gap coming back unexplained."""
    import re

    used = set()
    for g in dtype_gaps.derive():
        wild = re.sub(r"tensor\(\w+\)", "tensor(*)", g.type)
        used.update(k for k in ((g.op, g.param, g.type), (g.op, g.param, wild), (g.op, g.param, "*"))
                    if k in dtype_gaps.REASONS)
    assert sorted(set(dtype_gaps.REASONS) - used) == []


def test_derivation_finds_a_narrowed_spec_and_reads_constant_inputs():
    """Abs without uint8 is a gap (read from the signatures); Pad's int64 pads constant is not
    (read from instances), while its int32 axes are."""
    class AbsNoUint8(type(all_specs()["Abs"])):
        types = ("float32", "float64", "float16", "int32", "int64", "int8")
        dtypes = tuple((t,) for t in types)

    got = dtype_gaps._op_gaps("Abs", [AbsNoUint8()], 13, 14)
    assert [(g.param, g.type, g.opsets) for g in got] == [("T", "tensor(uint8)", (13, 14))]
    assert dtype_gaps._op_gaps("Abs", [all_specs()["Abs"]], 13, 14) == []
    pad = dtype_gaps._op_gaps("Pad", [all_specs()["Pad"]], 18, 18)
    assert [(g.formals, g.type) for g in pad] == [(("axes",), "tensor(int32)")]


def test_unsupported_element_types_are_one_global_gap_each():
    rows = dtype_gaps.listed()
    for name in ("bfloat16", "float8e4m3fn", "int4", "string", "complex64", "uint16"):
        assert dtype_gaps.unsupported_reason(name), name
        assert sum(name in what for what, _ in rows if what.startswith("element types")) == 1
    assert dtype_gaps.element("seq(tensor(float16))") == "float16"
    assert dtype_gaps.element("optional(seq(tensor(int8)))") == "int8"


def test_ops_gaps_lists_the_derived_gaps(capsys):
    from dlgate.cli import main

    assert main(["ops", "--gaps"]) == 0
    out = capsys.readouterr().out
    assert "types the ONNX schema allows that no spec draws" in out
    assert "element types bfloat16" in out and "Pad axes (Tind) tensor(int32), opsets 18-28" in out
    assert "(no reason recorded)" not in out


#: Gaps closed by widening a spec's dtypes: (spec, dtype, opset).
CLOSED = [("Abs", "uint8", 13), ("Abs", "uint8", 21), ("Sign", "uint8", 13), ("Sign", "uint8", 21),
          ("Celu", "float64", 28), ("Celu", "float16", 28)]


@pytest.mark.parametrize("name,dtype,opset", CLOSED)
def test_closed_gap_generates_and_judges_on_onnxruntime(name, dtype, opset):
    assert (dtype,) in all_specs()[name].dtypes
    compared = 0
    for k in range(4):
        g = single_op_graph(name, (dtype,), opset, k)
        assert g is not None, f"{name} {dtype} at opset {opset} does not generate"
        raw = single_op_model(g, k)
        onnx.checker.check_model(onnx.load_from_string(raw), full_check=True)
        feeds = [random_values(np.random.default_rng(k), g.tensors[t]) for t in g.inputs]
        with torch.no_grad():
            ours = [o.numpy() for o in GraphModule(g)(*[torch.from_numpy(x.copy()) for x in feeds])]
        for a, b in zip(ort_run(raw, g, feeds), ours):
            assert mismatch(np.asarray(a), b, max(1.0, float(np.abs(b.astype(np.float64)).max(initial=0)))) is None
            compared += 1
    assert compared >= 4


def test_closed_gaps_are_gone_and_unsigned_values_are_defined():
    whats = {(g.op, g.type) for g in dtype_gaps.derive()}
    assert not {("Abs", "tensor(uint8)"), ("Sign", "tensor(uint8)"), ("Celu", "tensor(double)")} & whats
    # the reference computes them as ONNX defines: |x| = x and sign in {0, 1} for uint8
    x = torch.tensor([0, 1, 200, 255], dtype=torch.uint8)
    assert torch.equal(all_specs()["Abs"].torch({}, x), x)
    assert all_specs()["Sign"].torch({}, x).tolist() == [0, 1, 1, 1]
