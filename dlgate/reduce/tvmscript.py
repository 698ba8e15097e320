"""A TVM finding's repro as TVM's maintainers take it: a TVMScript ``@I.ir_module`` and the
shortest pass sequence that still fails (:mod:`dlgate.reduce.passes`), with the inputs, the
expected (reference) result and the one TVM gave, in ``repro_tvmscript.py`` beside the
bundle's ONNX ``repro.py``. It needs only TVM and NumPy: no dlgate, no onnx, no PyTorch.

The module is the one the reduced pass list receives: on the importer path (``tvm``) what
``from_onnx`` gives, on the direct path (``tvm-relax``) what ``to_relax`` builds. Both are
printed in an isolated worker (:class:`dlgate.backends.tvm_module_text.ModuleText`), with the
constants TVM's printer leaves in its metadata written as ``R.const(C[k], ...)`` and checked
there to parse back to a structurally equal module. The script applies the passes under the
target, builds with no Relax pipeline of its own, runs ``main`` on the inputs and compares
with the expected result as dlgate's oracle does; it prints expected versus actual (and what
TVM gave when dlgate ran it), then the same without the passes that are not lowering, and
exits 1 while the bug is present, 0 once it is fixed.
"""
from __future__ import annotations

import json
import os
import re
import textwrap

import numpy as np

from dlgate import __version__
from dlgate.backends.base import BackendSpec, Model
from dlgate.backends.registry import load
from dlgate.backends.tvm_passes import CONSTS, LOWERING, is_external
from dlgate.backends.tvm_module_text import PRINTING
from dlgate.backends.tvm_relax import TVMRelax
from dlgate.invalid.relax import TVMRelaxInvalid
from dlgate.check import CheckConfig, Prepared
from dlgate.oracle import verdict as V
from dlgate.oracle.compare import DEFAULT_TOLERANCES
from dlgate.reduce import inline as IN
from dlgate.reduce.passes import PassReduction, describe, discard, reduce_passes, sequence, with_passes
from dlgate.reduce.reducer import Target
from dlgate.reduce.script import REPRO_TIMEOUT_S, _TEMPLATE

#: The file names in a bundle.
SCRIPT = "repro_tvmscript.py"
DATA = "tvmscript.npz"
#: The worker that prints a module (:class:`dlgate.backends.tvm_module_text.ModuleText`).
MODULE_TEXT = "dlgate.backends.tvm_module_text:ModuleText"
#: Seconds a hang's module may take to print. TVM prints a reduced case's module in a second
#: or two; a hang's that takes longer hangs in the importer, where there is no module to write
#: as TVMScript. With the campaign's whole timeout (120 s in the weekly one) each importer
#: hang spent two more minutes learning that, a third of its reduction.
HANG_PRINT_S = 30.0


class NoScript(Exception):
    """No TVMScript repro for this finding; the message says why (for repro.json)."""


def path_of(spec: BackendSpec) -> str:
    """``invalid`` for ``tvm-relax-invalid``, ``direct`` for ``tvm-relax`` (and their
    subclasses), ``importer`` for ``tvm``."""
    cls = load(spec.name)
    if issubclass(cls, TVMRelaxInvalid):
        return "invalid"
    return "direct" if issubclass(cls, TVMRelax) else "importer"


def module_text(pool, spec: BackendSpec, case: Prepared) -> tuple:
    """``(text, order, constants)`` of the module ``spec`` hands its passes for ``case``,
    made in an isolated worker; ``order``: main's parameters as positions in the case's inputs."""
    head, consts = module_head(pool, spec, case)
    return head["text"], head["order"], consts


def module_head(pool, spec: BackendSpec, case: Prepared) -> tuple:
    """``(head, constants)``: :class:`~dlgate.backends.tvm_module_text.ModuleText`'s JSON head
    (``text``, ``order``, and on the invalid path ``printed``, ``refused``, ``redeclare``)
    for the module ``spec`` hands its passes for ``case``, and the constants its text reads."""
    opts = (("path", path_of(spec)),)
    if dict(spec.options).get("plain"):
        opts += (("plain", True),)
    spec = BackendSpec(MODULE_TEXT, "cpu", None, opts)
    try:
        out = pool.execute(spec, Model(case.model, case.graph), case.inputs)
    finally:
        discard(pool, spec)
    if not out.ok:
        err = out.error or {}
        msg = str(err.get("message", ""))
        if msg.startswith(PRINTING):
            raise NoScript(f"{msg[:400]}")
        raise NoScript(f"TVM could not build the module, before any pass ({err.get('type', out.status)}: "
                       f"{msg.strip().splitlines()[-1][:300] if msg.strip() else ''}): the ONNX repro.py is the repro")
    head = json.loads(np.asarray(out.outputs[0], dtype=np.uint8).tobytes().decode())
    return head, [np.asarray(v) for v in out.outputs[1:]]


def write_tvmscript(pool, cfg: CheckConfig, d: str, case: Prepared, spec: BackendSpec, verdict: dict,
                    reference: list, provenance: str, max_seconds: float = 120.0, max_probes: int = 40) -> dict:
    """Reduce the pass list of ``case``'s failure and write ``repro_tvmscript.py`` (and
    ``tvmscript.npz`` when the data is too large to write inline) into ``d``. Returns what
    repro.json records: ``{"passes": ..., "script": name}``, or ``{"not_written": why}``."""
    if verdict.get("shape"):
        return {"not_written": "the failure shows only at a further binding of the symbolic shapes"}
    if sequence(spec) is None:
        return {"not_written": "no pass list: not TVM on the CPU, or a pass given as a Python object"}
    limit = pool.job_limit
    if verdict.get("verdict") == V.TIMEOUT:
        pool.job_limit = HANG_PRINT_S if limit is None else min(limit, HANG_PRINT_S)
    try:  # first: a module that cannot be built (an importer crash or hang) has no pass list to reduce
        text, order, consts = module_text(pool, spec, case)
    except NoScript as e:
        return {"not_written": str(e)}
    finally:
        pool.job_limit = limit
    red = reduce_passes(pool, cfg, Target.of(spec, verdict), case, reference, max_seconds=max_seconds,
                        max_probes=max_probes, shape=verdict.get("shape"))
    if red is None:
        return {"not_written": "no pass list: the pipeline as named passes does not fail the same way"}
    run = with_passes(spec, red.passes)
    try:
        got = pool.execute(run, Model(case.model, case.graph), case.inputs)
    finally:
        discard(pool, run)
    actual = got.outputs if got.ok else None
    names = [case.graph.name(t) for t in case.graph.outputs]
    inputs = {case.graph.name(case.graph.inputs[k]): np.asarray(case.inputs[k]) for k in order}
    src, data = script_source(text, consts, inputs, dict(zip(names, map(np.asarray, reference))),
                              None if actual is None else dict(zip(names, map(np.asarray, actual))),
                              red, verdict, path_of(spec), provenance, cfg.tolerances)
    with open(os.path.join(d, SCRIPT), "w") as f:
        f.write(src)
    if data:
        np.savez(os.path.join(d, DATA), **data)
    return {"passes": red.to_json(), "script": SCRIPT, "reads": DATA if data else None}


def _section(arrays: dict, function: str, what: str, prefix: str, data: dict) -> str:
    """``def function():`` returning ``arrays`` (a dict), inline when small, else read from
    :data:`DATA` (their entries stored in ``data`` under ``prefix``)."""
    try:
        return IN.data_source(arrays, function, what).rstrip("\n")
    except IN.NotInline:
        for k, a in arrays.items():
            data[f"{prefix}{k}"] = a
        keys = ", ".join(repr(k) for k in arrays)
        return (f"def {function}():\n    \"\"\"{what[0].upper() + what[1:]}, from {DATA} beside this file (too large "
                f"to write here).\"\"\"\n    with np.load(os.path.join(HERE, {DATA!r})) as z:\n"
                f"        return {{k: np.array(z[{prefix!r} + k]) for k in [{keys}]}}")


def _slice(start: str, end: str) -> str:
    """Functions of the ONNX repro's template (its oracle-like comparison), reused verbatim."""
    return _TEMPLATE[_TEMPLATE.index(start):_TEMPLATE.index(end)].rstrip("\n")


def script_source(text: str, consts: list, inputs: dict, expected: dict, actual: dict | None, red: PassReduction,
                  verdict: dict, path: str, provenance: str, tolerances: dict | None = None) -> tuple:
    """``(repro_tvmscript.py's text, arrays for tvmscript.npz)``."""
    data: dict = {}
    cnames = {f"c{k}": a for k, a in enumerate(consts)}
    sections = [
        _section(cnames, "load_constants", "the module's constants (C[k] in it)", "const_", data),
        _section(inputs, "load_inputs", "the inputs, in main's parameter order", "input_", data),
        _section(expected, "load_expected", "the expected outputs (dlgate's reference)", "expected_", data),
    ]
    if actual is not None:
        sections.append(_section(actual, "load_actual", "what TVM gave when dlgate ran it", "actual_", data))
    else:
        sections.append("def load_actual():\n    return None  # TVM failed to compile or run when dlgate ran it")
    imports, _, module = text.partition("\n\n")
    imports = "\n".join(ln for ln in imports.splitlines() if ln not in ("import tvm", "from tvm import relax"))
    culprits = red.culprits
    plist = "\n".join(f"    {n!r},{'  # lowering: the build needs it' if n in LOWERING else ''}" for n in red.passes)
    full = "\n".join(f"    {n!r}," for n in red.full)
    tol = {k: list(v) for k, v in dict(DEFAULT_TOLERANCES, **(tolerances or {})).items()}
    expected_doc = {"verdict": verdict["verdict"], "backend": verdict["backend"],
                    "detail": verdict.get("detail", "")[:1000]}
    if culprits:
        what = f"{', '.join(culprits)} and the lowering the build needs"
    else:
        what = "the lowering the build needs alone (no optimization pass is needed: legalization or code generation)"
    subs_path = {"importer": "what TVM's ONNX importer (from_onnx) gives for the reduced model",
                 "direct": "dlgate's Relax module of the reduced graph (the direct path: no importer)"}
    external = [n for n in red.passes if is_external(n)]
    ext_note = (f"PASSES names passes of other packages ({', '.join(external)}): they must be importable, from "
                "the environment or from this folder.") if external else ""
    about = (f"Needs only TVM and NumPy. ``Module`` below is {subs_path[path]}, printed by TVM as TVMScript. "
             f"PASSES is the shortest pass sequence dlgate found that still fails: {what} (reduced from the "
             f"{len(red.full)} passes of the pipeline it ran, FULL_PASSES, in {red.probes} "
             f"tr{'y' if red.probes == 1 else 'ies'}"
             f"{' (the search hit its bound: it may not be minimal)' if red.hit_limit else ''}). The passes run in "
             "order under the target, then ``tvm.compile`` builds with no Relax pipeline of its own.")
    subs = {
        "TITLE": f"{verdict['verdict']} on {verdict['backend']}",
        "ABOUT": textwrap.fill(about, 92), "EXT": "\n" + textwrap.fill(ext_note, 92) + "\n" if ext_note else "",
        "DLGATE": __version__, "PROVENANCE": provenance,
        "IMPORTS": imports.strip(), "MODULE": module.rstrip("\n"), "CONSTS": CONSTS,
        "PASSES": plist, "FULL": full, "LOWERING": repr(sorted(LOWERING)), "EXPECTED": repr(expected_doc),
        "TOLERANCES": repr(tol), "TIMEOUT": str(REPRO_TIMEOUT_S), "SECTIONS": "\n\n\n".join(sections),
        "COMPARE": _slice("def compare(ref, got):", "def to_float64(model):"),
        "WHERE": _slice("def _where(r, g):", "def explain(out_names"), "BUILD": build_source("Module"),
    }
    src = re.sub(r"@@([A-Z_]+)@@", lambda m: subs[m.group(1)], _SCRIPT)
    return src, data


#: The generated scripts' build: a pass by name, and the module through passes, built and run
#: on the inputs; ``@@MODULE_OBJECT@@`` is the expression giving the module (:func:`build_source`).
_BUILD = '''def make_pass(name):
    """TVM's pass of that name (relax.transform, else relax.backend), or "package.module:function"."""
    if ":" in name:
        import importlib
        if HERE not in sys.path:
            sys.path.append(HERE)
        m, _, f = name.rpartition(":")
        p = getattr(importlib.import_module(m), f)
    else:
        p = getattr(relax.transform, name, None) or getattr(relax.backend, name)
    return p if isinstance(p, tvm.transform.Pass) else p()


def run(passes, inputs):
    target = tvm.target.Target(TARGET)
    with target:
        mod = tvm.transform.Sequential([make_pass(n) for n in passes])(@@MODULE_OBJECT@@)
    ex = tvm.compile(mod, target=target, relax_pipeline=None)
    dev = tvm.cpu(0)
    # np.require, not np.ascontiguousarray: that one makes a 0-d input 1-d, which main rejects
    out = relax.VirtualMachine(ex, dev)["main"](*[tvm.runtime.tensor(np.require(x, requirements="C"), dev)
                                                  for x in inputs])
    # a tensor, a Shape (an output computed by ONNX Shape: its values, int64), or a tuple
    outs = [out] if hasattr(out, "numpy") or type(out).__name__ in ("Shape", "ShapeTuple") else list(out)
    return [o.numpy() if hasattr(o, "numpy") else np.array([int(d) for d in o], dtype=np.int64) for o in outs]
'''


def build_source(module_object: str) -> str:
    """``make_pass`` and ``run(passes, inputs)`` of a TVMScript repro, ``run`` building the module
    ``module_object`` evaluates to (``Module``, or ``module()`` where the script makes it)."""
    return _BUILD.replace("@@MODULE_OBJECT@@", module_object).rstrip("\n")


#: The imports, the target and the pass lists of a TVMScript repro: the same in the finding's
#: script and in the Relax-level invalid module's (:mod:`dlgate.reduce.tvmscript_invalid`).
SCRIPT_HEAD = '''import os
import signal
import sys

import numpy as np
import tvm
from tvm import relax
@@IMPORTS@@

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = "llvm"
#: The Relax passes, in order.
PASSES = [
@@PASSES@@
]
#: What the finding compiled with: its extra passes, then its pipeline spelled out.
FULL_PASSES = [
@@FULL@@
]
LOWERING = @@LOWERING@@
'''

_SCRIPT = '''#!/usr/bin/env python3
"""dlgate TVMScript repro: @@TITLE@@

@@ABOUT@@
@@EXT@@
    python repro_tvmscript.py

It prints expected versus actual, then the same without the passes that are not lowering,
and exits 1 while the bug is present, 0 once it is fixed.
Found by dlgate @@DLGATE@@: @@PROVENANCE@@.
"""
''' + SCRIPT_HEAD + '''EXPECTED = @@EXPECTED@@
#: dtype -> (rtol, atol); floats compare as |got - ref| <= atol * max(1, max|ref|) + rtol * |ref|
TOLERANCES = @@TOLERANCES@@
TIMEOUT_S = @@TIMEOUT@@


# ---- the data -------------------------------------------------------------------------------
@@SECTIONS@@


@@CONSTS@@ = [v for _, v in sorted(load_constants().items(), key=lambda kv: int(kv[0][1:]))]


# ---- the module TVM's passes receive ------------------------------------------------------------
@@MODULE@@


# ---- the check --------------------------------------------------------------------------------
@@BUILD@@


@@COMPARE@@


@@WHERE@@


def _hang(signum, frame):
    print("BUG: TVM gave no answer within %d s (hang)" % TIMEOUT_S)
    sys.stdout.flush()
    os._exit(1)


def attempt(passes, inputs, ref):
    """(outputs or None, problems): the module through ``passes``, built and run, against ``ref``."""
    if hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, _hang)
        signal.alarm(TIMEOUT_S)
    try:
        got = run(passes, inputs)
    except Exception as e:  # TVM failing to compile or run is the bug
        text = str(e).strip()
        return None, ["%s: %s" % (type(e).__name__, text[-4000:] if len(text) > 4000 else text)]
    finally:
        if hasattr(signal, "SIGALRM"):
            signal.alarm(0)
    return got, compare(ref, got)


def main():
    inputs = list(load_inputs().values())
    stored = load_expected()
    names, ref = list(stored), list(stored.values())
    saw = load_actual()
    got, problems = attempt(PASSES, inputs, ref)
    if problems:
        print("BUG: %s with passes %s" % ("TVM failed" if got is None else "wrong result", ", ".join(PASSES)))
        for p in problems:
            print("  " + p)
    else:
        print("OK: the outputs match the expected ones; the bug dlgate saw (%s) is not present" % EXPECTED["verdict"])
    print("Expected versus actual (each output at its worst element):")
    for k, name in enumerate(names):
        r = ref[k]
        g = None if got is None or k >= len(got) else np.asarray(got[k])
        at = _where(r, g)
        print("  output %d %r, %s%s%s:" % (k, name, r.dtype, list(r.shape), "" if at is None else " at %s" % (at,)))
        print("    %-22s %r" % ("expected", r[at].item() if at is not None else "(empty)"))
        if got is None:
            print("    %-22s none: TVM failed (above)" % "actual (now)")
        else:
            print(_line("actual (now)", g, r, at))
        if saw is not None:
            print(_line("actual (dlgate saw)", saw.get(name), r, at))
    lowering = [n for n in PASSES if n in LOWERING]
    if problems and lowering != PASSES:
        got2, problems2 = attempt(lowering, inputs, ref)
        print("Without %s (the lowering alone): %s" % (", ".join(n for n in PASSES if n not in LOWERING),
              "outputs match the expected ones" if not problems2 else "; ".join(problems2)[:2000]))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
'''


def outcome(got: dict, folder: str | None = None) -> str:
    """One line on what :func:`write_tvmscript` did, for the logs of ``dlgate reduce`` and of
    a campaign: the pass list reduced and the script written (its path under ``folder`` when
    given), or why there is no script."""
    if not got.get("script"):
        return f"no TVMScript repro: {got['not_written']}"
    red = got["passes"]
    script = got["script"] if folder is None else os.path.join(folder, got["script"])
    return (f"pass list {len(red['full'])} -> {len(red['passes'])} passes ({describe(red)}) in {red['probes']} "
            f"tr{'y' if red['probes'] == 1 else 'ies'}: {script}")
