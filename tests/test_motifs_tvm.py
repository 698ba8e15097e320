"""TVM motifs against TVM itself: a single-motif model drawn inside the rewrite's
preconditions makes TVM's default llvm pipeline name one of the motif's ``expects`` kinds;
one drawn with a condition broken does not (every TVM motif's conditions are the
rewrite's own decision: a reduction on the path, a live operand, a spelling the importer
writes as one operator)."""
from __future__ import annotations

import collections
import functools

import pytest

from dlgate.backends import registry
from dlgate.backends.base import Model
from dlgate.graph.generator import GenConfig, GenerationError, Generator
from dlgate.materialize.onnx_model import to_onnx
from dlgate.ops.base import Limits
from dlgate.ops.motif import Motif
from dlgate.ops.registry import all_specs

MOTIFS = [name for name, s in all_specs().items() if isinstance(s, Motif) and s.optimizer == "tvm"]
SMALL = Limits(max_rank=4, max_dim=8, max_elems=512)
FIRES = 4  # instances drawn inside the preconditions, per motif
DECLINES = 2  # instances per broken condition
SEEDS = 120  # seeds tried to find them


@pytest.fixture(scope="module")
def tvm():
    return registry.load("tvm")(opt_level="default")


@functools.lru_cache(maxsize=None)
def _instances(name: str) -> dict:
    """intent ("fires", "declines:<condition>") -> the first few single-motif graphs."""
    spec = all_specs()[name]
    want = {"fires": FIRES, **{f"declines:{c}": DECLINES for c in spec.conditions}}
    gen = Generator(GenConfig(ops=(name,), min_nodes=1, max_nodes=1, dynamic_share=0, limits=SMALL))
    got: dict = collections.defaultdict(list)
    for seed in range(SEEDS):
        try:
            g = gen.generate(seed)
        except GenerationError:
            continue
        intent = spec.intent(g.nodes[0].attrs)
        if len(got[intent]) < want[intent]:
            got[intent].append(g)
        if all(len(got[k]) >= n for k, n in want.items()):
            break
    assert all(len(got[k]) >= n for k, n in want.items()), {k: len(v) for k, v in got.items()}
    return dict(got)


_KINDS: dict = {}  # (motif, intent, index) -> the kinds TVM named, shared by the tests


def _kinds(tvm, name: str, intent: str, i: int) -> list:
    key = (name, intent, i)
    if key not in _KINDS:
        g = _instances(name)[intent][i]
        _KINDS[key] = tvm.rewrites(tvm.compile(Model(to_onnx(g, 1).SerializeToString(), g)))
    return _KINDS[key]


@pytest.mark.parametrize("name", MOTIFS)
def test_tvm_motif_fires_inside_its_preconditions_and_not_outside(tvm, name):
    spec = all_specs()[name]
    assert spec.expects and all(k.startswith(("fused:", "pass:")) for k in spec.expects)
    assert spec.conditions, f"{name}: a TVM motif names the conditions it may break"
    for intent, graphs in _instances(name).items():
        fired = [any(k in spec.expects for k in _kinds(tvm, name, intent, i)) for i in range(len(graphs))]
        if intent == "fires":
            assert sum(fired) >= len(fired) - 1, f"{name}: fired on {sum(fired)} of {len(fired)}"
        else:
            assert not any(fired), f"{name} {intent}: the rewrite fired on {sum(fired)} of {len(fired)}"


def test_tvm_motifs_make_at_least_20_distinct_rewrite_kinds(tvm):
    """Taken together, the motifs' first instances inside their preconditions make at
    least 20 distinct kinds they aim at (fused functions and passes)."""
    assert len(MOTIFS) >= 20
    made = set()
    for name in MOTIFS:
        expects = set(all_specs()[name].expects)
        for i in range(2):
            made |= expects.intersection(_kinds(tvm, name, "fires", i))
    assert len(made) >= 20, sorted(made)
