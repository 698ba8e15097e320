"""Golden bytes (tests/golden.py): the fixed batch's models and inputs hash to the digests
pinned for the current GENERATOR_VERSION, the same in every process, and a change to
generation fails the check."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from dlgate import GENERATOR_VERSION
from tests import golden as G

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Regimes the other processes recompute: the guided, the dynamic and the extreme paths.
SUBSET = ("campaign", "dynamic", "extreme")


def _run(args, env=None, code=None):
    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", "tests.golden", *args]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {}))
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def batch(golden_cases):
    return G.summarize(golden_cases)


def test_the_batch_matches_the_pin_of_its_generator_version(batch):
    problems = G.compare(batch, G.load_pins(), GENERATOR_VERSION)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def test_the_batch_covers_opsets_dynamic_shapes_and_extreme_values(batch):
    from dlgate.graph.generator import NEWEST_OPSET, OLDEST_OPSET
    from dlgate.ops.registry import all_specs

    r = batch["regimes"]
    assert batch["cases"] == sum(n for _, n, *_ in G.REGIMES) >= 300
    assert r["opset13"]["opsets"] == [OLDEST_OPSET] and r["newest"]["opsets"] == [NEWEST_OPSET]
    assert len(r["campaign"]["opsets"]) >= 10  # drawn per case across the range
    assert r["dynamic"]["dynamic"] >= 20 and r["dynamic"]["bindings"] >= r["dynamic"]["dynamic"]
    assert r["extreme"]["extreme"] >= 30
    assert r["campaign"]["dynamic"] > 0 and r["campaign"]["extreme"] > 0
    assert sum(x["searched_cases"] for x in r.values()) >= 10  # the input search's moved cases too
    ops = set().union(*(x["operators"] for x in r.values()))
    assert len(ops) >= 0.9 * len(all_specs())


def test_the_digest_is_the_same_in_other_processes_with_other_hash_seeds(batch):
    """One other process, with a hash seed other than this process's (a random one unless
    PYTHONHASHSEED is set): two processes, two hash seeds, one digest. A second subprocess
    would add its minute of a loaded machine and only a third hash seed."""
    args = [a for name in SUBSET for a in ("--regime", name)]
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    p = _run(args, env={"PYTHONHASHSEED": seed})
    assert p.returncode == 0, p.stderr
    a = json.loads(p.stdout)
    assert list(a["regimes"]) == list(SUBSET)
    for name in SUBSET:
        for k in G.KINDS:
            assert a["regimes"][name][k] == batch["regimes"][name][k], (name, k)


# Halves LeakyRelu's sampled alpha (one attribute of one operator), counts the cases it
# touched, then runs the pin check on one regime.
PERTURB = """
import sys
from dlgate.ops.registry import get
from tests import golden as G
cls = type(get("LeakyRelu"))
orig, hits = cls.sample, []
def sample(self, ctx, ins):
    a = orig(self, ctx, ins)
    hits.append(1)
    return {**a, "alpha": a["alpha"] / 2}
cls.sample = sample
rc = G.main(["--check", "--regime", sys.argv[1]])
print("hits", len(hits))
sys.exit(rc)
"""


def test_a_perturbed_attribute_sampling_fails_the_check(batch):
    # the smallest regime the operator appears in, so that the subprocess stays short
    regime = min((n for n, x in batch["regimes"].items() if "LeakyRelu" in x["operators"]),
                 key=lambda n: batch["regimes"][n]["cases"], default=None)
    assert regime is not None, "the golden batch holds no LeakyRelu: perturb another operator here"
    p = subprocess.run([sys.executable, "-c", PERTURB, regime], cwd=REPO, capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, PYTHONPATH=REPO))
    assert int(p.stdout.split("hits")[-1]) > 0, p.stdout + p.stderr
    assert p.returncode == 1, p.stdout + p.stderr
    assert "generation changed without a GENERATOR_VERSION bump" in p.stderr
    assert f"regime {regime}: models" in p.stderr and "python -m tests.golden --pin" in p.stderr


def _got(**over):
    r = {"cases": 1, "models": "a" * 64, "inputs": "b" * 64, "searched": "c" * 64, "operators": ["Relu"]}
    return {"definition": G.definition(), "platform": "x86_64 torch 9 AVX512", "models": "m" * 64,
            "inputs": "i" * 64, "searched": "s" * 64, "cases": 1, "regimes": {"plain": {**r, **over}}}


def test_an_unpinned_version_says_how_to_pin_it():
    (msg,) = G.compare(_got(), {"12": {}}, "99")
    assert "GENERATOR_VERSION 99 has no golden pin" in msg and "pins 12" in msg
    assert "python -m tests.golden --pin" in msg


def test_a_changed_batch_definition_asks_for_a_new_pin_not_a_bump():
    (msg,) = G.compare(_got(), {"13": {**_got(), "definition": "0" * 64}}, "13")
    assert "REGIMES" in msg and "pin it again" in msg and "bump" not in msg


def test_searched_inputs_are_compared_on_any_platform():
    pinned = {"13": _got()}
    assert G.compare(_got(), pinned, "13") == []
    assert G.compare({**_got(), "platform": "aarch64 torch 9 DEFAULT"}, pinned, "13") == []
    (msg,) = G.compare(_got(searched="d" * 64), pinned, "13")
    assert "regime plain: searched dddddddddddd, pinned cccccccccccc" in msg
    (msg,) = G.compare({**_got(searched="d" * 64), "platform": "aarch64 torch 9 DEFAULT"}, pinned, "13")
    assert "regime plain: searched dddddddddddd, pinned cccccccccccc" in msg
    (msg,) = G.compare({**_got(inputs="e" * 64), "platform": "aarch64 torch 9 DEFAULT"}, pinned, "13")
    assert "without a GENERATOR_VERSION bump" in msg and "regime plain: inputs" in msg


def test_pinning_refuses_to_replace_a_differing_pin_of_the_same_version(tmp_path):
    path = str(tmp_path / "golden.json")
    assert G.pin(_got(), path, "13") == "13"
    assert G.pin(_got(), path, "13") == "13"  # the same digests: nothing to refuse
    with pytest.raises(G.GoldenError, match="bump GENERATOR_VERSION"):
        G.pin(_got(models="f" * 64), path, "13")
    G.pin(_got(models="f" * 64), path, "14")  # a new version pins freely, and keeps the old pin
    G.pin({**_got(models="f" * 64), "definition": "0" * 64}, path, "13")  # so does a new batch definition
    G.pin(_got(models="9" * 64), path, "13", force=True)
    pins = G.load_pins(path)
    assert sorted(pins) == ["13", "14"]
    assert pins["13"]["regimes"]["plain"]["models"] == "9" * 64
    assert pins["13"]["regimes"]["plain"]["operators"] == 1  # the pin keeps the list's size only


def test_arrays_hash_by_dtype_shape_and_little_endian_bytes():
    import hashlib

    def digest(*xs):
        h = hashlib.sha256()
        G._put_arrays(h, xs)
        return h.hexdigest()

    x = np.arange(6, dtype="<f4").reshape(2, 3)
    assert digest(x) == digest(x.astype(">f4")) == digest(np.asfortranarray(x))
    assert digest(x) != digest(x.reshape(3, 2)) != digest(x.astype("<i4"))
    assert digest(x, x) != digest(np.concatenate([x, x]))


@pytest.mark.parametrize("args, words", [(["--regime", "nope"], "no regime 'nope'"),
                                         (["--force"], "--force goes with --pin"),
                                         (["--pin", "--regime", "plain"], "drop --regime")])
def test_bad_arguments_get_one_line_and_status_2(args, words):
    p = _run(args)
    assert p.returncode == 2 and words in p.stderr and len(p.stderr.strip().splitlines()) == 1
