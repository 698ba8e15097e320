"""TVM's Relax pipelines as ordered lists of named passes, and a module as TVMScript that
parses back to the same module: what a pass-list reduction (:mod:`dlgate.reduce.passes`)
and a TVMScript repro (:mod:`dlgate.reduce.tvmscript`) are made of.

A pipeline is one opaque ``module_pass`` to ``tvm.compile``; a reduction needs its parts.
:data:`PIPELINE_PASSES` spells out, for the CPU target (``llvm``), the passes TVM 0.27's
pipelines run, in order (``tests/test_tvm_passes.py`` traces the real pipelines with a pass
instrument and checks the table against them). A sequence of those names, run under the
target and then built with no Relax pipeline of its own (``relax_pipeline=None``), is what
the ``tvm`` and ``tvm-relax`` backends compile with their ``passes`` option.

:data:`LOWERING` are the passes without which TVM cannot build the module at all (measured
on TVM 0.27: removing any one of them fails the build of a generated batch; removing any
other still builds and computes the same): a reduction keeps them, so that each candidate
builds and a failure that disappears is the failure gone, not the build broken.

Nothing here imports TVM at module level: the gate's side reads the tables, the worker
builds the passes.
"""
from __future__ import annotations

import importlib
import os
import re
import sys
import tempfile

#: Each pipeline of :data:`dlgate.backends.tvm.PIPELINES` on the CPU target, as TVM 0.27 runs it.
PIPELINE_PASSES = {
    # relax.get_pipeline("default_build"): tvm.relax.pipeline.default_build_pipeline
    "default_build": (
        "DispatchSampling", "DispatchSortScan", "LegalizeOps", "RewriteDataflowReshape", "ToNonDataflow",
        "RemovePurityChecking", "CallTIRRewrite", "StaticPlanBlockMemory", "RewriteCUDAGraph", "LowerAllocTensor",
        "KillAfterLastUse", "LowerRuntimeBuiltin", "ComputePrimValue", "VMShapeLower", "AttachGlobalSymbol",
    ),
    # relax.get_default_pipeline(llvm): tvm.relax.backend.cpu_generic's library dispatch,
    # legalize, dataflow lowering and finalize passes
    "target-default": (
        "DispatchSampling", "DispatchSortScan", "LegalizeOps", "AnnotateTIROpPattern", "FoldConstant", "FuseOps",
        "FuseTIR", "RewriteDataflowReshape", "ToNonDataflow", "RemovePurityChecking", "CallTIRRewrite",
        "StaticPlanBlockMemory", "LowerAllocTensor", "KillAfterLastUse", "LowerRuntimeBuiltin", "ComputePrimValue",
        "VMShapeLower", "AttachGlobalSymbol",
    ),
}
#: The passes the build needs (TVM 0.27, CPU): high-level operators to TIR, ``call_tir`` to
#: explicit allocation, allocations and builtins to VM calls, shapes to VM shape code, and
#: the functions' global symbols.
LOWERING = frozenset({"LegalizeOps", "CallTIRRewrite", "LowerAllocTensor", "LowerRuntimeBuiltin", "VMShapeLower",
                      "AttachGlobalSymbol"})
#: Where TVM keeps the passes named in :data:`PIPELINE_PASSES` (their constructors take no
#: argument there), looked up in this order.
PASS_MODULES = ("tvm.relax.transform", "tvm.relax.backend")


def is_external(name: str) -> bool:
    """A pass of a package of its own (``"package.module:function"``), not one of TVM's."""
    return ":" in name


def check_pass_names(names) -> None:
    """ValueError unless ``names`` is a list of TVM pass names (``"FoldConstant"``) or
    ``"package.module:function"`` names."""
    if isinstance(names, (str, bytes)) or not isinstance(names, (list, tuple)):
        raise ValueError(f"option 'passes': expected a list of pass names, got {names!r}")
    for n in names:
        if not isinstance(n, str):
            raise ValueError(f"option 'passes': expected pass names, got {n!r}")
        mod, _, attr = n.rpartition(":")
        ok = attr.isidentifier() and (not is_external(n) or (mod and all(x.isidentifier() for x in mod.split("."))))
        if not ok:
            raise ValueError(f"option 'passes': expected \"PassName\" or \"package.module:function\", got {n!r}")


def make_pass(name: str):
    """The pass a name stands for: one of TVM's (``relax.transform.FoldConstant()``), or the
    pass (or zero-argument callable returning one) at ``package.module:function``."""
    import tvm  # local: optional compiler, imported where it runs

    if is_external(name):
        mod, _, attr = name.rpartition(":")
        item = getattr(importlib.import_module(mod), attr)
    else:
        item = None
        for where in PASS_MODULES:
            item = getattr(importlib.import_module(where), name, None)
            if item is not None:
                break
        if item is None:
            raise ValueError(f"TVM {tvm.__version__} has no Relax pass {name!r} in {' or '.join(PASS_MODULES)}")
    p = item if isinstance(item, tvm.transform.Pass) else item()
    if not isinstance(p, tvm.transform.Pass):
        raise TypeError(f"pass {name!r} gave {type(p).__name__}, not a tvm.transform.Pass")
    return p


# -- a module as TVMScript that parses back to it ------------------------------------------------
#: How TVM 0.27 prints a constant it cannot write inline (any tensor of rank 1 or more, some
#: scalars): a reference into a metadata section that ``show_meta=True`` would print, except
#: that it crashes there (SIGSEGV in ``ToJSONGraph``).
_META = re.compile(r'metadata\["ir\.GenericConst"\]\[(\d+)\]')
#: The name of the constants' list in the script.
CONSTS = "C"

#: A non-finite scalar constant as TVM 0.27 prints it, ``R.const("-inf", "float32")``: a string,
#: which its own parser refuses ("value has to be scalar or Tensor").
_NONFINITE = re.compile(r'R\.const\("(-?inf|nan)", ')


def module_source(mod) -> tuple:
    """``(text, constants)``: the module's TVMScript with every constant the printer puts in
    its metadata written as ``R.const(C[k], "dtype")``, and the list ``C`` of their NumPy
    values; a non-finite scalar, which the printer writes as a string its parser refuses, is
    written ``R.const(float("-inf"), "dtype")``. The text starts with the imports it needs
    (TVM's printer writes them as comments) and defines ``class Module``. Which constant is
    ``metadata[...][k]`` is the printer's order of first appearance; :func:`parses_back`
    checks the result."""
    import tvm  # local: optional compiler, imported where it runs
    from tvm import relax, tirx
    from tvm.s_tir import renew_defs  # local: optional compiler, imported where it runs

    # A PrimFunc made by emit_te shares its shape variables with the Relax function: TVM 0.27
    # then prints them once, as a module-level TypeVar, which its TIR parser rejects in a
    # buffer's shape. Fresh definitions per PrimFunc print inside it (``seq = T.int64()``).
    mod = tvm.IRModule({gv: renew_defs(f) if isinstance(f, tirx.PrimFunc) else f for gv, f in mod.functions.items()},
                       attrs=mod.attrs)
    text = mod.script()
    found: list = []

    def visit(e):
        if isinstance(e, tvm.ir.expr.Constant) and hasattr(e, "value") and not any(e.same_as(c) for c in found) \
                and _META.search(e.script()):
            found.append(e)

    for name in re.findall(r"^    def (\w+)\(", text, re.M):  # the functions in printed order
        f = mod[name]
        if isinstance(f, relax.Function):
            relax.analysis.post_order_visit(f, visit)
    refs = sorted({int(k) for k in _META.findall(text)})
    if refs != list(range(len(found))):
        raise ValueError(f"the module prints {len(refs)} metadata constants, {len(found)} were found")
    values = [c.value.numpy() for c in found]
    body = _META.sub(lambda m: f'R.const({CONSTS}[{m.group(1)}], "{values[int(m.group(1))].dtype}")', text)
    body = _NONFINITE.sub(lambda m: f'R.const(float("{m.group(1)}"), ', body)
    lines = body.splitlines()
    start = next(k for k, ln in enumerate(lines) if not ln.startswith("# ") and ln.strip())
    imports = [ln[2:] for ln in lines[:start] if ln.startswith(("# from ", "# import "))]
    rest = [ln for ln in lines[start:] if not ln.startswith("# Metadata omitted")]
    while rest and not rest[-1].strip():
        rest.pop()
    rest = _own_prim_vars(mod, rest)
    if any(ln.startswith("import tvm") for ln in rest):
        imports.insert(0, "import tvm")
        rest = [ln for ln in rest if ln != "import tvm"]
    return "\n".join(imports + [""] + rest) + "\n", values


def _own_prim_vars(mod, lines: list) -> list:
    """TVM 0.27 prints a symbolic dimension of a function's signature once, as a module-level
    ``typing.TypeVar``; its Relax parser reads that back, its TIR parser does not (a buffer's
    shape must be a PrimExpr), nor a Relax function that declares a variable of the same name
    in its body (``batch = T.int64()``). Each PrimFunc that uses one gets a variable of its own
    (``batch__te_div = tvm.tirx.Var("batch", "int64")`` at module level, used by it alone;
    Relax's shape variables are int64), and such a Relax function's variable is renamed
    (``batch__main``). :func:`parses_back` checks the result. ``mod`` is not read."""
    typevars = {m.group(1) for ln in lines for m in [re.match(r'^(\w+) = TypeVar\("(\w+)"\)$', ln)] if m}
    if not typevars:
        return lines
    out, defs, k = [], [], 0
    while k < len(lines):
        ln = lines[k]
        m = re.match(r"^    def (\w+)\(", lines[k + 1]) if ln.startswith("    @") and k + 1 < len(lines) else None
        if m is None:
            out.append(ln)
            k += 1
            continue
        name = m.group(1)
        end = k + 1
        while end < len(lines) and not lines[end].startswith("    @"):
            end += 1
        block = "\n".join(lines[k:end])
        prim = ln.startswith("    @T.prim_func")
        for tv in sorted(typevars):
            if not prim and re.search(rf"^        {tv} = T\.int64\(\)$", block, re.M):
                # a Relax function that declares a variable of the TypeVar's name in its body:
                # the parser refuses to redefine the module's name there
                block = re.sub(rf"\b{tv}\b", f"{tv}__{name}", block)
            elif prim and re.search(rf"\b{tv}\b", block):
                own = f"{tv}__{name}"
                block = re.sub(rf"\b{tv}\b", own, block)
                defs.append(f'{own} = tvm.tirx.Var("{tv}", "int64")')
        out.extend(block.split("\n"))
        k = end
    at = next(i for i, ln in enumerate(out) if ln.startswith("@I.ir_module"))
    return (["import tvm"] if defs else []) + out[:at] + defs + out[at:]


def parses_back(mod, text: str, values: list):
    """Raise unless ``text`` (with ``C`` bound to ``values``), imported as a Python file the
    way a repro script is, defines a ``Module`` structurally equal to ``mod``; that module.
    TVMScript reads a class's source from its file, so it is written to one."""
    import importlib.util

    import numpy as np
    import tvm  # local: optional compiler, imported where it runs

    d = tempfile.mkdtemp(prefix="dlgate-tvmscript-")
    name = f"dlgate_tvmscript_{os.getpid()}_{os.path.basename(d).replace('-', '_')}"
    path = os.path.join(d, name + ".py")
    try:
        np.savez(os.path.join(d, "c.npz"), *values)
        with open(path, "w") as f:
            f.write("import numpy as np\n"
                    f"with np.load({os.path.join(d, 'c.npz')!r}) as _z:\n"
                    f"    {CONSTS} = [_z['arr_%d' % k] for k in range({len(values)})]\n" + text)
        spec = importlib.util.spec_from_file_location(name, path)
        m = importlib.util.module_from_spec(spec)
        sys.modules[name] = m
        try:
            spec.loader.exec_module(m)
            tvm.ir.assert_structural_equal(m.Module, mod)
            return m.Module
        finally:
            sys.modules.pop(name, None)
    finally:
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        os.rmdir(d)
