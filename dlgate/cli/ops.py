"""``dlgate ops``: the operator specs, the ONNX operator types they cover, and the gaps."""
from __future__ import annotations

from dlgate import tables as T


def add_parser(sub) -> None:
    o = sub.add_parser("ops", help="list the operator specs and the ONNX operator types they cover")
    o.add_argument("--gaps", action="store_true",
                   help="list what is not generated, with the reason: standard ONNX operators without a spec, "
                        "and the parts of spec'd operators their specs leave out")


def command(args) -> int:
    import onnx  # local: imports torch; off the CLI start-up

    from dlgate.ops import coverage, dtype_gaps
    from dlgate.ops.registry import all_specs

    specs = list(all_specs().values())
    cov = coverage.covered(specs)
    std = coverage.standard_ops()
    n_std = sum(op in cov for op in std)
    if args.gaps:
        missing = T.table("operator", "why it has no spec")
        for op, why in coverage.missing(specs):
            T.row(missing, op, why or "(no reason recorded)")
        gaps = coverage.spec_gaps(specs)
        parts = T.table("spec", "part not generated", "why")
        for name, what, why in gaps:
            T.row(parts, name, what, why)
        types = dtype_gaps.listed()
        dts = T.table("schema type not drawn", "why")
        for what, why in types:
            T.row(dts, what, why)
        T.show(f"standard ONNX operators without a spec ({len(std) - n_std} of {len(std)}, onnx {onnx.__version__}):",
               missing, f"parts of spec'd operators not generated ({len(gaps)}):", parts,
               f"types the ONNX schema allows that no spec draws ({len(types)}; derived from the schema, "
               "opsets 13 and up):", dts)
        return 0
    t = T.table("spec", "family", "opset", "dtypes", "ONNX operators")
    for name, spec in all_specs().items():
        dts = sorted({d for s in spec.dtypes for d in s})
        T.row(t, name, spec.family, f">={spec.min_opset}", ",".join(dts), ",".join(dict.fromkeys((spec.onnx_op, *spec.onnx_ops))))
    T.show(t, f"{len(specs)} specs covering {len(cov)} ONNX operator types, {n_std} of the {len(std)} standard "
              f"operators onnx {onnx.__version__} defines (`dlgate ops --gaps` lists the rest and why)")
    return 0
