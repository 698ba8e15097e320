"""Reading Inductor's source for the change table (parsed, never imported, so a git tag other than
the installed one can be read): the ATen operators each lowering, fallback and decomposition
registers, the helpers that reach them, the operators pattern passes name, and code
generation's op handlers."""
from __future__ import annotations

import ast
import re

from dlgate.change.builders import SourceError

#: Where Inductor's source lives in PyTorch's tree, and the decompositions it starts from.
INDUCTOR = "torch/_inductor/"
DECOMP = ("torch/_decomp/decompositions.py",)
PASSES = INDUCTOR + "fx_passes/"
CODEGEN = INDUCTOR + "codegen/"
#: The code generators dlgate's ``inductor`` backend runs: C++ on the CPU, Triton on CUDA,
#: and the op decompositions both share. The others (Metal, Halide, Pallas, CuTe DSL)
#: generate for devices or options the backend does not use.
CODEGEN_USED = tuple(CODEGEN + f for f in ("cpp.py", "triton.py", "common.py", "cpp_utils.py", "simd.py"))
#: Operator namespaces an expression may name (``aten.mm``, ``torch.ops.prims.iota``);
#: Inductor's own prims (``inductor_prims.x``) are defined in the ``prims`` namespace.
NAMESPACES = {"aten": "aten", "prims": "prims", "inductor_prims": "prims",
              "quantized_decomposed": "quantized_decomposed", "quantized": "quantized",
              "higher_order": "higher_order", "rngprims": "rngprims", "_quantized": "_quantized",
              "mkldnn": "mkldnn", "onednn": "onednn"}
#: ``torch.x`` / ``torch.nn.functional.x`` / ``F.x`` calls a pattern may name.
TORCH_PREFIXES = (("torch", "nn", "functional"), ("F",), ("torch", "Tensor"), ("torch",))
#: Names under ``torch.`` that are modules or types, never a traced function.
TORCH_NOT_FUNCTIONS = {"ops", "nn", "fx", "Tensor", "Size", "dtype", "device", "float16", "float32", "float64",
                       "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool", "_inductor", "_dynamo",
                       "_C", "library", "utils", "testing", "cuda", "backends", "distributed", "SymInt",
                       "SymFloat", "SymBool", "Generator", "overrides", "_prims", "_refs", "_decomp", "autograd",
                       "jit", "_ops", "_higher_order_ops", "export", "compiler", "mps", "xpu", "version",
                       "contiguous_format", "channels_last", "strided", "layout", "memory_format", "inf", "nan",
                       "_subclasses", "_guards", "_logging", "_functorch", "_library", "accelerator",
                       "no_grad", "enable_grad", "is_grad_enabled", "ao", "fft", "finfo", "iinfo", "half", "float",
                       "double", "long", "int", "short", "char", "byte", "cfloat", "cdouble", "uint16", "uint32",
                       "uint64", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2", "size", "dim",
                       "shape", "numel", "ndim", "is_floating_point", "item", "tolist"}
#: A call registering what its arguments name: a lowering, a fallback, a decomposition.
REGISTRATION = re.compile(r"^_?(register\w*|make_fallback|add_needs_realized_inputs|add_layout_constraint)$")
#: A helper that more registrations than this reach is shared: its change is the ordinary
#: batch's to test (its reach would be most of the operators).
SHARED = 24
#: ``ops.*`` functions every lowering's code calls (loads, constants, casts, index math):
#: an op handler for one of them is shared code generation, not one operator's kernel.
SHARED_OPS = 12
_QUALIFY = re.compile(r"(?<![\w.])(?:torch\.ops\.)?(aten|prims|inductor_prims|quantized_decomposed|quantized"
                      r"|higher_order|rngprims|_quantized|mkldnn|onednn)\.(\w+(?:\.\w+)?)")
_TORCH_CALL = re.compile(r"(?<![\w.])(?:torch\.nn\.functional|torch\.Tensor|torch|F)\.(\w+)\s*\(")


def dotted(node) -> list | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None for anything but names and attributes."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def op_key(parts: list, torch_names: bool = False) -> str | None:
    """The operator a dotted name stands for: ``aten.add`` (the overload packet: every
    overload), ``aten.div.Tensor_mode`` and ``torch.ops.aten.add.default`` (one overload);
    ``torch.nn.functional.gelu`` is ``torch.gelu`` when ``torch_names``."""
    for i, p in enumerate(parts[:-1]):
        if p in NAMESPACES and all(q in ("torch", "ops", "_ops") for q in parts[:i]) \
                and (i == 0 or parts[i - 1] == "ops" or p == "inductor_prims"):
            return ".".join([NAMESPACES[p]] + parts[i + 1:i + 3])
    if torch_names:
        for pre in TORCH_PREFIXES:
            if len(parts) == len(pre) + 1 and tuple(parts[:-1]) == pre:
                name = parts[-1]
                if name not in TORCH_NOT_FUNCTIONS and not name.startswith("__") and name[:1].islower():
                    return f"torch.{name}"
    return None


def ops_in(node, torch_names: bool = False) -> list:
    """Every operator an expression or statement names, in source order, once."""
    out: list = []
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and not isinstance(getattr(n, "_parent", None), ast.Attribute):
            parts = dotted(n)
            k = op_key(parts, torch_names) if parts else None
            if k and k not in out:
                out.append(k)
    return out


def ops_in_text(lines, torch_names: bool = False) -> list:
    """The operators named in changed lines' text (for a hunk no definition encloses)."""
    out: list = []
    for line in lines:
        code = line.split("#", 1)[0]
        for ns, name in _QUALIFY.findall(code):
            k = f"{NAMESPACES[ns]}.{name}"
            if k not in out:
                out.append(k)
        if torch_names:
            for name in _TORCH_CALL.findall(code):
                if name not in TORCH_NOT_FUNCTIONS and not name.startswith("__") and name[:1].islower():
                    if f"torch.{name}" not in out:
                        out.append(f"torch.{name}")
    return out


def _mark_parents(tree) -> None:
    for n in ast.walk(tree):
        for ch in ast.iter_child_nodes(n):
            ch._parent = n


def _callee(call: ast.Call) -> str:
    f = call.func
    while isinstance(f, ast.Call):  # register_lowering(aten.x)(fn)
        f = f.func
    parts = dotted(f)
    return parts[-1] if parts else ""


def _registered(node) -> list:
    """Operators a definition registers: named in its decorators, or in the arguments of a
    registration call in its body (``register_lowering(aten.clamp_min)(maximum)``, a
    nested ``@register_lowering`` ...)."""
    out: list = []
    for n in ast.walk(node):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for d in n.decorator_list:
                for k in ops_in(d):
                    if k not in out:
                        out.append(k)
        elif isinstance(n, ast.Call) and REGISTRATION.search(_callee(n)):
            for a in list(n.args) + [kw.value for kw in n.keywords]:
                for k in ops_in(a):
                    if k not in out:
                        out.append(k)
    return out


def _definitions(tree) -> list:
    """(qualified name, node, top-level) of every class and function."""
    out = []

    def walk(node, outer, top):
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                q = outer + [ch.name]
                out.append((".".join(q), ch, top))
                walk(ch, q, False)
            elif not isinstance(ch, (ast.expr,)):
                walk(ch, outer, top)

    walk(tree, [], True)
    return out


def _names_used(node) -> set:
    """The plain names a definition or statement refers to (a helper is called by name in
    its own module; an attribute ``x.name`` is another module's or object's)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _ops_calls(node) -> set:
    """The Inductor ``ops.*`` functions a definition's code calls (``ops.where(...)``)."""
    got = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                and n.func.value.id == "ops":
            got.add(n.func.attr)
    return got


def analyze_registrations(text: str) -> dict:
    """A lowering or decomposition module: ``{"definitions": {qualname: ops}, "shared":
    {qualname: how many operators reach it}, "module": ops registered at module level,
    "ops_calls": {ops function: operators whose lowering calls it}}``."""
    tree = ast.parse(text)
    _mark_parents(tree)
    defs = _definitions(tree)
    own = {q: _registered(n) for q, n, _ in defs}
    # module-level statements: registration calls and operator lists (decomps_to_exclude)
    stmts = []
    for st in tree.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            continue
        ops = ops_in(st)
        if ops:
            stmts.append((ops, _names_used(st)))
    # a top-level helper reaches the operators of every registration referring to it
    tops = {q: n for q, n, top in defs if top and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    used = {q: _names_used(n) - {n.name} for q, n in tops.items()}
    reach = {q: set(own[q]) for q in tops}
    for ops, names in stmts:
        for q in tops:
            if q in names:
                reach[q].update(ops)
    changed = True
    while changed:
        changed = False
        for q in tops:
            for r in tops:
                if r != q and q in used[r] and not reach[r] <= reach[q]:
                    reach[q] |= reach[r]
                    changed = True
    definitions, shared = {}, {}
    for q, _, top in defs:
        ops = list(own[q])
        if top and q in reach:
            extra = sorted(reach[q] - set(ops))
            if len(reach[q]) > SHARED and not ops:
                shared[q] = len(reach[q])
                continue
            if len(reach[q]) <= SHARED:
                ops += extra
        if ops:
            definitions[q] = sorted(ops)
    ops_calls: dict = {}
    for q, n, _ in defs:
        if own[q]:
            for f in _ops_calls(n):
                ops_calls.setdefault(f, set()).update(own[q])
    module = sorted({k for ops, _ in stmts for k in ops})
    return {"definitions": definitions, "shared": shared, "module": module, "nested": _nested(defs, definitions),
            "ops_calls": {f: sorted(v) for f, v in ops_calls.items()}}


def _nested(defs: list, known: dict) -> dict:
    """A nested function's name -> the one mapped definition holding it (``op_count`` ->
    ``cat``), for names nested in exactly one: git's hunk header names the nearest
    ``def`` above a hunk, which may be a nested helper the hunk follows."""
    where: dict = {}
    for q, _, _top in defs:
        parts = q.split(".")
        if len(parts) > 1 and q not in known:
            holders = [".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1) if ".".join(parts[:i]) in known]
            where.setdefault(parts[-1], set()).add(holders[0] if holders else "")
    return {n: sorted(h)[0] for n, h in sorted(where.items()) if len(h) == 1 and "" not in h}


def analyze_patterns(text: str) -> dict:
    """A pattern pass: every operator each definition names (its patterns and
    replacements, ``aten.x``, ``prims.x``, ``torch.x``), and those the module level names."""
    tree = ast.parse(text)
    _mark_parents(tree)
    definitions, patterns = {}, {}
    inside: list = []  # pattern definitions: what they nest is their replacement
    for q, n, _ in _definitions(tree):
        if any(q.startswith(p + ".") for p in inside):
            continue
        decorated = [k for d in getattr(n, "decorator_list", ()) for k in ops_in(d, torch_names=True)]
        if decorated and any(_is_pattern(d) for d in n.decorator_list):
            # @register_graph_pattern(CallFunction(aten.bmm, ...)): the decorator is the
            # pattern (every node of it must match), the body its replacement
            ops, pattern = list(dict.fromkeys(decorated)), "all"
        else:
            ops = ops_in(n, torch_names=True)
            # a pattern written as a function: traced by the matcher, its names are
            # only a guide (methods, helpers), so most of them must be there
            pattern = "most" if _is_pattern(n) or "pattern" in n.name else ""
            if pattern:
                # a pattern written in PyTorch calls tensor methods: x.softmax(dim=-1).matmul(v)
                ops += [m for m in _method_calls(n) if m not in ops]
        if ops:
            definitions[q] = sorted(ops)
            if pattern:
                patterns[q] = pattern
        if pattern and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside.append(q)
    module, module_pattern = [], False
    for st in tree.body:
        if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            for k in ops_in(st, torch_names=True):
                if k not in module:
                    module.append(k)
            module_pattern = module_pattern or _is_pattern(st)
    return {"definitions": definitions, "module": sorted(module), "patterns": patterns,
            "module_pattern": module_pattern}


#: The pattern matcher's node patterns: a definition building one matches a subgraph (its
#: operators together), where one that only lists operators handles each alone.
PATTERN_NODES = {"CallFunction", "CallMethod", "CallFunctionVarArgs", "CallMethodVarArgs", "CallModule",
                 "CallModuleVarArgs", "MultiOutputPattern", "RepeatedExpr"}


def _method_calls(node) -> list:
    """``torch.x`` for each ``<expr>.x(...)`` method call (a pattern's tensor methods;
    names no spec's trace holds are ignored by the mapper)."""
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and not dotted(n.func):
            name = n.func.attr
            if name[:1].islower() and not name.startswith("__") and name not in TORCH_NOT_FUNCTIONS:
                if f"torch.{name}" not in out:
                    out.append(f"torch.{name}")
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            parts = dotted(n.func)
            if parts and len(parts) == 2 and parts[0] not in ("torch", "F", "aten", "prims", "self", "ops"):
                name = parts[1]  # query.transpose(...): a method on a pattern's argument
                if name[:1].islower() and not name.startswith("__") and name not in TORCH_NOT_FUNCTIONS \
                        and f"torch.{name}" not in out:
                    out.append(f"torch.{name}")
    return out


def _is_pattern(node) -> bool:
    return any(isinstance(n, ast.Call) and _callee(n) in PATTERN_NODES for n in ast.walk(node))


def handler_methods(text: str) -> dict:
    """Code generation: ``{"Class.method": ops function}`` for the methods of op-handler
    classes (``CppOverrides``, ``TritonOverrides``, ``OpDecompositions`` ...; a device's
    ``DeviceOpOverrides`` is about streams and launches, not operators)."""
    tree = ast.parse(text)
    out = {}
    for q, n, _ in _definitions(tree):
        parts = q.split(".")
        if len(parts) != 2 or not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        cls = parts[0]
        if not re.search(r"(Overrides|OpDecompositions|OpsMixin)$", cls) or "DeviceOpOverrides" in cls:
            continue
        if not n.name.startswith("_"):
            out[q] = n.name
    return out


def ops_vocabulary(text: str) -> list:
    """The Inductor ``ops.*`` functions, as ``ops_handler.py``'s ``OpsHandler`` declares them."""
    tree = ast.parse(text)
    for n in tree.body:
        if isinstance(n, ast.ClassDef) and n.name == "OpsHandler":
            return sorted(m.name for m in n.body if isinstance(m, ast.FunctionDef) and not m.name.startswith("_"))
    return []


def read_source(source) -> dict:
    """The files' facts: ``{"files": {path: entry}, "ops_calls": ..., "vocabulary": ...}``."""
    files: dict = {}
    ops_calls: dict = {}
    registered: set = set()
    paths = [p for p in source.ls(INDUCTOR, (".py",))] + [p for p in DECOMP if source.exists(p)]
    if not paths:
        raise SourceError(f"{source.where} holds no {INDUCTOR} (expected PyTorch's tree, or site-packages)")
    handlers: dict = {}
    for p in sorted(paths):
        try:
            text = source.read(p)
            if p.startswith(PASSES):
                got = analyze_patterns(text)
                if got["definitions"] or got["module"]:
                    files[p] = {"mode": "pattern", **got}
                continue
            if p.startswith(CODEGEN):
                h = handler_methods(text)
                if h:
                    handlers[p] = h
                continue
            got = analyze_registrations(text)
        except SyntaxError:
            continue
        if got["definitions"] or got["module"] or got["shared"]:
            files[p] = {"mode": "decomposition" if "decomp" in p.rsplit("/", 1)[-1] else "lowering",
                        "definitions": got["definitions"], "shared": got["shared"], "module": got["module"],
                        "nested": got["nested"]}
            for f, ops in got["ops_calls"].items():
                ops_calls.setdefault(f, set()).update(ops)
            registered.update(k for v in got["definitions"].values() for k in v)
            registered.update(got["module"])
    vocab = ops_vocabulary(source.read(INDUCTOR + "ops_handler.py")) if source.exists(INDUCTOR + "ops_handler.py") else []
    # an ops function stands for the ATen operator of its name and the lowerings calling it
    for p, h in handlers.items():
        if p not in CODEGEN_USED:
            files[p] = {"mode": "codegen", "definitions": {}, "shared": {}, "module": [],
                        "note": "code generation for a device or option dlgate's inductor backend does not use "
                                "(it compiles for the CPU with C++ and for CUDA with Triton)"}
            continue
        defs, shared = {}, {}
        for q, f in h.items():
            if vocab and f not in vocab:
                continue
            ops = set(ops_calls.get(f, ()))
            if f"aten.{f}" in registered:
                ops.add(f"aten.{f}")
            if len(ops) > SHARED_OPS:
                shared[q] = len(ops)
            elif ops:
                defs[q] = sorted(ops)
        if defs or shared:
            files[p] = {"mode": "codegen", "definitions": defs, "shared": shared, "module": []}
    return {"files": files}
