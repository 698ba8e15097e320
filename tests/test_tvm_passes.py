"""TVM repros maintainers act on: a planted Relax pass that miscompiles only symbolic shapes
is caught on the direct path's symbolic cases and silent on static ones; a TVM finding's
pass list is reduced to that one pass plus the lowering the build needs, on the direct and
the importer path; and its ``repro_tvmscript.py`` (TVMScript ``@I.ir_module`` plus the
passes) fails in a clean interpreter that imports neither dlgate, onnx nor PyTorch, and
passes without the planted pass. A correct compiler gets no pass list and no script."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402

from dlgate.backends.base import BackendSpec, Model  # noqa: E402
from dlgate.backends.tvm import TVM  # noqa: E402
from dlgate.backends.tvm_passes import (LOWERING, PIPELINE_PASSES, check_pass_names, module_source,  # noqa: E402
                                        parses_back)
from dlgate.backends.tvm_relax import TVMRelax, structure_seed  # noqa: E402
from dlgate.case import make_case  # noqa: E402
from dlgate.check import CheckConfig, check, prepare  # noqa: E402
from dlgate.cli import main  # noqa: E402
from dlgate.exec.worker import Pool  # noqa: E402
from dlgate.graph.generator import GenConfig, Generator  # noqa: E402
from dlgate.materialize.relax.lowerings import covered  # noqa: E402
from dlgate.materialize.relax.module import to_relax  # noqa: E402
from dlgate.materialize.torch_model import run_numpy  # noqa: E402
from dlgate.oracle import verdict as V  # noqa: E402
from dlgate.oracle.compare import compare  # noqa: E402
from dlgate.reduce.bundle import tvm_repro  # noqa: E402
from dlgate.reduce.passes import _ddmin, sequence  # noqa: E402
from dlgate.reduce.tvmscript import SCRIPT, write_tvmscript  # noqa: E402
from tests.relax_faults import shift_symbolic_results, symbolic  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAULT = "tests.relax_faults:shift_symbolic_results"
#: Small element-wise graphs of the covered operators, every one dynamic.
OPS = ("Add", "Mul", "Sigmoid", "Exp", "Neg", "Abs", "Tanh", "Relu")


def _prepared(gen: Generator, campaign: str, index: int):
    c = make_case(gen, "tvmpasses", campaign, index)
    return prepare(c.meta(), c.graph, c.model_bytes)


def _run(backend, p) -> list:
    return backend.run(backend.compile(Model(p.model, p.graph)), p.inputs)


# -- the pass table and the lowering floor ------------------------------------------------------
@tvm.instrument.pass_instrument
class _Trace:
    """The names of the passes a pipeline runs at its second level (inside its Sequential)."""

    def __init__(self):
        self.depth, self.names = 0, []

    def run_before_pass(self, mod, info):
        if self.depth == 2:
            self.names.append(info.name)
        self.depth += 1

    def run_after_pass(self, mod, info):
        self.depth -= 1


def test_the_pass_table_is_what_tvm_runs():
    """Each pipeline traced with a pass instrument runs exactly the table's passes, in order;
    each name makes a pass; a bad name is refused in words."""
    gen = Generator(GenConfig(ops=OPS, max_nodes=4, dtypes=("float32",)))
    p = _prepared(gen, "table", 0)
    mod = to_relax(p.graph, structure_seed(p.graph))
    target = tvm.target.Target("llvm")
    for name, pipe in (("default_build", relax.get_pipeline("default_build")),
                       ("target-default", relax.get_default_pipeline(target))):
        trace = _Trace()
        with tvm.transform.PassContext(instruments=[trace]), target:
            pipe(mod)
        assert tuple(trace.names) == PIPELINE_PASSES[name], name
    check_pass_names(["FoldConstant", FAULT])
    for bad in ("FoldConstant", ["Fold Constant"], [":f"], ["a.b:"]):
        with pytest.raises(ValueError, match="option 'passes'"):
            check_pass_names(bad)
    with pytest.raises(ValueError, match="give one"):
        TVM.check_options({"passes": ["LegalizeOps"], "extra_passes": [FAULT]})
    for cls in (TVM, TVMRelax):  # a campaign may name the option on either path
        cls.check_options({"passes": ["LegalizeOps", FAULT], "record_rewrites": False})
        with pytest.raises(ValueError, match="option 'passes'"):
            cls.check_options({"passes": "LegalizeOps"})


def test_the_lowering_alone_builds_right_and_each_of_its_passes_is_needed():
    """The floor a reduction keeps: LOWERING alone compiles every case of a small batch
    (static and symbolic) to the right answer, and without any one of its passes some case
    no longer builds or runs right."""
    gen = Generator(GenConfig(ops=covered(), max_nodes=5, dtypes=("float32",), dynamic_share=0.5))
    cases = []
    for i in range(16):
        p = _prepared(gen, "floor", i)
        try:
            to_relax(p.graph, structure_seed(p.graph))
        except NotImplementedError:
            continue
        cases.append((p, run_numpy(p.graph, p.inputs)))
        if len(cases) == 5 and any(q.graph.dynamic for q, _ in cases):
            break
    assert any(p.graph.dynamic for p, _ in cases) and any(not p.graph.dynamic for p, _ in cases)
    floor = [n for n in PIPELINE_PASSES["target-default"] if n in LOWERING]

    def right(passes, p, ref) -> bool:
        b = TVMRelax(record_rewrites=False, passes=passes)
        try:
            return compare(ref, _run(b, p)).ok
        except Exception:  # noqa: BLE001 - a build that fails is what is asked
            return False

    for p, ref in cases:
        assert right(floor, p, ref), p.id
    for name in floor:
        assert not all(right([n for n in floor if n != name], p, ref) for p, ref in cases), name


def test_ddmin_finds_a_one_minimal_list_deterministically():
    tried = []

    def fails(sub):
        tried.append(tuple(sub))
        return {3, 7} <= set(sub)

    state = {"best": list(range(12))}
    got = _ddmin(list(range(12)), fails, [], lambda s: [str(x) for x in s], state)
    assert got == [3, 7] and state["best"] == [3, 7]
    again = []
    assert _ddmin(list(range(12)), lambda s: again.append(tuple(s)) or {3, 7} <= set(s), [], str, {}) == [3, 7]
    assert again == tried  # the same outcomes give the same candidates in the same order
    assert _ddmin(list(range(12)), lambda s: 5 in s, [], str, {}) == [5]


# -- the TVMScript form parses back ----------------------------------------------------------------
def test_the_modules_print_as_tvmscript_that_parses_back():
    """The direct modules (private functions, call_tir PrimFuncs, symbolic shapes and
    match_cast) and the importer's, with tensor constants: each printed text, with C bound
    to its constants, parses back to a structurally equal module. TVM 0.27's own printout
    does not parse back where a PrimFunc's shape is symbolic (the text is mended)."""
    from tvm.relax.frontend.onnx import from_onnx
    import onnx

    gen = Generator(GenConfig(ops=covered(), max_nodes=8, dynamic_share=0.5))
    seen = {"consts": 0, "prim_symbolic": 0, "importer": 0, "direct": 0}
    for i in range(30):
        c = make_case(gen, "tvmpasses", "print", i)
        mods = []
        try:
            mods.append(("direct", to_relax(c.graph, structure_seed(c.graph))))
        except NotImplementedError:
            pass
        try:
            mods.append(("importer", from_onnx(onnx.load_from_string(c.model_bytes), keep_params_in_input=False)))
        except Exception:  # noqa: BLE001 - an importer refusal is not what is tested here
            pass
        for path, mod in mods:
            text, values = module_source(mod)
            assert "metadata[" not in text
            parses_back(mod, text, values)
            seen[path] += 1
            seen["consts"] += bool(values)
            seen["prim_symbolic"] += "__te_" in text
    assert seen["direct"] >= 15 and seen["importer"] >= 15, seen
    assert seen["consts"] >= 10 and seen["prim_symbolic"] >= 1, seen


@pytest.mark.parametrize("value", ["-inf", "inf", "nan"])
def test_a_non_finite_scalar_constant_prints_as_tvmscript_that_parses_back(value):
    """TVM 0.27 prints a non-finite scalar constant as a string, ``R.const("-inf", "float32")``,
    which its own parser refuses ("value has to be scalar or Tensor"): a NonMaxSuppression
    with a score_threshold of -inf had no TVMScript repro. The text writes it as a float, and
    the legalized PrimFunc's ``T.float16("nan")`` parses back as it is; both run."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2,), "float16"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(relax.op.maximum(x, relax.const(float(value), "float16"))))
        bb.emit_func_output(out)
    mod = bb.get()
    assert f'R.const("{value}", "float16")' in mod.script()  # the printer's own form
    for m in (mod, relax.transform.LegalizeOps()(mod)):
        text, values = module_source(m)
        assert '"%s", "float16"' % value not in text and not values
        again = parses_back(m, text, values)
        got = relax.VirtualMachine(tvm.compile(again, target="llvm"), tvm.cpu())["main"](
            tvm.runtime.tensor(np.array([1.0, -2.0], "float16"))).numpy()
        np.testing.assert_array_equal(got, np.maximum(np.array([1.0, -2.0], "float16"), np.float16(value)))


# -- the planted fault: only symbolic shapes -------------------------------------------------------
def _symbolic_calls(mod) -> bool:
    """Whether some operator call of the module has a result of symbolic shape."""
    found = []

    def visit(e):
        if isinstance(e, relax.Call) and isinstance(e.op, tvm.ir.Op) and symbolic(e.ty):
            found.append(e)

    for f in mod.functions.values():
        if isinstance(f, relax.Function):
            relax.analysis.post_order_visit(f, visit)
    return bool(found)


def test_a_pass_that_miscompiles_only_symbolic_shapes_is_caught_on_symbolic_cases_only():
    """The catch test: every symbolic case of a small batch is wrong under the planted pass,
    every static case is right, and a healthy direct path is right on all of them."""
    gen = Generator(GenConfig(ops=OPS, max_nodes=5, dtypes=("float32",), dynamic_share=0.5))
    healthy = TVMRelax(record_rewrites=False)
    broken = TVMRelax(record_rewrites=False, extra_passes=[shift_symbolic_results])
    caught = silent = symbolic_cases = 0
    for i in range(12):
        p = _prepared(gen, "sym", i)
        if not p.search["valid"]:
            continue
        ref = run_numpy(p.graph, p.inputs)
        try:
            good = _run(healthy, p)
        except NotImplementedError:  # refused by the direct path (a symbol broadcast against a size)
            continue
        assert compare(ref, good).ok, p.id
        wrong = not compare(ref, _run(broken, p)).ok
        # wrong only where an operator's result has a symbolic shape (a dynamic case whose
        # symbol is broadcast against a constant size has none: Relax types it static)
        sym = _symbolic_calls(to_relax(p.graph, structure_seed(p.graph)))
        assert sym or not wrong, p.id
        assert p.graph.dynamic or not sym, p.id
        symbolic_cases += sym
        caught += wrong
        silent += not p.graph.dynamic
    assert silent >= 3 and caught >= 3 and caught >= symbolic_cases * 2 / 3, (caught, symbolic_cases, silent)


# -- pass-list reduction and the TVMScript repro -----------------------------------------------------
def _lowers(p) -> bool:
    try:
        to_relax(p.graph, structure_seed(p.graph))
        return True
    except NotImplementedError:
        return False


def _symbolic_case(ops=OPS):
    gen = Generator(GenConfig(ops=ops, min_nodes=2, max_nodes=4, dtypes=("float32",), dynamic_share=1.0))
    return next(p for p in (_prepared(gen, "red", i) for i in range(20))
                if p.search["valid"] and p.graph.dynamic and _lowers(p))


def _finding(pool, spec, p, cfg):
    (v,) = check(pool, p, cfg)["verdicts"]
    ref = pool.execute(cfg.reference, Model(p.model, p.graph), p.inputs)
    return v, ref.outputs


#: Run a script as if dlgate, onnx, onnxruntime and PyTorch were not installed: importing them
#: raises ImportError (TVM's FFI tries PyTorch first where it exists, and goes on without it).
_CLEAN = """
import runpy, sys
ABSENT = {"dlgate", "onnx", "torch", "onnxruntime"}
class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ABSENT:
            raise ImportError("not installed here: " + name)
        return None
sys.meta_path.insert(0, Absent())
code = 0
try:
    runpy.run_path(sys.argv[1], run_name="__main__")
except SystemExit as e:
    code = e.code
print("IMPORTED", sorted({m.split(".")[0] for m in sys.modules} & {"dlgate", "onnx", "torch", "onnxruntime"}))
sys.exit(code)
"""


def _clean_run(folder: str, home: str) -> subprocess.CompletedProcess:
    """``repro_tvmscript.py`` in a fresh interpreter: isolated (-I: no PYTHONPATH, no user
    site, not even the script's folder on the path), a minimal environment, run elsewhere,
    with dlgate, onnx and PyTorch made unimportable."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}
    return subprocess.run([sys.executable, "-I", "-c", _CLEAN, os.path.join(folder, SCRIPT)], cwd=home, env=env,
                          capture_output=True, text=True, timeout=600)


def _with_fault_beside(folder: str) -> None:
    """The planted pass's file in the repro's folder, as a maintainer would get it attached."""
    os.makedirs(os.path.join(folder, "tests"), exist_ok=True)
    shutil.copy(os.path.join(ROOT, "tests", "relax_faults.py"), os.path.join(folder, "tests", "relax_faults.py"))


@pytest.fixture(scope="module")
def direct_repro(tmp_path_factory):
    """A symbolic case on the direct path with the planted pass: its verdict and the
    TVMScript repro written for it."""
    d = str(tmp_path_factory.mktemp("direct"))
    p = _symbolic_case()
    spec = BackendSpec("tvm-relax", options=(("extra_passes", (FAULT,)),))
    cfg = CheckConfig([spec], timeout_s=120, crosscheck=False)
    with Pool(timeout_s=120) as pool:
        v, ref = _finding(pool, spec, p, cfg)
        got = write_tvmscript(pool, cfg, d, p, spec, v, ref, "a planted pass, direct path")
    return d, p, v, got


def test_the_pass_list_reduces_to_the_planted_pass_on_the_direct_path(direct_repro):
    d, p, v, got = direct_repro
    assert v["verdict"] == V.MISMATCH, v
    red = got["passes"]
    assert red["full"] == [FAULT] + list(PIPELINE_PASSES["target-default"])
    assert red["culprits"] == [FAULT]
    assert red["passes"] == [FAULT] + [n for n in PIPELINE_PASSES["target-default"] if n in LOWERING]
    assert red["verdict"] == V.MISMATCH and not red["hit_limit"]
    assert red["probes"] <= 6, red  # the lowering alone, the whole list, then halving
    assert got["script"] == SCRIPT


def test_the_tvmscript_repro_fails_standalone_with_tvm_and_numpy_only(direct_repro, tmp_path):
    d, p, v, got = direct_repro
    text = open(os.path.join(d, SCRIPT)).read()
    assert "@I.ir_module" in text and "class Module:" in text
    assert "import dlgate" not in text and "import onnx" not in text and "import torch" not in text
    folder = str(tmp_path / "bundle")
    shutil.copytree(d, folder)
    _with_fault_beside(folder)
    res = _clean_run(folder, str(tmp_path))
    out = res.stdout
    assert res.returncode == 1, out + res.stderr[-3000:]
    assert "BUG: wrong result with passes " + FAULT in out, out
    assert "expected  " in out and "actual (now)" in out and "actual (dlgate saw)" in out, out
    assert "Without " + FAULT + " (the lowering alone): outputs match the expected ones" in out, out
    assert "IMPORTED []" in out, out


def test_the_tvmscript_repro_passes_once_the_pass_is_fixed(direct_repro, tmp_path):
    """The same script with the planted pass made harmless (the bug fixed): exit status 0."""
    d, _, _, _ = direct_repro
    folder = str(tmp_path / "bundle")
    shutil.copytree(d, folder)
    os.makedirs(os.path.join(folder, "tests"))
    with open(os.path.join(folder, "tests", "relax_faults.py"), "w") as f:
        f.write("import tvm\n\n@tvm.transform.module_pass(opt_level=0, name='ShiftSymbolicResults')\n"
                "def shift_symbolic_results(mod, _ctx):\n    return mod\n")
    res = _clean_run(folder, str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    assert res.stdout.startswith("OK: the outputs match"), res.stdout


def test_the_importer_path_reduces_to_the_planted_pass_too(tmp_path):
    """On ``tvm`` (from_onnx first, then the same pass list) the reduction also ends at the
    planted pass, and the importer's module is what the TVMScript repro holds."""
    p = _symbolic_case()
    spec = BackendSpec("tvm", options=(("extra_passes", (FAULT,)),))
    cfg = CheckConfig([spec], timeout_s=120, crosscheck=False)
    with Pool(timeout_s=120) as pool:
        v, ref = _finding(pool, spec, p, cfg)
        assert v["verdict"] == V.MISMATCH, v
        got = write_tvmscript(pool, cfg, str(tmp_path), p, spec, v, ref, "a planted pass, importer path")
    assert got["passes"]["culprits"] == [FAULT], got
    text = open(tmp_path / SCRIPT).read()
    assert "TVM's ONNX importer" in text
    _with_fault_beside(str(tmp_path))
    res = _clean_run(str(tmp_path), str(tmp_path))
    assert res.returncode == 1 and "IMPORTED []" in res.stdout, res.stdout + res.stderr[-3000:]


def test_a_correct_compiler_gets_no_pass_list_and_no_script(tmp_path):
    """Healthy TVM passes the case: the pass list is not reduced (its whole list does not fail)
    and no script is written; a backend that is not TVM has no pass list at all."""
    p = _symbolic_case()
    spec = BackendSpec("tvm-relax")
    cfg = CheckConfig([spec], timeout_s=120, crosscheck=False)
    with Pool(timeout_s=120) as pool:
        v, ref = _finding(pool, spec, p, cfg)
        assert v["verdict"] == V.PASS, v
        fake = dict(v, verdict=V.MISMATCH)  # said to fail: the reduction must see that it does not
        got = write_tvmscript(pool, cfg, str(tmp_path), p, spec, fake, ref, "healthy")
    assert got["not_written"].startswith("no pass list") and "passes" not in got, got
    assert not os.path.exists(tmp_path / SCRIPT)
    assert sequence(BackendSpec("onnxruntime")) is None
    assert sequence(BackendSpec("tvm", "cuda")) is None
    assert tvm_repro(None, cfg, str(tmp_path), p, BackendSpec("onnxruntime"), fake, ref) is None


def test_a_hang_whose_module_does_not_print_is_given_up_within_the_print_limit(tmp_path, monkeypatch):
    """A hang in TVM's importer leaves no module to print: its TVMScript repro is given up
    once printing takes HANG_PRINT_S, not the campaign's whole timeout, and says why; the
    pool's own limits are as they were."""
    from dlgate.reduce import tvmscript

    monkeypatch.setattr(tvmscript, "MODULE_TEXT", "tests.fake_backends:HangingModuleText")
    monkeypatch.setattr(tvmscript, "HANG_PRINT_S", 1.0)
    p = _symbolic_case()
    spec = BackendSpec("tvm")
    cfg = CheckConfig([spec], timeout_s=120, crosscheck=False)
    hang = {"backend": "tvm[cpu]", "verdict": V.TIMEOUT,
            "error": {"type": "Timeout", "message": "no answer within 120 s", "frames": []}}
    with Pool(timeout_s=120) as pool:
        t0 = time.monotonic()
        got = write_tvmscript(pool, cfg, str(tmp_path), p, spec, hang, [], "an importer hang")
        took = time.monotonic() - t0
        assert pool.job_limit is None and pool.timeout_s == 120
    assert got["not_written"].startswith("TVM could not build the module, before any pass (Timeout: no answer "
                                         "within 1 s)"), got
    assert took < 60, took
    assert not os.path.exists(tmp_path / SCRIPT)


def test_a_campaign_writes_the_tvmscript_repro_beside_the_onnx_one(tmp_path):
    """Through ``dlgate run``: a tvm-relax finding's bundle holds repro.py and
    repro_tvmscript.py, repro.json records the reduced pass list, and the script fails
    standalone in a clean interpreter."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({
        "campaign": "tvmscript", "models": 3, "min_nodes": 2, "max_nodes": 4, "opset": 18, "dtypes": ["float32"],
        "operators": list(OPS), "dynamic_share": 1.0, "timeout_s": 120, "confirm_runs": 1, "crosscheck": False,
        "backends": [{"name": "tvm-relax", "options": {"extra_passes": [FAULT]}}]}))
    out = str(tmp_path / "out")
    assert main(["run", "--config", str(cfg), "--seed", "tvmscript", "--out", out, "--no-progress"]) == 1
    repros = sorted(os.listdir(os.path.join(out, "repros")))
    assert repros
    for fp in repros:
        d = os.path.join(out, "repros", fp)
        assert os.path.isfile(os.path.join(d, "repro.py")) and os.path.isfile(os.path.join(d, SCRIPT)), fp
        with open(os.path.join(d, "repro.json")) as f:
            doc = json.load(f)
        assert doc["tvmscript"]["passes"]["culprits"] == [FAULT], doc["tvmscript"]
        _with_fault_beside(d)
        res = _clean_run(d, str(tmp_path))
        assert res.returncode == 1 and "IMPORTED []" in res.stdout, res.stdout + res.stderr[-3000:]
