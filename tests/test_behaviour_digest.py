"""bench/behaviour_digest.py's canonical form: two runs that recorded the same results, in
any order and key order, digest alike; a difference is named by its key path."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "bench", "behaviour_digest.py")


def _bench():
    spec = importlib.util.spec_from_file_location("behaviour_digest", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write(path, recs):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs) + "\n")
    return str(path)


def test_record_order_and_key_order_do_not_change_the_canonical_form(tmp_path):
    B = _bench()
    a = [{"case": "00000-aa", "verdicts": [{"backend": "tvm", "verdict": "pass"}]},
         {"case": "00001-bb", "verdicts": [{"verdict": "mismatch", "backend": "tvm"}]}]
    b = [{"verdicts": [{"backend": "tvm", "verdict": "mismatch"}], "case": "00001-bb"}, a[0]]
    assert B.canonical(_write(tmp_path / "a", a)) == B.canonical(_write(tmp_path / "b", b))
    c = [a[0], {"case": "00001-bb", "verdicts": [{"backend": "tvm", "verdict": "pass"}]}]
    assert B.canonical(_write(tmp_path / "a", a)) != B.canonical(_write(tmp_path / "c", c))


def test_volatile_keys_are_left_out_wherever_they_occur(tmp_path, monkeypatch):
    B = _bench()
    monkeypatch.setattr(B, "VOLATILE", ("verdicts.[].host", "reference.*.pid"))
    rec = {"case": "x", "verdicts": [{"host": "a", "v": 1}, {"host": "b", "v": 2}],
           "reference": {"w1": {"pid": 7, "ok": True}, "w2": {"pid": 8}}}
    (line,) = B.canonical(_write(tmp_path / "r", [rec]))
    assert json.loads(line) == {"case": "x", "verdicts": [{"v": 1}, {"v": 2}],
                                "reference": {"w1": {"ok": True}, "w2": {}}}


def test_differing_keys_name_the_paths_that_differ():
    B = _bench()
    a = {"case": "x", "verdicts": [{"verdict": "pass", "comparison": {"max_abs": 0.0}}], "n": 1}
    b = {"case": "x", "verdicts": [{"verdict": "pass", "comparison": {"max_abs": 0.5}}], "m": 1}
    assert B.differing_keys(a, b) == {"verdicts.[].comparison.max_abs", "n", "m"}
    assert B.differing_keys(a, a) == set()
    assert B.differing_keys({"v": [1]}, {"v": [1, 2]}) == {"v"}


def test_bad_arguments_get_one_line_and_status_2():
    for args, words in ((["--models", "0"], "--models must be at least 1"), (["--backends", ","], "names no backend")):
        p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
        assert p.returncode == 2 and words in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_a_run_that_writes_no_results_is_an_error_not_a_digest():
    p = subprocess.run([sys.executable, SCRIPT, "--models", "1", "--backends", "onnxruntime", "--python", "false"],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "wrote no results.jsonl" in p.stderr and "onnxruntime  " not in p.stdout
