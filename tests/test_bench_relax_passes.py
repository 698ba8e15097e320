"""bench/relax_passes.py --analyse over the shard folders of one run, finished or not: a
cause met in two shards counts once, an unfinished shard's causes come from its journal, and
each failure is put under the setting that made it (the Relax-level invalid backend under its
label and the one it had before)."""
import importlib.util
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("relax_passes", os.path.join(ROOT, "bench", "relax_passes.py"))
RP = importlib.util.module_from_spec(spec)
spec.loader.exec_module(RP)


def _verdict(backend, verdict, cause):
    return {"backend": backend, "verdict": verdict, "identity": {"cause": cause, "cluster": cause, "fingerprint": cause,
                                                               "cause_text": f"text of {cause}"}}


def _shard(d, records, passes_by_case):
    os.makedirs(d)
    with open(os.path.join(d, "results.jsonl"), "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    with open(os.path.join(d, "timings.jsonl"), "w") as f:
        for case, by in passes_by_case.items():
            f.write(json.dumps({"case": case, "backends": {k: {"rewrites": v} for k, v in by.items()}}) + "\n")
    with open(os.path.join(d, "run.json"), "w") as f:
        json.dump({"root": "r", "config": {"campaign": "c", "models": 4, "relax_share": 0.25}}, f)
    return str(d)


def test_analyse_reads_unfinished_shards_and_counts_a_cause_once(tmp_path):
    a = _shard(tmp_path / "s1", [
        {"case": "c0", "verdicts": [_verdict("tvm[cpu]", "compile_error", "A")]},
        {"case": "c1", "relax": {"pair": []}, "verdicts": [_verdict("tvm-relax[cpu]", "mismatch", "B"),
                                                           _verdict("tvm[cpu]", "pass", None)]},
        {"case": "c5", "verdicts": [_verdict("tvm[cpu]", "compile_error", "E")]},
    ], {"c1": {"tvm[cpu]": ["pass:FoldConstant"], "tvm-relax[cpu]": ["pass:FoldConstant", "pass:CanonicalizeBindings"]}})
    b = _shard(tmp_path / "s2", [
        {"case": "c2", "verdicts": [_verdict("tvm[cpu]", "compile_error", "A")]},
        {"case": "c4", "relax": {"pair": []}, "verdicts": [_verdict("tvm[cpu]", "compile_error", "E")]},
        {"case": "c3", "verdicts": [_verdict("tvm-relax-invalid[cpu]", "invalid_accepted", "C"),
                                    _verdict("dlgate.invalid.relax:TVMRelaxInvalid[cpu]", "invalid_crash", "D")]},
    ], {})
    got = RP.causes([a, b])
    assert got["reference oracle"]["causes"]["A"]["cases"] == 2
    assert set(got["relax_share (direct path)"]["causes"]) == {"B"}
    # E: on a Relax-native case in one shard, an ordinary one in the other: one cause, of the plain oracle
    assert got["reference oracle"]["causes"].keys() == {"A", "E"}
    assert "relax_share (importer path, Relax-native cases only)" not in got
    assert set(got["invalid_share (Relax rules)"]["causes"]) == {"C", "D"}
    p = RP.passes([a, b], {})
    assert p["native_cases_both_compiled"] == 1 and p["direct_only"] == ["CanonicalizeBindings"]
    assert RP.main(["--analyse", a, b]) == 0
    assert RP.main(["--analyse", a, str(tmp_path)]) == 2  # not a run folder
