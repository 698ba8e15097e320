"""Dtype gaps derived from the ONNX schema: the types an operator's schema allows that no spec
of it draws.

A change-aware batch can only aim at a dtype the generator draws. For every ONNX operator a
spec emits as its ``onnx_op``, at every opset from 13 (``OLDEST_OPSET``) to the newest dlgate
generates, each type constraint's allowed types (restricted to the dtypes dlgate has at all)
are compared with what the operator's specs draw for it:

* a constraint bound by a formal input that a position of a spec's signatures stands for
  (``schema.allowed``'s mapping) is read statically from the signatures;
* any other one (an output-only constraint such as Cast's ``T2``, a constant input the
  lowering makes such as Pad's ``axes``, an optional input) is read from instances: one-
  operator models drawn as the generator draws them (``probe.single``), shape-inferred, until
  every allowed type has been seen or ``DRAWS`` draws per specification are spent.

Every gap found must be explained in ``REASONS`` (``dlgate ops --gaps`` lists it with its
reason; a test fails on one without). Types dlgate has no dtype for at all are one global
gap each (``UNSUPPORTED``), listed once.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from dlgate import dtypes as dt
from dlgate.ops import schema as sch
from dlgate.ops.registry import all_specs

#: ONNX's element type names for dlgate's dtypes (as its type strings spell them).
ONNX_NAME = {dt.FLOAT32: "float", dt.FLOAT64: "double", dt.FLOAT16: "float16", dt.INT8: "int8",
             dt.UINT8: "uint8", dt.INT32: "int32", dt.INT64: "int64", dt.BOOL: "bool"}
_FROM_NAME = {v: k for k, v in ONNX_NAME.items()}

#: Element types ONNX defines that dlgate has no dtype for: one global gap each.
UNSUPPORTED = {
    "bfloat16": "not among dlgate's dtypes: its 8-bit mantissa would need its own tolerances, value ranges and "
                "rounding model in the oracle, which dlgate does not have",
    "float8e4m3fn|float8e4m3fnuz|float8e5m2|float8e5m2fnuz|float8e8m0|float6e2m3|float6e3m2|float4e2m1":
        "8-, 6- and 4-bit floats: no PyTorch CPU arithmetic to compute a reference in, and no NumPy dtype to "
        "hold inputs",
    "int4|uint4|int2|uint2": "sub-byte integers: no NumPy or PyTorch dtype to hold inputs and results (the "
                             "4-bit weights of the QDQ and MatMulNBits motifs are written as INT4/UINT4 "
                             "initializers from int8/uint8 values, see dlgate.ops.motif.Const)",
    "int16|uint16|uint32|uint64": "integer widths outside dlgate's dtypes (int8, uint8, int32, int64); PyTorch "
                                  "lacks most CPU kernels for uint16, uint32 and uint64",
    "string": "string tensors: dlgate generates numeric and boolean tensors only",
    "complex64|complex128": "complex tensors: dlgate's value generation, oracle and tolerances are real-valued",
}

#: For a constraint the signatures do not decide: a specification is drawn (per group of
#: opsets) until ``PATIENCE`` draws in a row show no type not seen before, at most ``DRAWS``.
PATIENCE = 96
DRAWS = 480


@dataclass(frozen=True)
class DtypeGap:
    op: str          # the ONNX operator type
    param: str       # the type constraint (``T``, ``Tind``...)
    formals: tuple   # the formal inputs/outputs it constrains
    type: str        # the ONNX type string not drawn: ``tensor(int32)``, ``seq(tensor(float16))``
    opsets: tuple    # (first, last) opset where it is missing
    specs: tuple     # the specs that emit the operator

    @property
    def what(self) -> str:
        lo, hi = self.opsets
        span = f"opset {lo}" if lo == hi else f"opsets {lo}-{hi}"
        return f"{self.op} {'/'.join(self.formals)} ({self.param}) {self.type}, {span}"


def element(type_str: str) -> str | None:
    """The element type name inside a type string (``seq(tensor(float))`` -> ``float``), or
    None for a map."""
    m = re.fullmatch(r"(?:optional\()?(?:seq\()?tensor\((\w+)\)\)?\)?", type_str)
    return m.group(1) if m else None


def unsupported_reason(name: str) -> str | None:
    for names, why in UNSUPPORTED.items():
        if name in names.split("|"):
            return why
    return None


def _type_str(tp) -> str | None:
    """An ``onnx.TypeProto`` as a schema type string (only dlgate's element types)."""
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        name = dt.FROM_ONNX.get(tp.tensor_type.elem_type)
        return None if name is None else f"tensor({ONNX_NAME[name]})"
    if which == "sequence_type":
        inner = _type_str(tp.sequence_type.elem_type)
        return None if inner is None else f"seq({inner})"
    if which == "optional_type":
        inner = _type_str(tp.optional_type.elem_type)
        return None if inner is None else f"optional({inner})"
    return None


def _ours(allowed) -> set:
    """The allowed type strings whose element type is one of dlgate's."""
    return {t for t in allowed if element(t) in _FROM_NAME}


def _groups(op: str, specs: list, lo: int, hi: int) -> list:
    """(schema, opsets) per schema version of ``op`` within [lo, hi] where a spec is available."""
    out: dict = {}
    for o in range(lo, hi + 1):
        s = sch._schema(op, o)
        if s is None or s.deprecated or not any(sp.available(o) for sp in specs):
            continue
        out.setdefault(s.since_version, (s, []))[1].append(o)
    return list(out.values())


def _static(op: str, schema, specs: list, opsets: list) -> dict:
    """Constraint -> the type strings the signatures draw for it, for the constraints a
    signature position stands for."""
    formal = list(schema.inputs)
    positions = sch._formal_positions().get(op)
    if positions == ():
        return {}
    if positions is not None:
        formal = [formal[k] for k in positions]
    cons = {c.type_param_str for c in schema.type_constraints}
    out: dict = {}
    for spec in specs:
        for o in opsets:
            if not spec.available(o):
                continue
            for sig in spec.sigs():
                if not sch.allowed(op, sig, o):
                    continue
                for i, t in enumerate(sig):
                    if not formal:
                        break
                    f = formal[min(i, len(formal) - 1)]
                    if f.type_str in cons:
                        out.setdefault(f.type_str, set()).add(f"tensor({ONNX_NAME[t]})")
    return out


def _drawn_types(op: str, schema, model) -> dict:
    """Constraint -> type strings at ``op``'s nodes of ``model`` (shape-inferred)."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - a model ONNX cannot infer tells nothing here
        return {}
    g = inferred.graph
    types = {vi.name: _type_str(vi.type) for vi in (*g.input, *g.output, *g.value_info)}
    for init in g.initializer:
        name = dt.FROM_ONNX.get(init.data_type)
        types[init.name] = None if name is None else f"tensor({ONNX_NAME[name]})"
    cons = {c.type_param_str for c in schema.type_constraints}
    out: dict = {}

    def note(formals, names):
        if not formals:
            return
        for k, n in enumerate(names):
            f = formals[min(k, len(formals) - 1)]
            if n and f.type_str in cons and types.get(n):
                out.setdefault(f.type_str, set()).add(types[n])

    for node in g.node:
        if node.op_type == op and node.domain in ("", "ai.onnx"):
            note(list(schema.inputs), node.input)
            note(list(schema.outputs), node.output)
    return out


def _instances(op: str, schema, specs: list, opsets: list, want: dict) -> dict:
    """Constraint -> type strings seen on one-operator models of the specs, drawn until
    ``want`` (constraint -> allowed type strings) is met or ``DRAWS`` per spec are spent."""
    import onnx

    # local: the probe sits above the catalogue (it draws through the generator); only deriving
    # the gaps (``dlgate ops --gaps``, the tests) needs it
    from dlgate.probe.single import single_op_graph, single_op_model

    seen: dict = {p: set() for p in want}
    for spec in specs:
        cases = [(o, sig) for o in opsets if spec.available(o) for sig in spec.sigs() if sch.allowed(op, sig, o)]
        if not cases:
            continue
        quiet = 0
        for k in range(DRAWS):
            if all(want[p] <= seen[p] for p in want) or quiet >= PATIENCE:
                break
            quiet += 1
            o, sig = cases[k % len(cases)]
            g = single_op_graph(spec.name, sig, o, k // len(cases), tries=6)
            if g is None:
                continue
            got = _drawn_types(op, schema, onnx.load_from_string(single_op_model(g, k)))
            for p in want:
                new = got.get(p, set()) - seen[p]
                if new:
                    seen[p] |= new
                    quiet = 0
    return seen


def _by_op(specs) -> dict:
    out: dict = {}
    for spec in specs:
        out.setdefault(spec.onnx_op, []).append(spec)
    return out


def derive(specs=None) -> tuple:
    """Every dtype gap of every operator ``specs`` (default: the registry's) emit as their
    ``onnx_op`` (``DtypeGap``), in registry order, the opsets where one and the same type
    is missing merged into ranges. Deterministic: the instances come from fixed seeds."""
    return _derive(tuple(all_specs().values()) if specs is None else tuple(specs))


@lru_cache(maxsize=4)
def _derive(specs: tuple) -> tuple:
    from dlgate.graph.config import NEWEST_OPSET, OLDEST_OPSET  # local: the generator's package sits above the catalogue

    found: list = []
    for op, group in _by_op(specs).items():
        found.extend(_op_gaps(op, group, OLDEST_OPSET, NEWEST_OPSET))
    return tuple(found)


def _op_gaps(op: str, specs: list, oldest: int, newest: int) -> list:
    """``op``'s gaps over opsets [oldest, newest], given the specs that emit it."""
    found: list = []
    missing: dict = {}  # (param, type) -> [opsets]
    formals_of: dict = {}
    for schema, opsets in _groups(op, specs, oldest, newest):
        allowed = {c.type_param_str: _ours(c.allowed_type_strs) for c in schema.type_constraints}
        for p in allowed:
            formals_of.setdefault(p, tuple(dict.fromkeys(
                f.name for f in (*schema.inputs, *schema.outputs) if f.type_str == p)))
        static = _static(op, schema, specs, opsets)
        rest = {p: ts for p, ts in allowed.items() if ts and p not in static}
        drawn = dict(static)
        if rest:
            drawn.update(_instances(op, schema, specs, opsets, rest))
        for p, ts in allowed.items():
            for t in sorted(ts - drawn.get(p, set())):
                missing.setdefault((p, t), []).extend(opsets)
    names = tuple(s.name for s in specs)
    for (p, t), opsets in missing.items():
        for lo, hi in _ranges(sorted(opsets)):
            found.append(DtypeGap(op, p, formals_of[p], t, (lo, hi), names))
    return found


def _ranges(xs: list) -> list:
    out: list = []
    for x in xs:
        if out and x == out[-1][1] + 1:
            out[-1][1] = x
        else:
            out.append([x, x])
    return [tuple(r) for r in out]


def reason(gap: DtypeGap) -> str | None:
    """Why ``gap`` is not generated, from ``REASONS`` (keyed by operator, constraint and
    type string, or the element type name alone for every container of it)."""
    wild = re.sub(r"tensor\(\w+\)", "tensor(*)", gap.type)
    for key in ((gap.op, gap.param, gap.type), (gap.op, gap.param, wild), (gap.op, gap.param, "*")):
        if key in REASONS:
            return REASONS[key]
    return None


def unexplained() -> list:
    return [g for g in derive() if reason(g) is None]


def listed() -> list:
    """(what, why) rows for ``dlgate ops --gaps``: the global unsupported types once, then
    every derived gap."""
    rows = [(f"element types {names.replace('|', ', ')}", why) for names, why in UNSUPPORTED.items()]
    return rows + [(g.what, reason(g) or "(no reason recorded)") for g in derive()]


_SEQ = ("sequence-typed values: dlgate's sequences live inside one spec's idiom (built, edited and read back "
        "within it), so no spec hands a sequence across this operator's boundary")
_OPT = ("optional-typed values: dlgate's optionals live inside the OptionalCoalesce idiom only, so no spec hands "
        "an optional across this operator's boundary")
_ORT_NI = "onnxruntime 1.32 has no CPU kernel for it (\"NOT_IMPLEMENTED: Could not find an implementation for {}\")"
_INT32_IDX = ("int32 {what}: the lowering always writes them as an int64 constant; ONNX and onnxruntime 1.32 accept "
              "int32 too (it runs), so this is an open gap, not a refusal: the index-type conversion "
              "of importers is not yet drawn")
_INT_POW = ("integer powers overflow for most drawn bases and exponents, and ONNX leaves negative integer exponents "
            "undefined; Pow is drawn on floats with a positive base")
_ARG_TIES = ("small random integers tie constantly, and backends do not all honour ONNX's first/last-index rule (see "
             "reduce.Arg): integer cases would mostly test tie-breaking")
_INT_EINSUM = ("integer Einsum is not among the spec's signatures (floats only); onnxruntime 1.32 runs {}: open gap")
_ONE_HOT = ("the dtype combinations are those onnxruntime implements (index.OneHot.COMBOS); others fail with "
            "\"NOT_IMPLEMENTED: {} OneHot(11)\"")
_NO_DOUBLE = ("onnxruntime 1.32 fails at run time (\"{} operator does not support double yet\") instead of declining "
              "it, which would read as a finding")
_WINDOW = ("float64: the function body computes in float32 and casts, and runtimes' float32 cos differ by more than "
           "the float64 tolerance; integers: casts of values in [0, 1] jump at rounding-level differences (see "
           "signal._Window)")


def _containers(op: str) -> dict:
    """``op``'s sequence- and optional-typed ``V``: values no spec hands across an operator."""
    return {(op, "V", "seq(tensor(*))"): _SEQ, (op, "V", "optional(tensor(*))"): _OPT,
            (op, "V", "optional(seq(tensor(*)))"): _OPT}


#: Why each derived gap is not generated: (operator, constraint, type string, or the type
#: string with its element spelled ``*`` (``seq(tensor(*))``), or "*") -> reason. A test
#: checks that every derived gap has one and that every entry still names a derived gap.
REASONS: dict = {
    ("Pow", "T", "tensor(int32)"): _INT_POW,
    ("Pow", "T", "tensor(int64)"): _INT_POW,
    ("Pow", "T1", "*"): "integer exponents: the spec draws the exponent with the base's float type (a mixed "
                        "float-integer signature is not one of its signatures); open gap",
    ("Equal", "T", "*"): "equality of computed floats flips between compilers by one ulp (fused or reordered "
                         "arithmetic) and propagates as a discrete difference (see logic.Equal): false alarms",
    **_containers("Identity"),
    ("BitCast", "T1", "tensor(float16)"): "float16 has no same-width partner among dlgate's dtypes (no int16/uint16): "
                                          "ONNX's checker refuses a bit-width change (\"BitCast requires input and output "
                                          "types to have the same bit-width\")",
    ("BitCast", "T2", "tensor(float16)"): "float16 has no same-width partner among dlgate's dtypes (no int16/uint16), "
                                          "and float16 -> float16 alone would only test a copy",
    ("ReduceMean", "T", "*"): "ONNX leaves the rounding of an integer mean to the backend (truncation, floor or "
                              "round differ between onnxruntime, TVM and PyTorch): no reference can judge it",
    ("ReduceProd", "T", "*"): "integer products of the drawn values overflow after a few elements (undefined "
                              "for signed types), so nearly every case would be excluded as undefined",
    ("ReduceL2", "T", "*"): "an integer L2 norm is sqrt(sum x^2) rounded to an integer, and ONNX does not say how "
                            "(truncation or rounding): no reference can judge it",
    ("ReduceLogSumExp", "T", "*"): "log(sum(exp(x))) of integers rounded to an integer: ONNX does not say how the "
                                   "fractional result is rounded",
    ("ReduceLogSum", "T", "*"): "log(sum(x)) of integers rounded to an integer: ONNX does not say how the fractional "
                                "result is rounded, and sums <= 0 are undefined",
    ("ReduceSumSquare", "T", "tensor(int32)"): "onnx.reference's ReduceSumSquare promotes int32 to int64 (np.sum), "
                                               "so the tie-breaker returns the wrong type (see reduce.ReduceSumSquare)",
    ("ArgMax", "T", "*"): _ARG_TIES,
    ("ArgMin", "T", "*"): _ARG_TIES,
    ("Gemm", "T", "*"): _ORT_NI.format("Gemm(13)") + "; integer matrix products are MatMul's (generated)",
    ("Einsum", "T", "tensor(int8)"): _ORT_NI.format("Einsum(12)"),
    ("Einsum", "T", "tensor(uint8)"): _ORT_NI.format("Einsum(12)"),
    ("Einsum", "T", "tensor(int32)"): _INT_EINSUM.format("int32"),
    ("Einsum", "T", "tensor(int64)"): _INT_EINSUM.format("int64"),
    ("LayerNormalization", "U", "*"): "the optional Mean and InvStdDev outputs are not generated (the specs emit "
                                      "Y only; a spec's outputs are fixed): open gap",
    ("MeanVarianceNormalization", "T", "*"): "the function body computes E[X^2] - E[X]^2 (one pass), which cancels "
                                             "in float16 and differs from onnxruntime's two-pass variance by more "
                                             "than the float64 tolerance (see norm.MeanVarianceNormalization)",
    ("Pad", "Tind", "tensor(int32)"): _INT32_IDX.format(what="axes"),
    ("GatherElements", "Tind", "tensor(int32)"): _INT32_IDX.format(what="indices"),
    ("ScatterElements", "Tind", "tensor(int32)"): _INT32_IDX.format(what="indices"),
    ("SequenceInsert", "I", "tensor(int32)"): _INT32_IDX.format(what="positions"),
    ("CenterCropPad", "Tind", "tensor(int32)"): "ONNX's function body takes Max(Shape(input), shape), int64 against "
                                                "int32: onnxruntime refuses the model (\"Type parameter (T) of Optype "
                                                "(Max) bound to different types\")",
    ("OneHot", "T1", "*"): _ONE_HOT.format("Failed to find kernel for"),
    ("OneHot", "T2", "*"): _ONE_HOT.format("Failed to find kernel for"),
    ("OneHot", "T3", "*"): _ONE_HOT.format("Could not find an implementation for"),
    ("Resize", "T1", "tensor(bool)"): _ORT_NI.format("Resize(13)"),
    ("Resize", "T2", "*"): "roi is read only by coordinate_transformation_mode tf_crop_and_resize, which the spec "
                           "does not generate (index.Resize): roi is always left out",
    ("Unique", "T", "*"): "Unique is drawn on labels computed from a float input so its output shape is known; "
                          "integer inputs tie in the arg-max, and onnxruntime lacks int32/uint8/bool "
                          "(\"NOT_IMPLEMENTED: Could not find an implementation for Unique(11)\")",
    ("Attention", "U", "*"): "integer attn_mask types: ONNX's text defines only boolean and same-type float masks",
    ("QuantizeLinear", "T2", "tensor(int32)"): "int32 outputs (opset 23+): onnxruntime 1.32 refuses the model "
                                               "(\"Type 'tensor(int32)' of input parameter (y_zero_point) of "
                                               "operator (QuantizeLinear) ... is invalid\")",
    ("LSTM", "T", "tensor(double)"): _NO_DOUBLE.format("LSTM"),
    ("GRU", "T", "tensor(double)"): _NO_DOUBLE.format("GRU"),
    **_containers("If"),
    **_containers("Loop"),
    ("SequenceMap", "V", "seq(tensor(*))"): "additional inputs are tensors only: a sequence among them would need "
                                            "a second sequence built inside the same idiom; open gap",
    ("Optional", "V", "seq(tensor(*))"): "OptionalCoalesce wraps a tensor (the exporters' None-able tensor); an "
                                         "optional sequence has no tensor to coalesce with",
    ("Optional", "O", "optional(seq(tensor(*)))"): "OptionalCoalesce wraps a tensor (the exporters' None-able "
                                                   "tensor); an optional sequence has no tensor to coalesce with",
    ("OptionalGetElement", "O", "*"): "the OptionalGetElement spec reads a plain tensor (opset 18 allows it); "
                                      "optionals and sequences are OptionalCoalesce's: " + _OPT,
    ("OptionalGetElement", "V", "seq(tensor(*))"): _SEQ,
    ("GridSample", "T1", "*"): _ORT_NI.format("GridSample(16)") + " for non-float inputs",
    ("Col2Im", "T", "*"): _ORT_NI.format("Col2Im(18)") + " for non-float inputs",
    ("HannWindow", "T2", "*"): _WINDOW,
    ("HammingWindow", "T2", "*"): _WINDOW,
    ("BlackmanWindow", "T2", "*"): _WINDOW,
    ("MelWeightMatrix", "T2", "*"): "onnxruntime 1.32 has no float64 kernel (\"NOT_IMPLEMENTED\") and fails on "
                                    "float16 edges; onnx.reference computes the bins in the edges' precision",
    ("MelWeightMatrix", "T3", "tensor(float16)"): _ORT_NI.format("MelWeightMatrix(17)") + " with a float16 output",
    ("MelWeightMatrix", "T3", "tensor(*)"): "integer outputs: casts of the fractional filter weights to an integer "
                                            "jump at rounding-level differences",
}
