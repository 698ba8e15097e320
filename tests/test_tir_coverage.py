"""Per-program coverage of a gcc-instrumented library as the TIR loop's feedback, on a real
library: a small C library compiled here with ``--coverage`` (its branches depend on its
input), measured in this process and in a TIR worker, where a pass of the program's build
calls it as TVM's passes run code of an instrumented ``libtvm``."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from dlgate.tir import coverage as COV

if not (shutil.which("gcc") and shutil.which("gcov")):
    pytest.skip("gcc and gcov are needed to build an instrumented library", allow_module_level=True)

SOURCE = """
int classify(int x) {
  if (x > 10) {
    if (x > 100)
      return 3;
    return 2;
  }
  if (x < 0)
    return -1;
  return 0;
}
"""
#: The lines of SOURCE that only one input class reaches.
RETURN_3, RETURN_2, RETURN_0 = 5, 6, 10


def _gcc(*args, cwd):
    subprocess.run(["gcc", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    """``hooked``: compiled with --coverage and linked exporting the gcov hooks; ``plain``:
    --coverage without them; ``bare``: no coverage at all; ``elsewhere``: a copy of the
    objects in another folder (the hooked library's counters go where it was built)."""
    d = tmp_path_factory.mktemp("covlib")
    (d / "obj" / "src").mkdir(parents=True)  # objects below the build folder, as CMake lays them
    (d / "cov.c").write_text(SOURCE)
    _gcc("--coverage", "-fPIC", "-c", "cov.c", "-o", "obj/src/cov.o", cwd=d)
    _gcc("--coverage", "-shared", "obj/src/cov.o", "-o", "libhooked.so", *COV.LINK_FLAGS.split(), cwd=d)
    _gcc("--coverage", "-shared", "obj/src/cov.o", "-o", "libplain.so", cwd=d)
    _gcc("-shared", "-fPIC", "cov.c", "-o", "libbare.so", cwd=d)
    shutil.copytree(d / "obj", d / "elsewhere" / "build" / "obj")
    (d / "empty").mkdir()
    return {"hooked": str(d / "libhooked.so"), "plain": str(d / "libplain.so"), "bare": str(d / "libbare.so"),
            "objects": str(d / "obj"), "elsewhere": str(d / "elsewhere" / "build" / "obj"), "empty": str(d / "empty")}


def _lines(features: set) -> set:
    return {int(f.rsplit(":", 1)[1]) for f in features if f.startswith("cov:line:")}


def test_coverage_differs_by_input_and_a_reset_separates_programs(libs):
    import ctypes

    c = COV.Collector(libs["hooked"], libs["objects"])
    lib = ctypes.CDLL(libs["hooked"])
    small = c.measure(lambda: lib.classify(5))
    big = c.measure(lambda: lib.classify(500))
    assert small[0] == 0 and big[0] == 3
    small, big = set(small[1]["features"]), set(big[1]["features"])
    assert RETURN_0 in _lines(small) and RETURN_3 not in _lines(small)
    assert RETURN_3 in _lines(big) and RETURN_0 not in _lines(big) and RETURN_2 not in _lines(big)
    assert any(f.startswith("cov:branch:cov.c:") for f in big - small)
    # the first program's counts do not reach the second's: reset between them
    lib.classify(-4)  # run outside any measurement: reset away too
    again = set(c.measure(lambda: lib.classify(500))[1]["features"])
    assert again == big
    # the build folder is never written: the counters went to the collector's folder
    assert not [n for _, _, ns in os.walk(libs["objects"]) for n in ns if n.endswith(".gcda")]
    # a failing program's counters are still written, and its exception raised
    with pytest.raises(ZeroDivisionError):
        c.measure(lambda: (lib.classify(50), 1 / 0))
    assert not [n for _, _, ns in os.walk(c.folder) for n in ns if n.endswith(".gcda")]


def test_a_library_without_counters_is_refused(libs):
    for name in ("plain", "bare"):
        with pytest.raises(COV.CoverageError, match="exports no __gcov_reset / __gcov_dump: link it with --coverage"):
            COV.Collector(libs[name], libs["objects"])
    with pytest.raises(COV.CoverageError, match="wrote no gcov counters under"):
        COV.Collector(libs["hooked"], libs["elsewhere"])
    assert COV.check_settings(None, None) is None
    assert "go together" in COV.check_settings(libs["hooked"], None)
    assert "no .gcno file" in COV.check_settings(libs["hooked"], libs["empty"])
    assert "is not a file" in COV.check_settings("/nonexistent/libtvm.so", libs["objects"])


def test_the_config_refuses_half_a_coverage_setting(libs):
    from dlgate.gate import config as C

    with pytest.raises(C.ConfigError, match="tir_coverage_library and tir_coverage_objects go together"):
        C.build({"tir_coverage_library": libs["hooked"]}, "c.yaml")
    cfg = C.build({"tir_coverage_library": libs["hooked"], "tir_coverage_objects": libs["objects"]}, "c.yaml")
    assert cfg.tir_coverage_objects == libs["objects"]
    assert cfg.fingerprint() != C.build({}, "c.yaml").fingerprint()


# -- in a TIR worker, through the oracles --------------------------------------------------------
PROGRAM = """# from tvm.script import tirx as T

@T.prim_func
def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        B[i] = A[i] * T.float32({value})
"""
PASS = "tests.tir_cov_pass:classify_constant"


def module_text(func_text: str) -> str:
    """A program as the corpus holds it: its module as TVM prints it."""
    import tvm

    return tvm.IRModule({"main": tvm.script.from_source(func_text)}).script()


@pytest.fixture(scope="module")
def pool(libs):
    pytest.importorskip("tvm")
    from dlgate.exec.worker import Pool

    old = os.environ.get("DLGATE_TEST_COV_LIB")
    os.environ["DLGATE_TEST_COV_LIB"] = libs["hooked"]  # the worker's environment is the gate's at its start
    try:
        with Pool(timeout_s=120) as p:
            yield p
    finally:
        if old is None:
            os.environ.pop("DLGATE_TEST_COV_LIB", None)
        else:
            os.environ["DLGATE_TEST_COV_LIB"] = old


def _via(pool, libs, library):
    from dlgate.backends.base import BackendSpec
    from dlgate.gate.config import Campaign
    from dlgate.gate.run.tir import _Via, coverage_spec
    from dlgate.tir.build import SPEC

    cfg = Campaign(tir_coverage_library=library, tir_coverage_objects=libs["objects"])
    spec = coverage_spec(cfg, BackendSpec(SPEC.name))
    return _Via(pool, spec), cfg


def test_the_loop_counts_a_program_new_on_coverage_alone(pool, libs):
    from dlgate.gate.run.tir import covered
    from dlgate.tir import oracle as O
    from dlgate.tir import passes as P
    from dlgate.tir.feedback import Corpus, Entry, features, pass_features
    from dlgate.tir.fuzz import Proposal, update
    from dlgate.tir.program import Program

    via, _ = _via(pool, libs, libs["hooked"])
    passes = list(P.minimal()) + [PASS]
    found = {}
    for value in ("5.0", "500.0"):
        text = module_text(PROGRAM.format(value=value))
        c = O.check(via, text, passes, seed=3, interp=False, coverage=True)
        assert c.verdict.kind == O.OK_KIND, c.verdict
        assert c.outcomes["minimal"].feedback is None  # only the build under test is measured
        found[value] = (Program(text), features(Program(text).func()) | pass_features(passes),
                        covered(c.outcomes["mutated"], 0))
    (p5, ir5, cov5), (p500, ir500, cov500) = found["5.0"], found["500.0"]
    assert ir5 == ir500  # the IR features alone cannot tell the two programs apart
    assert RETURN_0 in _lines(cov5) and RETURN_3 in _lines(cov500) and cov5 != cov500
    # TVM's own code is measured too where the library is TVM's: here the pass's library only
    assert all(":cov.c:" in f for f in cov5 | cov500)

    corpus = Corpus()
    corpus.observe(ir5 | cov5)
    corpus.add(Entry(p5, tuple(passes), 0, "seed"))
    step = Proposal(0, 0, "ir", p500, tuple(passes), "replace", "ok")
    new = corpus.observe(ir500 | cov500)
    assert new and all(f.startswith("cov:") for f in new)
    assert update(corpus, step, "ok", new) == "kept" and len(corpus.entries) == 2
    # without coverage the same step stalls
    bare = Corpus()
    bare.observe(ir5)
    bare.add(Entry(p5, tuple(passes), 0, "seed"))
    assert update(bare, step, "ok", bare.observe(ir500)) == "stalled"


def test_a_worker_without_counters_cannot_start(pool, libs):
    from dlgate.gate.run.tir import preflight_coverage

    via, cfg = _via(pool, libs, libs["plain"])
    w = pool.get(via.spec)
    assert not w.start()
    assert "exports no __gcov_reset / __gcov_dump" in w.unavailable
    cfg = type(cfg)(backends=["tvm"], tir_coverage_library=libs["plain"], tir_coverage_objects=libs["objects"])
    said = preflight_coverage(pool, cfg)
    assert list(said) == [f"the TIR coverage build ({libs['plain']})"]
    assert "link it with --coverage -Wl,-u,__gcov_dump" in next(iter(said.values()))
