"""An issue for a Relax-level invalid-model finding says what its repro is: TVMScript and a
pass list needing only TVM and NumPy, which must make TVM raise; not an ONNX model built with
onnx.helper."""
import json

from dlgate.github.issues import Finding, body


def test_a_relax_invalid_findings_issue_describes_its_tvmscript_repro(tmp_path):
    d = tmp_path / "repro"
    d.mkdir()
    doc = {"verdict": "invalid_accepted", "backend": "tvm-relax-invalid[cpu]", "versions": {"name": "tvm", "version": "0.27"},
           "self_contained": True, "invalid": {"level": "relax", "rule": "wrong dtype", "op_type": "main"},
           "tvmscript": {"script": "repro_tvmscript.py", "reads": None}, "nodes": 1, "original_nodes": 1, "opset": 18,
           "dlgate": "1.0.0", "generator": "16", "environment": {}, "pattern": "main", "typed": ""}
    (d / "repro.json").write_text(json.dumps(doc))
    (d / "repro.py").write_text("print('the script')\n")
    (d / "graph.txt").write_text("graph\n")
    (d / "graph.mmd").write_text("graph TD\n")
    f = Finding(cause="c0ffee", repro=str(d), doc=doc, fingerprints=[("fp", "", str(d))], cases=1,
                classes=["invalid_accepted"], operators=["main"])
    text = body(f, {"campaign": "weekly", "commit": "0" * 40})
    assert "needs only TVM and NumPy" in text and "TVM must reject the module" in text
    assert "onnx.helper" not in text
    doc2 = dict(doc, invalid={"level": "onnx", "rule": "wrong dtype", "op_type": "Relu"})
    doc2.pop("tvmscript")
    f2 = Finding(cause="c0ffee", repro=str(d), doc=doc2, fingerprints=[("fp", "", str(d))], cases=1,
                 classes=["invalid_accepted"], operators=["Relu"])
    assert "TVM must reject the module" not in body(f2, {"campaign": "weekly", "commit": "0" * 40})
