"""The release: tools/release.py (version agreement, notes, the action's pinned image) and
.github/workflows/release.yml. Every command runs on a temporary copy of the files it
reads or writes, never on the repository's own."""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

import dlgate

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "release.py"
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
VERSION = dlgate.__version__
IMAGE = "ghcr.io/org/dlgate"
SHA_PIN = re.compile(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}")

_spec = importlib.util.spec_from_file_location("dlgate_release_tool", TOOL)  # tools/ is not a package
release = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(release)


def run(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), "--root", str(root), *args], capture_output=True, text=True,
                          timeout=60)


def refused(res: subprocess.CompletedProcess, *words: str) -> None:
    """Exit status 2, nothing on stdout, one line on stderr that says why."""
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("release: error: "), res.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.fixture()
def repo(tmp_path) -> Path:
    """A copy of the files the release reads and writes."""
    for name in ("pyproject.toml", "action.yml", "CHANGELOG.md", "dlgate/__init__.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def snapshot(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


CHANGELOG = """\
# Changelog

Intro text.

## [Unreleased]

### Changed

- Something pending.

## [1.2.0] - 2027-03-04

### Added

- A thing, with a [link](https://example.org).
  Continued.

### Fixed

- Another.

## [1.1.0] - 2027-01-02

- The older one.

[Unreleased]: https://example.org/compare/v1.2.0...HEAD
[1.2.0]: https://example.org/compare/v1.1.0...v1.2.0
[1.1.0]: https://example.org/releases/tag/v1.1.0
"""


def set_version(root: Path, version: str, changelog: str = CHANGELOG) -> None:
    edit(root / "pyproject.toml", f'version = "{VERSION}"', f'version = "{version}"')
    edit(root / "dlgate/__init__.py", f'__version__ = "{VERSION}"', f'__version__ = "{version}"')
    (root / "CHANGELOG.md").write_text(changelog)


# ---------------------------------------------------------------- the repository as it is


def test_the_repository_agrees_with_itself():
    res = subprocess.run([sys.executable, str(TOOL), "check"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"release: {VERSION}: pyproject.toml, dlgate/__init__.py, CHANGELOG.md agree\n"
    sections = release.released_sections(ROOT)
    assert sections[0][0] == VERSION == release.pyproject_version(ROOT) == release.init_version(ROOT)
    # main keeps building the image from the Dockerfile; only release commits pin an image
    assert yaml.safe_load((ROOT / "action.yml").read_text())["runs"] == {"using": "docker", "image": "Dockerfile"}
    top = (ROOT / "CHANGELOG.md").read_text().split("\n## ")[1]
    assert top.startswith("[Unreleased]"), "Keep a Changelog: an [Unreleased] section comes first"


# ---------------------------------------------------------------- check


def test_check_accepts_an_agreeing_tag(repo):
    before = snapshot(repo)
    res = run(repo, "check", "--tag", f"v{VERSION}")
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"release: {VERSION}: the tag, pyproject.toml, dlgate/__init__.py, CHANGELOG.md agree\n"
    assert snapshot(repo) == before  # check writes nothing


@pytest.mark.parametrize("tag, words", [
    ("v9.9.9", ["tag v9.9.9 does not match the version"]),
    (VERSION, ["is not a release tag vX.Y.Z"]),
    (f"v{VERSION}-rc1", ["is not a release tag vX.Y.Z"]),
    ("v01.2.3", ["is not a release tag vX.Y.Z"]),
])
def test_check_refuses_a_tag_that_is_not_the_version(repo, tag, words):
    refused(run(repo, "check", "--tag", tag), *words)


def test_check_refuses_each_file_that_disagrees(repo):
    set_version(repo, "1.2.0")
    assert run(repo, "check", "--tag", "v1.2.0").returncode == 0
    # pyproject.toml behind the tag
    edit(repo / "pyproject.toml", 'version = "1.2.0"', 'version = "1.1.0"')
    refused(run(repo, "check", "--tag", "v1.2.0"), "dlgate/__init__.py __version__ is 1.2.0, pyproject.toml says 1.1.0")
    edit(repo / "dlgate/__init__.py", '"1.2.0"', '"1.1.0"')
    refused(run(repo, "check", "--tag", "v1.2.0"), "tag v1.2.0 does not match the version 1.1.0")
    # both files say 1.1.0, and so does the tag, but CHANGELOG.md's newest section is 1.2.0
    refused(run(repo, "check", "--tag", "v1.1.0"), "CHANGELOG.md lists [1.2.0] above [1.1.0]")
    # a version CHANGELOG.md has no section for
    set_version_files(repo, "1.3.0")
    refused(run(repo, "check", "--tag", "v1.3.0"), "CHANGELOG.md has no section [1.3.0]")


def set_version_files(root: Path, version: str) -> None:
    for name, pattern in (("pyproject.toml", r'^version = "[^"]*"'), ("dlgate/__init__.py", r'^__version__ = "[^"]*"')):
        path = root / name
        key = pattern.split(" ")[0].lstrip("^")
        path.write_text(re.sub(pattern, f'{key} = "{version}"', path.read_text(), count=1, flags=re.M))


@pytest.mark.parametrize("change, words", [
    (("## [1.2.0] - 2027-03-04", "## [1.2.0]"), ["section [1.2.0] has no date"]),
    (("## [1.2.0] - 2027-03-04", "## [1.2.0] - 04.03.2027"), ["has date '04.03.2027', not YYYY-MM-DD"]),
    (("## [1.1.0] - 2027-01-02", "## [1.3.0] - 2027-01-02"), ["section [1.3.0] comes after [1.2.0] but is not older"]),
    (("## [1.1.0] - 2027-01-02", "## 1.1.0"), ["heading '## 1.1.0' is not"]),
    (("### Added\n\n- A thing", "- A thing"), []),  # still fine: the section has text
])
def test_check_refuses_a_malformed_changelog(repo, change, words):
    set_version(repo, "1.2.0", CHANGELOG.replace(*change))
    res = run(repo, "check", "--tag", "v1.2.0")
    if words:
        refused(res, *words)
    else:
        assert res.returncode == 0, res.stderr


def test_check_refuses_an_empty_section(repo):
    set_version(repo, "1.3.0", CHANGELOG.replace("## [1.2.0]", "## [1.3.0] - 2027-05-06\n\n## [1.2.0]"))
    refused(run(repo, "check", "--tag", "v1.3.0"), "section [1.3.0] is empty")


def test_check_refuses_missing_files_in_one_line(repo):
    (repo / "CHANGELOG.md").unlink()
    refused(run(repo, "check"), "cannot read", "CHANGELOG.md")


def test_check_dist_wants_exactly_this_versions_sdist_and_wheel(repo, tmp_path):
    dist = tmp_path / "dist"
    dist.mkdir()
    for name in (f"dlgate-{VERSION}.tar.gz", f"dlgate-{VERSION}-py3-none-any.whl"):
        (dist / name).write_bytes(b"x")
    assert run(repo, "check", "--dist", str(dist)).returncode == 0
    (dist / "dlgate-0.0.1-py3-none-any.whl").write_bytes(b"x")
    refused(run(repo, "check", "--dist", str(dist)), "expected exactly")


def test_the_package_builds_under_the_version_check_expects(tmp_path):
    """The real sdist, and the wheel built from it (as `python -m build` does), carry the version."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "dlgate", src / "dlgate", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    dist = tmp_path / "dist"
    dist.mkdir()

    def backend(hook: str, cwd: Path) -> str:
        code = f"import sys, setuptools.build_meta as b; print(b.{hook}(sys.argv[1]))"
        res = subprocess.run([sys.executable, "-c", code, str(dist)], cwd=cwd, capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        return res.stdout.splitlines()[-1]

    sdist = backend("build_sdist", src)
    with tarfile.open(dist / sdist) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    backend("build_wheel", tmp_path / "unpacked" / sdist.removesuffix(".tar.gz"))
    res = subprocess.run([sys.executable, str(TOOL), "check", "--tag", f"v{VERSION}", "--dist", str(dist)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr


# ---------------------------------------------------------------- pin-action


def test_pin_action_rewrites_only_the_image_line(repo):
    before = (repo / "action.yml").read_text()
    res = run(repo, "pin-action", "--image", f"{IMAGE}:{VERSION}")
    assert res.returncode == 0, res.stderr
    after = (repo / "action.yml").read_text()
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(old) == len(new)
    changed = [(a, b) for a, b in zip(old, new) if a != b]
    assert changed == [("  image: Dockerfile\n", f"  image: docker://{IMAGE}:{VERSION}\n")]
    # still a docker action with every input and output; equal apart from the image
    was, now = yaml.safe_load(before), yaml.safe_load(after)
    assert now["runs"] == {"using": "docker", "image": f"docker://{IMAGE}:{VERSION}"}
    now["runs"]["image"] = "Dockerfile"
    assert now == was
    assert set(now["inputs"]) == set(was["inputs"]) and now["outputs"] == was["outputs"]
    # and check confirms the image's tag is the version (and the image, when named)
    res = run(repo, "check", "--tag", f"v{VERSION}", "--action-image")
    assert res.returncode == 0, res.stderr
    assert "and action.yml's image agree" in res.stdout
    assert run(repo, "check", "--action-image", f"docker://{IMAGE}:{VERSION}").returncode == 0
    refused(run(repo, "check", "--action-image", f"ghcr.io/else/where:{VERSION}"), "is not the expected")
    # pinning again (a re-run) gives the same file
    assert run(repo, "pin-action", "--image", f"docker://{IMAGE}:{VERSION}").returncode == 0
    assert (repo / "action.yml").read_text() == after


def test_check_refuses_an_image_of_another_version_or_none(repo):
    refused(run(repo, "check", "--action-image"), "image 'Dockerfile' is not a prebuilt image")
    assert run(repo, "pin-action", "--image", f"{IMAGE}:9.9.9").returncode == 0
    refused(run(repo, "check", "--tag", f"v{VERSION}", "--action-image"), "is tagged 9.9.9, the version is")
    assert run(repo, "pin-action", "--image", f"{IMAGE}:latest").returncode == 0
    refused(run(repo, "check", "--action-image"), "is tagged latest")


@pytest.mark.parametrize("image", ["ghcr.io/Org/dlgate:1.0.0", "ghcr.io/org/dlgate", "dlgate:1.0.0",
                                   "ghcr.io/org/dlgate:1.0.0; rm -rf /", "ghcr.io/org/dlgate:1.0.0\nruns: x"])
def test_pin_action_refuses_a_bad_image_and_leaves_the_file(repo, image):
    before = snapshot(repo)
    refused(run(repo, "pin-action", "--image", image), "is not REGISTRY/NAME:TAG in lower case")
    assert snapshot(repo) == before


def test_pin_action_reads_the_runs_mapping_only(repo):
    path = repo / "action.yml"
    edit(path, "runs:\n  using: docker\n  image: Dockerfile",
         "runs:\n  # image: not this comment\n  using: 'docker'\n  image: \"Dockerfile\"  # built per job\n"
         "  args:\n    - image: not this one")
    assert run(repo, "pin-action", "--image", f"{IMAGE}:{VERSION}").returncode == 0
    doc = yaml.safe_load(path.read_text())
    assert doc["runs"]["image"] == f"docker://{IMAGE}:{VERSION}" and doc["runs"]["args"] == [{"image": "not this one"}]
    edit(path, "using: 'docker'", "using: node20")
    refused(run(repo, "pin-action", "--image", f"{IMAGE}:{VERSION}"), "runs.using is not docker")


# ---------------------------------------------------------------- notes


def test_notes_print_exactly_the_section(repo):
    set_version(repo, "1.2.0")
    res = run(repo, "notes", "1.2.0")
    assert res.returncode == 0, res.stderr
    assert res.stdout == ("### Added\n\n- A thing, with a [link](https://example.org).\n  Continued.\n\n"
                          "### Fixed\n\n- Another.\n")
    # the last section stops before the link definitions
    assert run(repo, "notes", "1.1.0").stdout == "- The older one.\n"
    refused(run(repo, "notes", "1.0.0"), "no section [1.0.0]")
    refused(run(repo, "notes", "Unreleased"), "is not a release version")


def test_notes_of_the_current_version_are_its_changelog_section():
    text = (ROOT / "CHANGELOG.md").read_text()
    start = text.index(f"## [{VERSION}] - ")
    end = text.find("\n## ", start + 1)
    body = text[start:end if end > 0 else len(text)].split("\n", 1)[1].strip("\n") + "\n"
    res = subprocess.run([sys.executable, str(TOOL), "notes", VERSION], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout == body
    assert len(body.splitlines()) > 5


# ---------------------------------------------------------------- prepare, newest


def test_prepare_bumps_every_file_and_dates_the_unreleased_section(repo):
    set_version(repo, "1.2.0")
    res = run(repo, "prepare", "1.3.0", "--date", "2027-06-07")
    assert res.returncode == 0, res.stderr
    assert release.pyproject_version(repo) == release.init_version(repo) == "1.3.0"
    log = (repo / "CHANGELOG.md").read_text()
    assert "## [Unreleased]\n\n## [1.3.0] - 2027-06-07\n\n### Changed\n\n- Something pending.\n" in log
    assert run(repo, "notes", "1.3.0").stdout == "### Changed\n\n- Something pending.\n"
    assert run(repo, "check", "--tag", "v1.3.0").returncode == 0
    # the rest of pyproject.toml is untouched
    assert (repo / "pyproject.toml").read_text() == (ROOT / "pyproject.toml").read_text().replace(
        f'version = "{VERSION}"', 'version = "1.3.0"', 1)


def test_prepare_refuses_and_writes_nothing(repo):
    set_version(repo, "1.2.0")
    before = snapshot(repo)
    refused(run(repo, "prepare", "1.1.5"), "not newer than the current 1.2.0")
    refused(run(repo, "prepare", "1.3"), "is not a release version")
    (repo / "CHANGELOG.md").write_text(CHANGELOG.replace("### Changed\n\n- Something pending.\n", ""))
    before["CHANGELOG.md"] = (repo / "CHANGELOG.md").read_bytes()
    refused(run(repo, "prepare", "1.3.0"), "nor entries under [Unreleased]")
    assert snapshot(repo) == before


@pytest.mark.parametrize("version, tags, want", [
    ("1.2.0", ["v1", "v1.1.0", "v1.2.0", "v1.1.0-action", "v2.0.0"], True),
    ("1.2.0", ["v1", "v1.2.0", "v1.10.0"], False),  # numeric, not text order
    ("1.4.1", ["v1.5.0", "v1.4.1", "v1.4.0"], False),  # a patch to an older line
    ("2.0.0", ["v1.9.0", "v2.0.0", "v2.0.0-action"], True),
    ("0.1.0", [], True),
])
def test_newest_decides_whether_the_major_tags_move(version, tags, want):
    assert release.newest(version, tags) is want
    res = subprocess.run([sys.executable, str(TOOL), "newest", version, *tags], capture_output=True, text=True,
                         timeout=60)
    assert res.stdout == f"{str(want).lower()}\n"


# ---------------------------------------------------------------- the workflow


def _tool(name: str) -> str:
    local = Path(sys.executable).parent / name
    found = shutil.which(name) or (str(local) if local.exists() else None)
    assert found, f"{name} is not installed: `pip install -e .[test]` installs it"
    return found


def workflow() -> dict:
    doc = yaml.safe_load(WORKFLOW.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def steps_text(job: dict) -> str:
    return "\n".join(s.get("run", "") for s in job["steps"])


def test_actionlint_passes_on_the_release_workflow():
    res = subprocess.run([_tool("actionlint"), "-no-color", str(WORKFLOW)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_workflow_runs_on_version_tags_only_with_least_privilege():
    wf = workflow()
    assert wf["on"] == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}
    assert wf["permissions"] == {"contents": "read"}
    assert wf["concurrency"]["cancel-in-progress"] is False
    perms = {name: job.get("permissions") for name, job in wf["jobs"].items()}
    assert perms == {"check": None, "dist": None, "image": {"contents": "read", "packages": "write"},
                     "pypi": {"id-token": "write"}, "release": {"contents": "write"}, "promote": {"packages": "write"}}
    needs = {name: set([job["needs"]] if isinstance(job.get("needs"), str) else job.get("needs", []))
             for name, job in wf["jobs"].items()}
    assert needs == {"check": set(), "image": {"check"}, "dist": {"check"}, "pypi": {"check", "dist", "image"},
                     "release": {"check", "dist", "image", "pypi"}, "promote": {"check", "release"}}
    for name, job in wf["jobs"].items():
        for step in job["steps"]:
            if "uses" in step:
                assert SHA_PIN.fullmatch(step["uses"]), (name, step["uses"])
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is (name == "release"), name


def test_the_workflow_verifies_before_it_publishes_and_pins_what_it_built():
    jobs = workflow()["jobs"]
    assert 'tools/release.py check --tag "$TAG"' in steps_text(jobs["check"])
    assert "git merge-base --is-ancestor" in steps_text(jobs["check"])
    assert jobs["check"]["steps"][0]["with"]["fetch-depth"] == 0  # the tags and the default branch
    assert "echo \"image=ghcr.io/${GITHUB_REPOSITORY,,}\"" in steps_text(jobs["check"])  # ghcr wants lower case
    image = steps_text(jobs["image"])
    assert image.index('docker run --rm --entrypoint dlgate "${IMAGE}:${VERSION}" --version') < \
        image.index('docker push "${IMAGE}:${VERSION}"')
    assert "--password-stdin" in image and "${MAJOR}" not in image  # the major tag moves last, in promote
    assert '--dist dist' in steps_text(jobs["dist"])
    # trusted publishing: an environment, an OIDC token, no password or stored secret
    pypi = jobs["pypi"]
    assert pypi["environment"]["name"] == "pypi"
    publish = [s for s in pypi["steps"] if s.get("uses", "").startswith("pypa/gh-action-pypi-publish@")]
    assert len(publish) == 1 and "password" not in publish[0]["with"]
    assert "secrets." not in yaml.safe_dump(pypi)
    rel = steps_text(jobs["release"])
    order = ['pin-action --image "docker://${IMAGE}:${VERSION}"',
             'check --tag "v${VERSION}" --action-image "docker://${IMAGE}:${VERSION}"',
             "commit --quiet", 'git push origin "refs/tags/v${VERSION}-action"',
             'git push --force origin "refs/tags/v${MAJOR}"', 'tools/release.py notes "$VERSION" > notes.md',
             "gh release create \"v${VERSION}\" --verify-tag"]
    assert [rel.index(x) for x in order] == sorted(rel.index(x) for x in order)
    assert jobs["promote"]["if"] == "needs.check.outputs.newest == 'true'"
    assert 'imagetools create --tag "${IMAGE}:${MAJOR}" "${IMAGE}:${VERSION}"' in steps_text(jobs["promote"])


def test_every_release_py_command_in_the_workflow_exists():
    used = re.findall(r"python tools/release\.py (\S+)", WORKFLOW.read_text())
    assert {"check", "notes", "pin-action", "newest"} <= set(used)
    for cmd in set(used):
        res = subprocess.run([sys.executable, str(TOOL), cmd, "--help"], capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, (cmd, res.stderr)
