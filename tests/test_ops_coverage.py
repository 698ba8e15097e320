"""The operator coverage `dlgate ops` reports: every standard ONNX operator is covered by a
spec or listed as not generated with its reason, and every spec's gaps say why."""
from __future__ import annotations

from dlgate.cli import main
from dlgate.ops import coverage
from dlgate.ops.registry import all_specs


def test_every_standard_operator_is_covered_or_excused():
    specs = list(all_specs().values())
    cov = coverage.covered(specs)
    unexplained = [op for op, why in coverage.missing(specs) if not why]
    assert unexplained == [], f"standard operators with neither a spec nor a recorded reason: {unexplained}"
    assert len([op for op in coverage.standard_ops() if op in cov]) >= 175
    # an excuse for an operator that is in fact covered is stale
    assert not set(coverage.NOT_GENERATED) & set(cov)


def test_idiom_specs_name_real_operator_types():
    std = set(coverage.standard_ops())
    for spec in all_specs().values():
        for op in (spec.onnx_op, *spec.onnx_ops):
            assert op in std, f"{spec.name} claims to emit {op!r}, not a standard ONNX operator"


def test_spec_gaps_are_what_and_why_pairs():
    for name, what, why in coverage.spec_gaps(all_specs().values()):
        assert isinstance(what, str) and what and isinstance(why, str) and len(why) > 10, (name, what, why)


def test_ops_lists_the_count_and_gaps_lists_the_reasons(capsys):
    assert main(["ops"]) == 0
    out = capsys.readouterr().out
    n_types = len(coverage.covered(all_specs().values()))
    assert f"{len(all_specs())} specs covering {n_types} ONNX operator types" in out
    assert main(["ops", "--gaps"]) == 0
    out = capsys.readouterr().out
    assert "standard ONNX operators without a spec" in out and "Bernoulli" in out and "random output" in out
    assert "(no reason recorded)" not in out


def test_every_spec_appears_in_the_first_500_models_of_a_batch():
    """The default generator (every spec, opsets 13-28, 1-20 operators, coverage-guided as
    campaigns are) draws every spec within the first 500 models (all by model 273 today), and
    so within any weekly batch of 2,000, with every covered ONNX operator type; the
    degenerate-only specs (Concat of one input) never: the ordinary stream does not hold them."""
    from dlgate.case import GuidedBatch
    from dlgate.coverage.state import CoverageState
    from dlgate.graph.generator import GenConfig, Generator

    gen = Generator(GenConfig(min_nodes=1, max_nodes=20))
    batch = GuidedBatch(gen, "coverage", "c", CoverageState())
    seen = set()
    for i in range(500):
        seen.update(batch.case(i)[0].graph.op_names())
    specs = all_specs()
    only = {n for n, s in specs.items() if s.degenerate_only}
    assert only == {"Concat1", "Split1", "EinsumEmpty"}
    assert not only & {s.name for s in gen.specs}
    assert sorted(set(specs) - only - seen) == [] and not only & seen
    assert len(coverage.covered(specs[n] for n in seen)) >= 175
