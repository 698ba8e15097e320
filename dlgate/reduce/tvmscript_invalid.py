"""The TVMScript repro of a Relax-level invalid finding (``tvm-relax-invalid``:
:mod:`dlgate.invalid.relax`): ``repro_tvmscript.py``, needing only TVM and NumPy, with the
invalid module, the rule it breaks, the reduced pass list, the inputs as the backend gives
them, and the expectation that TVM raises an error while building or running it.

The module is the one the backend builds, made in an isolated worker
(:meth:`dlgate.backends.tvm_module_text.ModuleText.invalid_text`). TVM's parser refuses most
such modules (it normalizes each binding as it reads it: a ``match_cast`` of a parameter
declared float32 to a float64 tensor is "impossible to match cast"; a shape declared one
wider is not well-formed), so the script then holds the valid direct module (which parses
back) and :func:`dlgate.materialize.relax.invalid.redeclare`, the code dlgate itself makes
the invalid module with, written out: it uses TVM's API alone, and the worker checks that
it gives a module structurally equal to the backend's. The printer's text of the invalid
module is in the script too, as a comment, for reading. A module that parses back is the
script's module itself.

The pass list is reduced as other TVM findings' (:func:`dlgate.reduce.passes.reduce_passes`),
each candidate judged by the invalid-model oracle (``same``: the finding's class, and for a
crash or a hang the same error). The script exits 1 printing ``BUG:`` when TVM builds the
module and runs ``main`` to completion (``invalid_accepted``) or gives no answer within
:data:`~dlgate.reduce.script.REPRO_TIMEOUT_S` (a hang); 0 when TVM raises an error (fixed);
when TVM crashes, the script dies with it.
"""
from __future__ import annotations

import inspect
import os
import re
import textwrap

import numpy as np

from dlgate import __version__
from dlgate.backends.base import BackendSpec
from dlgate.backends.tvm_passes import CONSTS, LOWERING, is_external
from dlgate.check import Prepared
from dlgate.invalid.relax import as_declared
from dlgate.reduce.passes import PassReduction, discard, reduce_passes, sequence, with_passes
from dlgate.reduce.reducer import Target
from dlgate.reduce.script import REPRO_TIMEOUT_S
from dlgate.reduce.tvmscript import DATA, SCRIPT, SCRIPT_HEAD, NoScript, _section, build_source, module_head


def inputs_given(case: Prepared, spec: BackendSpec, info: dict) -> list:
    """The inputs ``spec`` runs ``main`` on: the case's, with option ``declared`` the wrongly
    declared parameter's made of its declared type (as ``TVMRelaxInvalid.run`` does)."""
    xs = [np.asarray(x) for x in case.inputs]
    if dict(spec.options).get("declared"):
        xs[info["index"]] = as_declared(xs[info["index"]], info["declared"])
    return xs


def write_invalid_tvmscript(pool, d: str, case: Prepared, spec: BackendSpec, verdict: dict, info: dict, same,
                            provenance: str, max_seconds: float = 90.0, max_probes: int = 40) -> dict:
    """Reduce the pass list of invalid finding ``verdict`` on ``case`` (``same(spec)``: a
    candidate's verdict when it fails as the finding did, else None) and write
    ``repro_tvmscript.py`` (and ``tvmscript.npz`` when the data is too large to write
    inline) into ``d``. What repro.json records: ``{"passes": ..., "script": name, ...}``,
    or ``{"not_written": why}``."""
    if sequence(spec) is None:
        return {"not_written": "no pass list: not TVM on the CPU, or a pass given as a Python object"}
    try:
        head, consts = module_head(pool, spec, case)
    except NoScript as e:
        return {"not_written": str(e)}
    red = reduce_passes(pool, None, Target.of(spec, verdict), case, [], max_seconds=max_seconds,
                        max_probes=max_probes, same=same)
    if red is None:
        return {"not_written": "no pass list: the pipeline as named passes does not fail the same way"}
    discard(pool, with_passes(spec, red.passes))
    xs = inputs_given(case, spec, info)
    names = [case.graph.name(case.graph.inputs[k]) for k in head["order"]]
    src, data = script_source(head, consts, dict(zip(names, (xs[k] for k in head["order"]))), red, verdict, info,
                              bool(dict(spec.options).get("declared")), provenance)
    with open(os.path.join(d, SCRIPT), "w") as f:
        f.write(src)
    if data:
        np.savez(os.path.join(d, DATA), **data)
    return {"passes": red.to_json(), "script": SCRIPT, "reads": DATA if data else None,
            "module": "invalid" if head.get("redeclare") is None else "valid, redeclared",
            "parser_refuses": head.get("refused")}


def _given(x: np.ndarray) -> str:
    return f"a {x.dtype} tensor of shape {list(x.shape)}"


def script_source(head: dict, consts: list, inputs: dict, red: PassReduction, verdict: dict, info: dict,
                  declared: bool, provenance: str) -> tuple:
    """``(repro_tvmscript.py's text, arrays for tvmscript.npz)`` of an invalid finding."""
    data: dict = {}
    sections = [
        _section({f"c{k}": a for k, a in enumerate(consts)}, "load_constants", "the module's constants (C[k] in it)",
                 "const_", data),
        _section(inputs, "load_inputs", "the inputs, in main's parameter order", "input_", data),
    ]
    imports, _, module = head["text"].partition("\n\n")
    imports = "\n".join(ln for ln in imports.splitlines() if ln not in ("import tvm", "from tvm import relax"))
    k = info["index"]
    x = list(inputs.values())[k]
    given = (f"given {_given(x)}, a value of its declared type (option declared), so that main's check of its "
             "arguments passes and TVM's handling of the body is what must catch the mismatch" if declared
             else f"given {_given(x)}, the graph's input it stands for")
    rule = (f"{info['rule']} ({info.get('breaks', '')}): {info.get('detail', '')} in main; {given}.")
    redo = head.get("redeclare")
    if redo is None:
        mod_note = "``Module`` is the invalid module itself, as TVM prints it (it parses back to the module dlgate built)."
        make = "def module():\n    return Module"
    else:
        refused = (head.get("refused") or "").strip().splitlines()
        why = next((ln.strip() for ln in refused if "Check failed" in ln or "not well-formed" in ln),
                   refused[0] if refused else "")
        mod_note = ("TVM's parser refuses the invalid module (" + why[:300] + "), so ``Module`` is the valid "
                    "module it was made from (it parses back), and ``redeclare`` (the code dlgate makes the "
                    "invalid module with, TVM's API alone) declares the parameter wrongly: ``module()`` is "
                    "structurally equal to the module dlgate built (checked when this script was written). "
                    "TVM's text of that module follows ``module()``, as a comment, for reading.")
        args = ", ".join(f"{a}={redo[a]!r}" for a in ("dtype", "dims") if a in redo)
        from dlgate.materialize.relax.invalid import redeclare  # local: imports TVM, an optional compiler
        make = (textwrap.dedent(inspect.getsource(redeclare)).rstrip("\n")
                + f"\n\n\ndef module():\n    return redeclare(Module, {redo['index']}, {args})")
    printed = "\n".join(("# " + ln).rstrip() for ln in (head.get("printed") or "(TVM could not print it)").splitlines())
    culprits = red.culprits
    what = (f"{', '.join(culprits)} and the lowering the build needs" if culprits else
            "the lowering the build needs alone (no optimization pass is needed)")
    external = [n for n in red.passes if is_external(n)]
    about = (f"Needs only TVM and NumPy. {mod_note} PASSES is the shortest pass sequence dlgate found that still "
             f"lets the finding show: {what} (reduced from the {len(red.full)} passes of the pipeline it ran, "
             f"FULL_PASSES, in {red.probes} tr{'y' if red.probes == 1 else 'ies'}"
             f"{' (the search hit its bound: it may not be minimal)' if red.hit_limit else ''}). The passes run in "
             "order under the target, then ``tvm.compile`` builds with no Relax pipeline of its own.")
    if external:
        about += (f" PASSES names passes of other packages ({', '.join(external)}): they must be importable, from "
                  "the environment or from this folder.")
    expected = {"verdict": verdict["verdict"], "backend": verdict["backend"], "detail": verdict.get("detail", "")[:600]}
    subs = {
        "TITLE": f"{verdict['verdict']} on {verdict['backend']}: {info['rule']} at main",
        "RULE": textwrap.fill(rule, 92), "ABOUT": textwrap.fill(about, 92), "DLGATE": __version__,
        "PROVENANCE": provenance, "IMPORTS": imports.strip(), "MODULE": module.rstrip("\n"), "CONSTS": CONSTS,
        "MAKE": make, "PRINTED": printed, "SECTIONS": "\n\n\n".join(sections), "TIMEOUT": str(REPRO_TIMEOUT_S),
        "PASSES": "\n".join(f"    {n!r},{'  # lowering: the build needs it' if n in LOWERING else ''}"
                            for n in red.passes),
        "FULL": "\n".join(f"    {n!r}," for n in red.full), "LOWERING": repr(sorted(LOWERING)),
        "EXPECTED": repr(expected), "SHORT": repr(f"{info['rule']}: {info.get('detail', '')}"),
        "BUILD": build_source("module()"),
    }
    return re.sub(r"@@([A-Z_]+)@@", lambda m: subs[m.group(1)], _SCRIPT), data


_SCRIPT = '''#!/usr/bin/env python3
"""dlgate TVMScript repro: @@TITLE@@

The Relax module below breaks a rule on purpose:
@@RULE@@

A correct TVM raises an error while building or running it: this script exits 0 then. It
exits 1, printing BUG, when TVM builds the module and runs main to completion, or gives no
answer within @@TIMEOUT@@ s (a hang). When TVM crashes (dies by a signal), the script dies with
it: that crash is the bug.

@@ABOUT@@

    python repro_tvmscript.py

Found by dlgate @@DLGATE@@: @@PROVENANCE@@.
"""
''' + SCRIPT_HEAD + '''RULE = @@SHORT@@
EXPECTED = @@EXPECTED@@
TIMEOUT_S = @@TIMEOUT@@


# ---- the data -------------------------------------------------------------------------------
@@SECTIONS@@


@@CONSTS@@ = [v for _, v in sorted(load_constants().items(), key=lambda kv: int(kv[0][1:]))]


# ---- the module -----------------------------------------------------------------------------
@@MODULE@@


@@MAKE@@


# TVM's text of the invalid module:
#
@@PRINTED@@


# ---- the check --------------------------------------------------------------------------------
@@BUILD@@


def _hang(signum, frame):
    print("BUG: TVM gave no answer within %d s (hang) on a module that breaks %s" % (TIMEOUT_S, RULE))
    sys.stdout.flush()
    os._exit(1)


def attempt(passes, inputs):
    """(outputs, None) when TVM builds and runs the module through ``passes``; (None, its error)."""
    if hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, _hang)
        signal.alarm(TIMEOUT_S)
    try:
        return run(passes, inputs), None
    except Exception as e:  # TVM's own error: what it should do
        text = str(e).strip()
        return None, "%s: %s" % (type(e).__name__, text[-3000:] if len(text) > 3000 else text)
    finally:
        if hasattr(signal, "SIGALRM"):
            signal.alarm(0)


def main():
    inputs = list(load_inputs().values())
    got, error = attempt(PASSES, inputs)
    if got is None:
        print("OK: TVM rejects the invalid module (%s): %s" % (RULE, error))
        return 0
    print("BUG: TVM built a module that breaks %s and ran main to completion with passes %s"
          % (RULE, ", ".join(PASSES)))
    for k, o in enumerate(got):
        print("  output %d: %s%s" % (k, o.dtype, list(o.shape)))
    lowering = [n for n in PASSES if n in LOWERING]
    if lowering != PASSES:
        again, error2 = attempt(lowering, inputs)
        print("Without %s (the lowering alone): %s" % (", ".join(n for n in PASSES if n not in LOWERING),
              "TVM rejects it: " + error2.strip().splitlines()[-1][:300] if again is None else "TVM accepts it too"))
    return 1


if __name__ == "__main__":
    sys.exit(main())
'''
