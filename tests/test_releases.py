"""The regression range among published releases (``dlgate bisect-releases``): bisection over
fake version runners, the classification of repro.py's answers, and a real run of pip against a
local package index of three small wheels (one bug introduced in 1.1), with no network."""
from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import subprocess
import sys
import zipfile

import pytest

from dlgate.cli import main
from dlgate.github import releases as R

#: ``pip index versions onnxruntime`` as pip 25 prints it (this machine, Python 3.11).
PIP_OUTPUT = """onnxruntime (1.32.0)
Available versions: 1.32.0, 1.31.1, 1.31.0, 1.30.0, 1.29.0, 1.28.0, 1.27.0, 1.26.0, 1.25.1, 1.25.0, 1.24.4, \
1.24.3, 1.24.2, 1.24.1, 1.23.2, 1.23.1, 1.23.0, 1.22.1, 1.22.0, 1.21.1, 1.21.0, 1.20.1, 1.20.0, 1.19.2, 1.19.0, \
1.18.1, 1.18.0, 1.17.3, 1.17.1, 1.17.0, 1.16.3, 1.16.2, 1.16.1, 1.16.0, 1.15.1, 1.15.0
  INSTALLED: 1.32.0
  LATEST:    1.32.0
"""


def _runner(versions, first_bad=None, other=(), errors=()):
    """probe(version) for a bug that came in at ``first_bad`` (None: never), with releases that
    fail otherwise or cannot be installed; records what it was asked."""
    asked = []

    def probe(v):
        asked.append(v)
        i = versions.index(v)
        if v in errors:
            return R.Probe(v, R.ERROR, 0.1, "cannot install")
        if v in other:
            return R.Probe(v, R.OTHER, 0.1, "BUG: Fail: unsupported opset")
        bug = first_bad is not None and i >= versions.index(first_bad)
        return R.Probe(v, R.BUG if bug else R.CLEAN, 0.1, "BUG: wrong result" if bug else "OK: ...")

    return probe, asked


def test_pip_index_output_is_parsed_and_filtered():
    versions = R.parse_index_versions(PIP_OUTPUT)
    assert versions[0] == "1.15.0" and versions[-1] == "1.32.0" and len(versions) == 36
    assert R.candidates(versions, "1.24.4")[-1] == "1.24.4" and "1.25.0" not in R.candidates(versions, "1.24.4")
    # a development build of 1.33 counts every release; of 1.32, not 1.32.0 itself
    assert R.candidates(versions, "1.33.0.dev20261201")[-1] == "1.32.0"
    assert R.candidates(versions, "1.32.0.dev1")[-1] == "1.31.1"
    assert R.candidates(versions + ["1.33.0rc1"], None)[-1] == "1.32.0"
    assert R.candidates(versions, "1.32.0", since="1.30.0") == ["1.30.0", "1.31.0", "1.31.1", "1.32.0"]
    with pytest.raises(R.ReleaseError):
        R.parse_index_versions("ERROR: No matching distribution found for nothing")


@pytest.mark.parametrize("n", [1, 2, 3, 7, 36, 100])
def test_bisection_finds_the_first_bad_release_in_log2_probes(n):
    versions = [f"1.{k}.0" for k in range(n)]
    for bad in range(n):
        probe, asked = _runner(versions, versions[bad])
        res = R.bisect(versions, probe, max_probes=50)
        assert res["oldest_with"] == versions[bad] and res["determined"]
        assert res["newest_without"] == (versions[bad - 1] if bad else None)
        assert len(asked) <= math.ceil(math.log2(n + 1)) + 1, (n, bad, asked)
        assert [p["version"] for p in res["probes"]] == asked


def test_a_bug_in_no_release_and_an_undecided_range():
    versions = ["1.0", "1.1", "1.2"]
    probe, asked = _runner(versions, None)
    res = R.bisect(versions, probe)
    assert asked == ["1.2"] and res["newest_without"] == "1.2" and res["oldest_with"] is None and res["determined"]
    assert "No published release of cc has the bug" in R.summary("cc", "1.3.dev0", res)
    probe, asked = _runner(versions, "1.1", errors=("1.2",))  # the newest cannot be installed
    res = R.bisect(versions, probe)
    assert res["oldest_with"] == "1.1" and res["newest_without"] == "1.0" and asked == ["1.2", "1.1", "1.0"]
    probe, _ = _runner(versions, "1.0", errors=versions)
    res = R.bisect(versions, probe)
    assert res["oldest_with"] is None and res["newest_without"] is None and not res["determined"]
    assert R.summary("cc", "1.2", res).startswith("No release of cc could be tested")
    versions = [f"1.{k}" for k in range(40)]
    probe, asked = _runner(versions, "1.30")
    res = R.bisect(versions, probe, max_probes=3)
    assert asked == ["1.39", "1.19", "1.29"] and not res["determined"]
    assert (res["newest_without"], res["oldest_with"]) == ("1.29", "1.39")  # the range known so far
    assert "(releases between them were not tested)" in R.summary("cc", "1.39", res)


def test_releases_that_fail_otherwise_bound_the_search_from_below():
    versions = [f"1.{k}" for k in range(20)]
    old = tuple(versions[:12])  # too old for the model's opset: they fail another way
    probe, asked = _runner(versions, "1.15", other=old)
    res = R.bisect(versions, probe)
    assert res["oldest_with"] == "1.15" and res["newest_without"] == "1.14" and res["determined"]
    probe, asked = _runner(versions, "1.0", other=old)  # buggy wherever the model runs at all
    res = R.bisect(versions, probe)
    assert res["oldest_with"] == "1.12" and res["fails_otherwise"] == "1.11" and res["determined"]
    assert "1.12 is the oldest release with the bug that runs the model; 1.11 fails otherwise" in \
        R.summary("cc", "1.19", res)


@pytest.mark.parametrize("verdict,detail,rc,out,outcome", [
    ("mismatch", "", 1, "BUG: wrong result (mismatch)\n  output 0: ...", R.BUG),
    ("mismatch", "", 0, "OK: the outputs match the reference", R.CLEAN),
    ("mismatch", "", 1, "BUG: RuntimeError: opset 28 unsupported", R.OTHER),
    ("compile_error", "TypeError: Binary operators", 1, "BUG: TypeError: Binary operators must", R.BUG),
    ("compile_error", "TypeError: Binary operators", 1, "BUG: InternalError: Check failed", R.OTHER),
    ("compile_error", "NotImplemented: [ONNXRuntimeError] : 9", 1, "BUG: Fail: [ONNXRuntimeError] : 1", R.OTHER),
    ("compile_error", "an error without a type", 1, "BUG: KeyError: 'num_heads'", R.BUG),
    ("run_error", "", 1, "BUG: wrong result (run_error)", R.OTHER),
    ("crash", "killed by SIGSEGV", -11, "", R.BUG),
    ("mismatch", "", -11, "", R.OTHER),
    ("mismatch", "", 1, "Traceback ...\nImportError: numpy.core.multiarray failed to import", R.ERROR),
])
def test_what_repro_py_said_is_classified(verdict, detail, rc, out, outcome):
    assert R.classify(verdict, detail, rc, out)[0] == outcome


# ---- a real run: pip, a local package index, three releases --------------------------------------

REPRO = '''import sys
import fakecc
if fakecc.add(2, 2) != 4:
    print("BUG: wrong result (mismatch)")
    print("  output 0: got %r, expected 4" % fakecc.add(2, 2))
    sys.exit(1)
print("OK: the outputs match the reference")
'''


def _wheel(dist: str, version: str, source: str, folder: str) -> str:
    """A pure-Python wheel of module ``fakecc`` (PEP 427: the module, METADATA, WHEEL, RECORD)."""
    name = f"{dist}-{version}-py3-none-any.whl"
    info = f"{dist}-{version}.dist-info"
    files = {"fakecc.py": source.encode(),
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: dlgate-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}

    def digest(data):
        return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

    record = "".join(f"{k},{digest(v)},{len(v)}\n" for k, v in files.items()) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(os.path.join(folder, name), "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
        z.writestr(f"{info}/RECORD", record)
    return name


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """A PEP 503 simple index on disk: dlgate-fakecc 1.0 (right), 1.1 and 1.2 (add is off by one)."""
    root = tmp_path_factory.mktemp("index")
    pkg = root / "simple" / "dlgate-fakecc"
    pkg.mkdir(parents=True)
    links = []
    for version, body in (("1.0", "a + b"), ("1.1", "a + b + 1"), ("1.2", "a + b + 1")):
        name = _wheel("dlgate_fakecc", version, f"def add(a, b):\n    return {body}\n", str(pkg))
        links.append(f'<a href="{name}">{name}</a>')
    (pkg / "index.html").write_text("<html><body>" + "".join(links) + "</body></html>\n")
    (root / "simple" / "index.html").write_text('<html><body><a href="dlgate-fakecc/">dlgate-fakecc</a></body></html>\n')
    return (root / "simple").as_uri()


def _bundle(folder, version="1.2", verdict="mismatch"):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "repro.py"), "w") as f:
        f.write(REPRO)
    with open(os.path.join(folder, "repro.json"), "w") as f:
        json.dump({"verdict": verdict, "detail": "", "backend": "fakecc[cpu]",
                   "versions": {"name": "fakecc", "version": version}}, f)
    return str(folder)


def test_a_real_bisection_installs_releases_from_a_package_index(index, tmp_path, capsys):
    repro = _bundle(tmp_path / "repro")
    envs = str(tmp_path / "envs")
    # no network: only the local index, no other index or link folder pip may be configured with
    env = dict(os.environ, PIP_EXTRA_INDEX_URL="", PIP_FIND_LINKS="", PIP_NO_INDEX="")
    versions = R.list_releases("dlgate-fakecc", index_url=index,
                               run=lambda cmd, **kw: subprocess.run(cmd, env=env, **kw))
    assert versions == ["1.0", "1.1", "1.2"]
    code = main(["bisect-releases", repro, "--package", "dlgate-fakecc", "--index-url", index, "--envs", envs,
                 "--versions", *versions])
    out = json.load(open(os.path.join(repro, "bisect.json")))
    assert code == 0 and out["newest_without"] == "1.0" and out["oldest_with"] == "1.1" and out["determined"]
    assert [p["version"] for p in out["probes"]] == ["1.2", "1.0", "1.1"]
    assert [p["outcome"] for p in out["probes"]] == ["bug", "clean", "bug"]
    assert out["probes"][0]["line"] == "BUG: wrong result (mismatch)"
    assert out["summary"].startswith("dlgate-fakecc 1.1 is the oldest release with the bug; 1.0 is the newest")
    assert sorted(os.listdir(envs)) == ["dlgate-fakecc-1.0", "dlgate-fakecc-1.1", "dlgate-fakecc-1.2", "scratch"]
    err = capsys.readouterr().err
    assert "dlgate bisect-releases: dlgate-fakecc 1.2: bug in" in err
    # found on a development build: no release has it yet when the newest is clean
    repro2 = _bundle(tmp_path / "repro2", version="1.1.dev3")
    assert main(["bisect-releases", repro2, "--package", "dlgate-fakecc", "--index-url", index, "--envs", envs,
                 "--versions", *versions]) == 0
    out = json.load(open(os.path.join(repro2, "bisect.json")))
    assert out["releases"] == ["1.0"] and out["newest_without"] == "1.0" and out["oldest_with"] is None


def test_a_release_that_cannot_be_installed_is_skipped(index, tmp_path):
    repro = _bundle(tmp_path / "repro", version="1.3")  # listed, but the index holds no 1.3
    out = R.bisect_releases(repro, "dlgate-fakecc", str(tmp_path / "envs"), index_url=index,
                            versions=["1.0", "1.1", "1.2", "1.3"], log=lambda m: None)
    assert out["probes"][0]["version"] == "1.3" and out["probes"][0]["outcome"] == R.ERROR
    assert out["probes"][0]["line"].startswith("cannot install")
    assert out["oldest_with"] == "1.1" and out["newest_without"] == "1.0"


def test_bad_arguments_are_one_line_and_exit_2(tmp_path, capsys):
    assert main(["bisect-releases", str(tmp_path)]) == 2
    assert "not a reduced repro's folder" in capsys.readouterr().err
    repro = _bundle(tmp_path / "r")
    assert main(["bisect-releases", repro]) == 2  # fakecc: no package known for it
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "give --package" in err
    assert main(["bisect-releases", repro, "--package", "x", "--max-probes", "0"]) == 2


def test_a_real_pip_index_versions_call():
    """The package index as pip is configured here (skipped without one)."""
    try:
        versions = R.list_releases("onnx")
    except (R.ReleaseError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"no package index reachable: {e}")
    assert len(versions) >= 1 and all(v[0].isdigit() for v in versions)
    from packaging.version import Version

    assert [Version(v) for v in versions] == sorted(Version(v) for v in versions)
    assert sys.version_info >= (3, 8)
