"""Every mistake one line: a flag named as the user typed it (never the embedded default or
the file it overrode), "did you mean" for backend names, devices, levels and enumerated
values, each command under its own name, an output folder that cannot be written (a
pseudo-filesystem, a read-only folder) refused before any work with exit status 2, and
``dlgate reduce`` pointing at the cut case that holds a finding."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import onnx
import pytest
import yaml

from dlgate.cli import build_parser, main
from dlgate.cli.parser import walk

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFUSING = "dlgate.backends.testing:RefusingOnnxRuntime"


def _one_line(capsys, argv) -> str:
    """The one line ``dlgate ARGV`` prints on stderr, having exited with status 2."""
    status = main(argv)
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, (status, err)
    return lines[0]


@pytest.fixture(scope="module")
def case_dir(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("mistakes")
    assert main(["gen", "--seed", "m", "--count", "1", "--out", str(d / "gen"), "--ops", "Relu"]) == 0
    return os.path.join(str(d / "gen"), sorted(os.listdir(d / "gen"))[0])


# -- flags as typed, "did you mean" -------------------------------------------------------------------
@pytest.mark.parametrize("argv, line", [
    (["--backend", "tvm@O9"], "dlgate run: --backend tvm@O9: tvm has no optimization level 'O9'; allowed: zero, default"),
    (["--backend", "tvm@defualt"], "dlgate run: --backend tvm@defualt: tvm has no optimization level 'defualt'; "
                                   "did you mean 'default'? allowed: zero, default"),
    (["--backend", "onnxruntime", "--backend", "tvm:cdua"],
     "dlgate run: --backend tvm:cdua: tvm has no device 'cdua'; did you mean 'cuda'? allowed: cpu, cuda"),
    (["--fail-on", "nwe"], "dlgate run: --fail-on: 'nwe' is not one of new, any, none; did you mean 'new'?"),
    (["--fail-on", "sometimes"], "dlgate run: --fail-on: 'sometimes' is not one of new, any, none"),
    (["--confirm-runs", "-1"], "dlgate run: --confirm-runs: -1 is outside the allowed range 0..10"),
    (["--min-nodes", "12"], "dlgate run: --min-nodes 12 exceeds max_nodes (10) of <embedded default>"),
    (["--min-nodes", "4", "--max-nodes", "3"], "dlgate run: --min-nodes 4 exceeds --max-nodes 3"),
])
def test_a_bad_run_flag_is_named_as_typed(argv, line, tmp_path, capsys):
    assert _one_line(capsys, ["run", "--seed", "s", "--out", str(tmp_path / "o"), *argv]) == line
    assert not os.path.exists(tmp_path / "o")


def test_an_unknown_backend_gets_the_nearest_name(tmp_path, capsys):
    line = _one_line(capsys, ["run", "--seed", "s", "--out", str(tmp_path / "o"), "--backend", "tmv"])
    assert line.startswith("dlgate run: --backend tmv: unknown backend 'tmv'; did you mean 'tvm'? allowed: ")
    assert "onnxruntime" in line and "embedded" not in line
    line = _one_line(capsys, ["run", "--seed", "s", "--out", str(tmp_path / "o"), "--reference", "troch"])
    assert line.startswith("dlgate run: --reference troch: unknown backend 'troch'; did you mean 'torch'?")


def test_a_flag_overriding_a_file_is_blamed_not_the_file(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"backends": ["onnxruntime", "tvm"], "fail_on": "new"}))
    line = _one_line(capsys, ["run", "--config", str(cfg), "--seed", "s", "--out", str(tmp_path / "o"),
                              "--backend", "onnxruntime", "--backend", "tvm@O9"])
    assert line.startswith("dlgate run: --backend tvm@O9: ") and str(cfg) not in line
    # the file's own mistake still names the file and its key
    cfg.write_text(yaml.safe_dump({"backends": ["tmv"]}))
    line = _one_line(capsys, ["run", "--config", str(cfg), "--seed", "s", "--out", str(tmp_path / "o")])
    assert line.startswith(f"dlgate run: {cfg}: backends[0]: unknown backend 'tmv'; did you mean 'tvm'?")


@pytest.mark.parametrize("command", ["reduce", "check"])
def test_each_command_names_itself(command, case_dir, tmp_path, capsys):
    out = ["--out", str(tmp_path / "o")]
    line = _one_line(capsys, [command, case_dir, "--backend", "tvm@O3", *out])
    assert line == f"dlgate {command}: --backend tvm@O3: tvm has no optimization level 'O3'; allowed: zero, default"
    line = _one_line(capsys, [command, case_dir, "--backend", "onnxrt", *out])
    assert line.startswith(f"dlgate {command}: --backend onnxrt: unknown backend 'onnxrt'; "
                           "did you mean 'onnxruntime'? allowed: ")
    line = _one_line(capsys, [command, case_dir, "--backend", "onnxruntime", "--reference", "troch", *out])
    assert line.startswith(f"dlgate {command}: --reference troch: unknown backend 'troch'; did you mean 'torch'?")


@pytest.mark.parametrize("argv, line", [
    (["probe", "--system", "tvmm"], "dlgate probe: --system tvmm: unknown backend 'tvmm'; did you mean 'tvm'? known: "),
    (["gen", "--seed", "s", "--count", "1", "--out", "OUT", "--support", "onnxrt"],
     "dlgate gen: --support onnxrt: unknown backend 'onnxrt'; did you mean 'onnxruntime'? known: "),
    (["probe", "--system", "zzz"], "dlgate probe: --system zzz: unknown backend 'zzz'; known: "),
])
def test_a_mistyped_system_gets_the_nearest_name(argv, line, tmp_path, capsys):
    argv = [str(tmp_path / "o") if a == "OUT" else a for a in argv]
    assert _one_line(capsys, argv).startswith(line)


# -- output folders that cannot be written ------------------------------------------------------------
def _commands_with_out(case_dir: str, run_dir: str) -> dict:
    """argv (without --out) of every command that takes --out."""
    return {"gen": ["gen", "--seed", "s", "--count", "1"], "check": ["check", case_dir, "--backend", "onnxruntime"],
            "run": ["run", "--seed", "s", "--backend", "onnxruntime", "--models", "1"],
            "reduce": ["reduce", case_dir, "--backend", "onnxruntime"], "merge": ["merge", run_dir],
            "report": ["report", run_dir]}


def test_every_command_with_an_out_flag_is_covered():
    have = {path[0] for path, p in walk(build_parser()) if path and "--out" in p._option_string_actions}
    assert have == set(_commands_with_out("c", "r"))


@pytest.mark.parametrize("command", ["gen", "check", "run", "reduce", "merge", "report"])
def test_an_out_on_a_pseudo_filesystem_is_one_line_and_status_2(command, case_dir, tmp_path, capsys):
    argv = _commands_with_out(case_dir, str(tmp_path)) [command]
    out = "/proc/dlgate-out/x.html" if command == "report" else "/proc/dlgate-out"
    line = _one_line(capsys, [*argv, "--out", out])
    assert line.startswith(f"dlgate {command}: --out") and "cannot be created" in line, line
    assert "/proc is on proc, a pseudo-filesystem" in line, line


def test_the_installed_command_refuses_proc_in_one_line():
    p = subprocess.run([sys.executable, "-m", "dlgate", "run", "--seed", "s", "--backend", "onnxruntime",
                        "--out", "/proc/x"], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=REPO),
                       timeout=120)
    assert p.returncode == 2 and p.stderr.splitlines() == [
        "dlgate run: --out: /proc/x: cannot be created (/proc is on proc, a pseudo-filesystem)"], p.stderr


def test_an_existing_folder_that_takes_no_files_is_refused(tmp_path, capsys):
    if os.geteuid() == 0:  # root writes through file modes: a sysfs folder takes no new folder either
        out, words = "/sys/kernel", "the folder is not writable (/sys/kernel is on sysfs, a pseudo-filesystem)"
    else:
        out = str(tmp_path / "ro")
        os.makedirs(out)
        os.chmod(out, 0o555)
        words = "the folder is not writable"
    line = _one_line(capsys, ["gen", "--seed", "s", "--count", "1", "--out", out])
    assert line.startswith(f"dlgate gen: --out: {out}: ") and words in line, line


# -- dlgate reduce points at the cut case holding the finding ------------------------------------------
def test_reduce_points_at_the_cut_case_that_holds_the_finding(tmp_path, monkeypatch, capsys):
    # a compiler that refuses Tanh and runs Softplus as Softsign: a model holding both is refused,
    # and its wrong answer is found behind the refusal, in cases/<case>/cut1-<backend>/
    monkeypatch.setenv("DLGATE_REFUSE", "Tanh")
    monkeypatch.setenv("DLGATE_CONVERT", "Softplus:Softsign")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"campaign": "cut", "models": 6, "min_nodes": 3, "max_nodes": 6, "opset": 18,
                                   "operators": ["Tanh", "Softplus", "Relu", "Add", "Neg"], "dtypes": ["float32"],
                                   "backends": [REFUSING], "crosscheck": False}))
    out = tmp_path / "o"
    assert main(["run", "--config", str(cfg), "--seed", "cut", "--out", str(out), "--no-progress"]) == 1
    capsys.readouterr()
    recs = [json.loads(x) for x in open(out / "results.jsonl")]
    behind = [r for r in recs if r["verdicts"][0]["verdict"] == "unsupported" and r["verdicts"][0].get("more")]
    assert behind, "no refused case with a finding behind it"
    rec = behind[0]
    case = os.path.join(str(out), rec["bundle"])
    cut = os.path.join(str(out), rec["verdicts"][0]["more"][0]["bundle"])
    assert os.path.basename(cut).startswith("cut1-")
    assert main(["reduce", case, "--backend", REFUSING, "--out", str(tmp_path / "r0")]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [f"{rec['case']}: {REFUSING}[cpu] does not fail here (unsupported); nothing to reduce; "
                                f"the finding behind it is in {cut} (run `dlgate reduce {cut} --backend {REFUSING}`)"]
    # the command it names reduces that finding
    assert main(["reduce", cut, "--backend", REFUSING, "--out", str(tmp_path / "r1")]) == 0
    reduced = onnx.load(str(tmp_path / "r1" / "model.onnx"))
    assert [n.op_type for n in reduced.graph.node] == ["Softplus"]
