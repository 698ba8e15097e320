"""The same (root, campaign, index) gives byte-identical models in separate processes."""
from __future__ import annotations

import json
import os
import subprocess
import sys


def _gen(out, hashseed, count=200):
    env = dict(os.environ, PYTHONHASHSEED=str(hashseed))
    subprocess.run([sys.executable, "-m", "dlgate", "gen", "--seed", "0123abcd", "--campaign", "det",
                    "--count", str(count), "--out", str(out)], check=True, env=env, capture_output=True)
    shas = {}
    for case in sorted(os.listdir(out)):
        with open(os.path.join(out, case, "meta.json")) as f:
            shas[case] = json.load(f)["sha256"]
    return shas


def test_two_processes_generate_identical_models(tmp_path):
    a = _gen(tmp_path / "a", 1)
    b = _gen(tmp_path / "b", 12345)
    assert len(a) == 200
    assert a == b
    for case in a:  # and the files themselves, not only the recorded digests
        assert (tmp_path / "a" / case / "model.onnx").read_bytes() == (tmp_path / "b" / case / "model.onnx").read_bytes()
        assert (tmp_path / "a" / case / "meta.json").read_bytes() == (tmp_path / "b" / case / "meta.json").read_bytes()


def test_a_shard_of_indices_matches_the_whole_batch(tmp_path):
    whole = _gen(tmp_path / "w", 7, count=30)
    env = dict(os.environ)
    subprocess.run([sys.executable, "-m", "dlgate", "gen", "--seed", "0123abcd", "--campaign", "det",
                    "--start", "20", "--count", "10", "--out", str(tmp_path / "s")], check=True, env=env,
                   capture_output=True)
    shard = sorted(os.listdir(tmp_path / "s"))
    assert shard == sorted(whole)[20:30]
    for case in shard:
        assert (tmp_path / "s" / case / "model.onnx").read_bytes() == (tmp_path / "w" / case / "model.onnx").read_bytes()


def test_a_case_does_not_depend_on_the_cases_generated_before_it():
    from dlgate.case import make_case
    from dlgate.graph.generator import GenConfig, Generator

    def shas(order):
        gen = Generator(GenConfig(max_nodes=10))
        return {i: make_case(gen, "order", "o", i).sha256 for i in order}

    forward = shas(range(120))
    assert shas(reversed(range(120))) == forward
    assert shas(list(range(1, 120, 2)) + list(range(0, 120, 2))) == forward
