"""Set-up does what the README says: PyTorch's CPU build, from PyTorch's CPU index, in every
place that installs it, and nothing changed outside .venv unless asked.

The installed torch itself is checked (its version must carry +cpu), then the scripts:
.ci/setup's torch step, .ci/check_torch.py against fake installed versions, and .ci/browser
run with a PATH of stand-ins for apt-get, sudo, id and chromium, so that what it would
install, and when, is observed without touching the machine.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
SETUP = (ROOT / ".ci" / "setup").read_text()


def _pinned_torch() -> str:
    lines = (ROOT / "requirements" / "pins.txt").read_text().splitlines()
    return next(x.split("==", 1)[1].strip() for x in lines if x.startswith("torch=="))


# ---------------------------------------------------------------- the torch that is installed


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS has no CUDA build of torch and no +cpu label")
def test_the_installed_torch_is_pytorchs_cpu_build():
    import torch

    assert torch.__version__ == f"{_pinned_torch()}+cpu", (
        f"torch {torch.__version__} is installed: .ci/setup installs {_pinned_torch()}+cpu from {CPU_INDEX}")
    assert torch.version.cuda is None


# ---------------------------------------------------------------- .ci/setup's torch step


def _torch_install() -> list:
    """The words of .ci/setup's pip command that installs torch (continuation lines joined)."""
    text = re.sub(r"\\\n\s*", " ", SETUP)
    cmds = [line for line in text.splitlines() if "--extra-index-url" in line or "torch_req" in line]
    install = [c for c in cmds if c.lstrip().startswith('"${PIP[@]}"')]
    assert len(install) == 1, cmds
    return shlex.split(install[0])


def test_setup_asks_pytorchs_cpu_index_for_the_cpu_build_and_bounds_what_an_unreachable_index_costs():
    words = _torch_install()
    # an extra index, so that a mirror or local wheels still serve torch where the CPU index is out of reach
    assert words[words.index("--extra-index-url") + 1] == CPU_INDEX
    assert "--index-url" not in words
    assert words[-1] == "$torch_req" and "--no-deps" in words  # only torch is looked up on the CPU index
    assert f'torch_pin="torch=={_pinned_torch()}"' in SETUP  # requirements/pins.txt's version
    assert re.search(r'^\s*\*\) torch_req="\$torch_pin\+cpu" ;;$', SETUP, re.M)  # +cpu: never the CUDA build
    # seconds, not pip's default five retries with back-off for every lookup
    assert int(words[words.index("--timeout") + 1]) <= 30
    assert int(words[words.index("--retries") + 1]) <= 2
    # torch first, then the project (whose torch>=2.2 is then satisfied), then the check
    lines = SETUP.splitlines()
    torch_at = next(i for i, x in enumerate(lines) if "--extra-index-url" in x)
    project_at = next(i for i, x in enumerate(lines) if '-e ".[test,tvm]"' in x)
    check_at = next(i for i, x in enumerate(lines) if x.strip() == ".venv/bin/python .ci/check_torch.py")
    assert torch_at < project_at < check_at
    assert "apt-get" not in re.sub(r"(?m)^\s*#.*$", "", SETUP)  # the system is changed by .ci/browser, if asked


def _fake_dist(tmp_path: Path, version: str) -> dict:
    site = tmp_path / f"site-{version}"
    info = site / f"torch-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
    return dict(os.environ, PYTHONPATH=str(site))  # ahead of site-packages: importlib.metadata finds it first


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS has no CUDA build of torch and no +cpu label")
@pytest.mark.parametrize("version, ok", [("2.13.0+cpu", True), ("2.13.0", False), ("2.13.0+cu128", False)])
def test_setup_fails_in_one_line_unless_the_installed_torch_is_the_cpu_build(tmp_path, version, ok):
    res = subprocess.run([sys.executable, str(ROOT / ".ci" / "check_torch.py")], env=_fake_dist(tmp_path, version),
                         capture_output=True, text=True, timeout=60)
    if ok:
        assert res.returncode == 0 and res.stdout == f".ci/setup: torch {version} (CPU build)\n" and not res.stderr
    else:
        assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr
        assert res.stderr.startswith(f".ci/setup: torch {version} is installed, not PyTorch's CPU build")
        assert CPU_INDEX in res.stderr


# ---------------------------------------------------------------- every CI job


def _workflow_runs():
    for path in sorted((ROOT / ".github" / "workflows").glob("*.yml")):
        for name, job in yaml.safe_load(path.read_text())["jobs"].items():
            for step in job.get("steps", []):
                if "run" in step:
                    yield path.name, name, step["run"]


def test_every_ci_job_installs_torch_through_setup_or_from_the_cpu_index():
    """A step that installs torch, or dlgate (which requires torch), without PyTorch's CPU index
    would resolve to the CUDA build; .ci/setup and .ci/run bring the CPU one."""
    through_setup = set()
    for wf, job, run in _workflow_runs():
        if re.search(r"(^|\s)(bash )?\.ci/(setup|run)\b", run):
            through_setup.add((wf, job))
            continue
        for cmd in re.sub(r"\\\n\s*", " ", run).splitlines():
            if re.search(r"\bpip3? install\b", cmd):
                words = shlex.split(cmd.split("#", 1)[0])
                wants_torch = any(re.match(r"(torch\b|dlgate\b|\.(\[|$)|-e$|-r$)", w) for w in words)
                assert not wants_torch or CPU_INDEX in cmd, f"{wf} job {job}: {cmd.strip()}"
    assert {("ci.yml", "tests"), ("ci.yml", "smoke")} <= through_setup


def test_ci_run_asks_for_the_browser_and_runs_the_readme_test_command():
    run = (ROOT / ".ci" / "run").read_text()
    assert "export DLGATE_SETUP_BROWSER=${DLGATE_SETUP_BROWSER:-system}" in run
    assert run.index("DLGATE_SETUP_BROWSER") < run.index("bash .ci/setup") < run.index(".venv/bin/python -m pytest -q -n 2")
    assert SETUP.rstrip().endswith("bash .ci/browser")


# ---------------------------------------------------------------- .ci/browser


def _stand_ins(tmp_path: Path, uid: int = 0, sudo: bool = False, chromium: bool = False) -> Path:
    """A PATH of stand-ins: apt-get and sudo log their arguments, id prints ``uid``."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "calls.log"
    tools = {"apt-get": f'echo "apt-get $*" >> {log}', "id": f"echo {uid}"}
    if sudo:
        tools["sudo"] = f'echo "sudo $*" >> {log}\n[ "$1" = -n ] && shift\nexec "$@"'
    if chromium:
        tools["chromium"] = "exit 0"
    for name, body in tools.items():
        (bin_ / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_ / name).chmod(0o755)
    for name in ("env", "true", "sh"):  # what the script and the stand-ins call besides them
        (bin_ / name).symlink_to(next(p for d in ("/usr/bin", "/bin") if (p := Path(d) / name).exists()))
    return bin_


def _browser(tmp_path: Path, bin_: Path, **env) -> tuple:
    res = subprocess.run(["/bin/bash", str(ROOT / ".ci" / "browser")], capture_output=True, text=True, timeout=60,
                         env={"PATH": str(bin_), "HOME": str(tmp_path), **env})
    log = tmp_path / "calls.log"
    return res, (log.read_text().splitlines() if log.exists() else [])


def test_browser_installs_nothing_unless_asked_and_says_how_to_ask(tmp_path):
    res, calls = _browser(tmp_path, _stand_ins(tmp_path, uid=0))
    assert res.returncode == 0 and calls == []
    assert "browser test will skip" in res.stdout and "DLGATE_SETUP_BROWSER=system" in res.stdout
    assert "DLGATE_CHROMIUM" in res.stdout


def test_browser_asked_for_the_system_package_installs_chromium_saying_so(tmp_path):
    res, calls = _browser(tmp_path, _stand_ins(tmp_path, uid=0), DLGATE_SETUP_BROWSER="system")
    assert res.returncode == 0, res.stderr
    assert calls == ["apt-get update -q", "apt-get install -y -q --no-install-recommends chromium"]
    assert "installing the system package chromium" in res.stdout and "HTML report" in res.stdout


def test_browser_uses_password_less_sudo_and_refuses_without_it(tmp_path):
    res, calls = _browser(tmp_path, _stand_ins(tmp_path, uid=1001, sudo=True), DLGATE_SETUP_BROWSER="system")
    assert res.returncode == 0, res.stderr
    assert calls[-2:] == ["sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "
                          "chromium", "apt-get install -y -q --no-install-recommends chromium"]
    other = tmp_path / "no-sudo"
    other.mkdir()
    res, calls = _browser(other, _stand_ins(other, uid=1001), DLGATE_SETUP_BROWSER="system")
    assert res.returncode == 1 and calls == []
    assert res.stderr.count("\n") == 1 and "run as root" in res.stderr


def test_browser_leaves_an_existing_chromium_alone(tmp_path):
    bin_ = _stand_ins(tmp_path, uid=0, chromium=True)
    res, calls = _browser(tmp_path, bin_, DLGATE_SETUP_BROWSER="system")
    assert res.returncode == 0 and calls == []
    assert res.stdout == f".ci/browser: headless Chromium for the HTML report test: {bin_ / 'chromium'}\n"
    given = tmp_path / "my-chrome"
    given.write_text("#!/bin/sh\n")
    given.chmod(0o755)
    other = tmp_path / "given"
    other.mkdir()
    res, calls = _browser(other, _stand_ins(other, uid=0), DLGATE_SETUP_BROWSER="system", DLGATE_CHROMIUM=str(given))
    assert res.returncode == 0 and calls == [] and str(given) in res.stdout


@pytest.mark.parametrize("env, words", [({"DLGATE_SETUP_BROWSER": "yes"}, "expected system or none"),
                                        ({"DLGATE_CHROMIUM": "/nonexistent/chromium"}, "not an executable file")])
def test_browser_refuses_a_bad_setting_in_one_line(tmp_path, env, words):
    res, calls = _browser(tmp_path, _stand_ins(tmp_path, uid=0), **env)
    assert res.returncode == 2 and calls == []
    assert res.stderr.count("\n") == 1 and words in res.stderr
