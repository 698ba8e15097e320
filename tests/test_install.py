"""Installing the build under test replaces the pinned build instead of mixing with it
(dlgate.install, and the entrypoint's install_compiler / verify_builds / build_table).

Two tiny wheels stand for the case that matters: the pinned release ``apache-fakecomp`` 1.0
and a source-tree build ``fakecomp`` 2.0.dev0, both providing the import package
``fakecomp`` (as ``apache-tvm`` and TVM's own ``tvm`` wheel both provide ``tvm``), each with
a file the other lacks, so that a leftover mix shows. They are installed offline with pip
into a real virtual environment (a copy of one made per session)."""
from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import entrypoint.base
import entrypoint.compiler
import entrypoint.inputs
import entrypoint.plan
import entrypoint.workflow
from dlgate import install
from tests.test_action import TOKEN

PINNED = ("apache-fakecomp", "1.0", "old_only.py")
STAND_IN = ("fakecomp", "2.0.dev0", "new_only.py")


def make_wheel(folder: Path, name: str, version: str, only: str, module_version: str = "") -> Path:
    """A pip-installable wheel of distribution ``name`` providing the package ``fakecomp``
    (``__init__.py`` with ``__version__``, ``core.py``, and the file ``only``)."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    files = {"fakecomp/__init__.py": f"__version__ = {module_version or version!r}\nDIST = {name!r}\n",
             "fakecomp/core.py": f"BUILT_BY = {name!r}\n",
             f"fakecomp/{only}": "X = 1\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: dlgate-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
             f"{info}/top_level.txt": "fakecomp\n"}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    wheel = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return wheel


@pytest.fixture(scope="session")
def template_venv(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("venv") / "template"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True)
    return root


@pytest.fixture
def venv(template_venv, tmp_path, monkeypatch) -> str:
    """A fresh virtual environment with pip (a copy of the session's), offline; its python."""
    root = tmp_path / "venv"
    shutil.copytree(template_venv, root, symlinks=True)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return str(root / "bin" / "python")


@pytest.fixture
def wheels(tmp_path) -> tuple:
    return make_wheel(tmp_path / "wheels", *PINNED), make_wheel(tmp_path / "wheels", *STAND_IN)


def pip(python: str, *args: str) -> None:
    subprocess.run([python, "-m", "pip", "install", "-q", *args], check=True, capture_output=True)


def imported(python: str) -> tuple:
    out = subprocess.run([python, "-c", "import fakecomp, os; print(fakecomp.__version__, fakecomp.DIST, "
                                        "os.path.realpath(fakecomp.__file__))"],
                         check=True, capture_output=True, text=True).stdout.split()
    return tuple(out)


def site_packages(python: str) -> Path:
    return Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip()).resolve()


def installed(python: str) -> dict:
    return {d["key"]: d["version"] for d in install.survey(python)["dists"]}


# ---------------------------------------------------------------- dlgate.install


def test_a_stand_in_of_another_name_replaces_the_pinned_build(venv, wheels):
    pinned, stand_in = wheels
    pip(venv, str(pinned))
    assert imported(venv)[:2] == ("1.0", "apache-fakecomp")
    steps = []
    res = install.replace(venv, [str(stand_in)], run=lambda args, title: steps.append(title) or
                          subprocess.call(args, stdout=subprocess.DEVNULL))
    assert res.rc == 0 and res.targets == ["fakecomp"]
    assert [(d.name, d.version, d.top) for d in res.removed] == [("apache-fakecomp", "1.0", ["fakecomp"])]
    assert steps == ["uninstall before installing", "install"]  # removed first, then installed once
    dists = installed(venv)
    assert "apache-fakecomp" not in dists and dists["fakecomp"] == "2.0.dev0"
    site = site_packages(venv)
    assert imported(venv) == ("2.0.dev0", "fakecomp", str(site / "fakecomp" / "__init__.py"))
    assert not (site / "fakecomp" / "old_only.py").exists() and (site / "fakecomp" / "new_only.py").exists()
    checked = install.verify(venv, res.targets)
    assert checked.problems == []
    assert [(r.dist, r.version, r.module, r.module_version, r.file, r.ok) for r in checked.rows] == \
        [("fakecomp", "2.0.dev0", "fakecomp", "2.0.dev0", str(site / "fakecomp" / "__init__.py"), True)]


def test_installing_both_side_by_side_is_a_mix_that_verify_refuses(venv, wheels):
    """Without the removal (plain pip install of both) the package still imports, the stand-in's
    version even, over the pinned build's leftovers: the check must see it."""
    pinned, stand_in = wheels
    pip(venv, str(pinned))
    pip(venv, str(stand_in))
    site = site_packages(venv)
    assert imported(venv)[:2] == ("2.0.dev0", "fakecomp")  # looks fine
    assert (site / "fakecomp" / "old_only.py").exists() and set(installed(venv)) >= {"fakecomp", "apache-fakecomp"}
    checked = install.verify(venv, ["fakecomp"])
    assert checked.problems == [f"fakecomp in {site} is a mix: apache-fakecomp 1.0 is installed there too; 1 of its "
                                f"files remain, e.g. {site / 'fakecomp' / 'old_only.py'}"]
    assert [r.ok for r in checked.rows] == [False]
    # the command line says so and fails closed
    got = subprocess.run([sys.executable, "-m", "dlgate.install", "--python", venv, str(stand_in)],
                         capture_output=True, text=True, cwd=Path(__file__).parent.parent)
    assert got.returncode == 0, got.stderr  # it repairs: the pinned one is removed, the stand-in reinstalled
    assert "removed first: apache-fakecomp 1.0 (provides fakecomp too)" in got.stdout
    assert f"fakecomp 2.0.dev0: import fakecomp gives 2.0.dev0 from {site / 'fakecomp' / '__init__.py'}" in got.stdout
    assert not (site / "fakecomp" / "old_only.py").exists()


def test_a_requirement_by_name_is_repaired_after_the_install(venv, wheels):
    """A requirement names no packages before pip fetches it: the clash shows after the install,
    and the folder is rebuilt (the other distribution uninstalled, the new one reinstalled)."""
    pinned, _ = wheels
    pip(venv, str(pinned))
    titles = []
    res = install.replace(venv, ["fakecomp==2.0.dev0"], run=lambda args, title: titles.append(title) or
                          subprocess.call(args, stdout=subprocess.DEVNULL))
    assert res.rc == 0 and titles == ["install", "uninstall after installing", "reinstall"]
    assert [d.name for d in res.removed] == ["apache-fakecomp"]
    site = site_packages(venv)
    assert not (site / "fakecomp" / "old_only.py").exists() and (site / "fakecomp" / "core.py").exists()
    assert install.verify(venv, res.targets).problems == []
    assert "apache-fakecomp" not in installed(venv)


def test_shadowing_and_a_wrong_version_are_refused(venv, wheels, tmp_path):
    _, stand_in = wheels
    pip(venv, str(stand_in))
    site = site_packages(venv)
    # a folder fakecomp/ in the working folder (a source tree) comes first on the path
    ws = tmp_path / "ws"
    (ws / "fakecomp").mkdir(parents=True)
    (ws / "fakecomp" / "__init__.py").write_text("__version__ = '2.0.dev0'\n")
    checked = install.verify(venv, ["fakecomp"], cwd=str(ws))
    assert checked.problems == [f"import fakecomp gives {ws.resolve() / 'fakecomp' / '__init__.py'}, not a file of "
                                f"fakecomp 2.0.dev0 just installed in {site}"]
    assert install.verify(venv, ["fakecomp"]).problems == []  # elsewhere, the installed one
    # a module whose __version__ is not its distribution's
    odd = make_wheel(tmp_path / "odd", "fakecomp", "2.0.dev1", "new_only.py", module_version="1.9")
    pip(venv, "--force-reinstall", str(odd))
    assert install.verify(venv, ["fakecomp"]).problems == \
        ["import fakecomp gives version 1.9, but fakecomp is 2.0.dev1"]
    assert install.verify(venv, ["nothing-such"]).problems == [f"nothing-such is not installed for {venv}"]


def test_clashes_only_in_the_folder_pip_installs_into():
    """A second environment (the base build's) sees the image's packages too: a clash there is
    shadowed by the environment's own folder, never uninstalled from the image."""
    dist = {"version": "1.0", "top": ["tvm"]}
    report = {"dirs": ["/base/site"], "dists": [
        dict(dist, name="apache-tvm", key="apache-tvm", location="/image/site"),
        dict(dist, name="tvm-old", key="tvm-old", location="/base/site"),
        dict(dist, name="tvm", key="tvm", location="/base/site"),
        dict(dist, name="numpy", key="numpy", location="/base/site", top=["numpy"])]}
    assert [d.name for d in install.clashes(report, {"tvm": ["tvm"]})] == ["tvm-old"]
    assert install.clashes(report, {"apache-tvm": []}) == []


def test_top_level_packages_of_a_distribution():
    files = ["tvm/__init__.py", "tvm/relax/__init__.py", "google/protobuf/__init__.py", "six.py",
             "_cext.cpython-311-x86_64-linux-gnu.so", "tests/__init__.py", "x-1.0.dist-info/RECORD",
             "x-1.0.data/purelib/extra/__init__.py", "x-1.0.data/scripts/run", "../../bin/tool"]
    assert install.tops(files) == ["tvm", "six", "_cext", "extra"]  # google: a namespace package
    assert install.tops([], "tvm\ngoogle\n") == ["tvm", "google"]  # no RECORD: top_level.txt
    assert install.canonical("Apache_TVM.ffi") == "apache-tvm-ffi"


def test_wheel_info(wheels, tmp_path):
    w = install.wheel_info(str(wheels[0]))
    assert (w.name, w.key, w.version, w.top) == ("apache-fakecomp", "apache-fakecomp", "1.0", ["fakecomp"])
    bad = tmp_path / "bad-1.0-py3-none-any.whl"
    bad.write_bytes(b"not a zip")
    assert install._readable_wheel(str(bad)) is None  # pip says why it cannot install it


# ---------------------------------------------------------------- through the entrypoint


def _env(tmp_path: Path) -> dict:
    summary = tmp_path / "step_summary"
    summary.write_text("")
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(tmp_path / "wheels"), "GITHUB_STEP_SUMMARY": str(summary),
            "INPUT_GITHUB-TOKEN": TOKEN, "GITHUB_TOKEN": TOKEN}


def test_the_gate_imports_the_stand_in_and_says_so(venv, wheels, tmp_path, capfd):
    pinned, stand_in = wheels
    pip(venv, str(pinned))
    ws = tmp_path / "ws"
    ws.mkdir()
    env = _env(tmp_path)
    p = entrypoint.plan.Plan([], "o", requirements=entrypoint.plan.compiler_requirements(os.path.relpath(stand_in, ws), str(ws)))
    ctx = entrypoint.inputs.Context(workspace=str(ws))
    assert entrypoint.compiler.install_compiler(p, ctx, env, python=venv) == 0
    assert entrypoint.compiler.verify_builds(p, ctx, env, None, None) == 0
    out = capfd.readouterr().out
    site = site_packages(venv)
    init = site / "fakecomp" / "__init__.py"
    assert "::group::dlgate: install the compiler under test" in out
    assert "dlgate: removed apache-fakecomp 1.0 before installing the compiler under test" in out
    assert f"dlgate: build under test: fakecomp 2.0.dev0, import fakecomp gives 2.0.dev0 from {init}" in out
    summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert "### dlgate: the builds tested" in summary
    assert f"| build under test | fakecomp | 2.0.dev0 | `fakecomp` | 2.0.dev0 | `{init}` | ok |" in summary
    assert "Uninstalled first (build under test): apache-fakecomp 1.0, which provides `fakecomp` under another name." \
        in summary
    assert imported(venv)[:2] == ("2.0.dev0", "fakecomp") and TOKEN not in out + summary


def test_the_gate_refuses_a_mix_with_exit_status_4(venv, wheels, tmp_path, capfd):
    pinned, stand_in = wheels
    pip(venv, str(pinned))
    pip(venv, str(stand_in))  # as a plain pip install would leave it
    env = _env(tmp_path)
    p = entrypoint.plan.Plan([], "o", installed=install.Installed(venv, ["fakecomp"]))
    assert entrypoint.compiler.verify_builds(p, entrypoint.inputs.Context(workspace=str(tmp_path)), env, None, None) == entrypoint.workflow.EXIT_CANNOT_RUN
    errors = [x for x in capfd.readouterr().out.splitlines() if x.startswith("::error")]
    assert len(errors) == 1
    assert errors[0].startswith("::error title=dlgate%3A the build under test is not what imports::build under test: "
                                "fakecomp in ")
    assert "is a mix: apache-fakecomp 1.0 is installed there too" in errors[0]
    assert "| **not the installed build** |" in Path(env["GITHUB_STEP_SUMMARY"]).read_text()


def test_build_table_escapes_cells():
    row = install.Row("a|b", "1`2", "m", "/x|y\nz", "", ok=True)
    table = entrypoint.compiler.build_table([("base build", row)], [])
    assert "| base build | a\\|b | 1\\`2 | `m` | - | `/x\\|y z` | ok |" in table
    assert entrypoint.compiler.build_table([], []).startswith("### dlgate: the builds tested")


def test_the_base_build_is_verified_and_tabled_too(wheels, tmp_path, capfd):
    """base-compiler goes through the same install and check, in its own environment."""
    _, stand_in = wheels
    env = _env(tmp_path)
    p = entrypoint.plan.Plan([], "o", base_requirements=[str(stand_in)])
    ctx = entrypoint.inputs.Context(workspace=str(tmp_path))
    rc, base = entrypoint.base.create_base_env(p, ctx, env)
    try:
        assert rc == 0, capfd.readouterr().out
        assert base.installed.targets == ["fakecomp"] and base.installed.removed == []
        assert entrypoint.compiler.verify_builds(p, ctx, env, base, None) == 0
        init = site_packages(base.python) / "fakecomp" / "__init__.py"
        assert str(init).startswith(os.path.realpath(base.root))
        assert f"dlgate: base build: fakecomp 2.0.dev0, import fakecomp gives 2.0.dev0 from {init}" in \
            capfd.readouterr().out
        assert f"| base build | fakecomp | 2.0.dev0 | `fakecomp` | 2.0.dev0 | `{init}` | ok |" in \
            Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    finally:
        shutil.rmtree(base.root, ignore_errors=True)
