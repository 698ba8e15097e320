"""Reducing a TIR finding: the pass list, then the PrimFunc, then a standalone ``repro.py``.

1. **Pass list.** The sequence's passes outside :data:`dlgate.tir.passes.REQUIRED` are cut
   down by delta debugging (Zeller's ddmin, :func:`dlgate.reduce.passes._ddmin`, as the
   Relax pass lists are), the required ones kept in every candidate so each one builds;
   each candidate is judged by the oracles (:func:`dlgate.tir.oracle.check`) and kept when
   its verdict is the same failure (:meth:`~dlgate.tir.oracle.Verdict.key`).
2. **PrimFunc.** On the program's TVMScript text, one change at a time, in a fixed order,
   to a fixed point: delete a statement (a line with the lines indented under it), replace
   a loop, a conditional or a block by its body (a conditional by either branch), replace a
   stored value by one of its operands, halve a loop's extent. The text is edited, not a TVM object, so the gate's side needs no TVM;
   the worker parses each candidate and TVM's verifiers decide whether it is well formed
   (an ill-formed candidate is ``invalid``, not the failure, and is dropped), and a
   candidate whose behaviour the interpreter finds undefined is dropped the same way.
3. **repro.py** (:func:`repro_source`): the reduced PrimFunc as TVMScript, the reduced
   passes as TVM constructors, the inputs' recipe and the comparison, needing only TVM and
   NumPy. A pass of one's own (``package.module:function``, e.g. a planted fault) goes into
   the script with its module's source. It exits 1 when the failure shows, 0 when not. A
   finding against the interpreter (:func:`against_interp`) carries the interpreter's
   outputs (:func:`expected_outputs`) exactly, and the script holds both builds to them, so
   a miscompilation both builds share shows standalone too.

Deterministic (a fixed order of candidates; each distinct candidate judged once) and
bounded by ``max_probes`` and ``max_seconds`` each (the best so far is kept at a bound).
"""
from __future__ import annotations

import base64
import importlib
import importlib.metadata
import inspect
import re
import textwrap
import time
from dataclasses import dataclass, field

import numpy as np

from dlgate import __version__
from dlgate.exec.outcome import OK
from dlgate.reduce.passes import _ddmin
from dlgate.tir import build as B
from dlgate.tir import oracle as O
from dlgate.tir import passes as P


class _Limit(Exception):
    """A bound is reached."""


class _PassLimit(_Limit):
    """A bound is reached while the pass list is reduced; ``args[0]``: the best list so far."""


@dataclass
class Reduction:
    """``text``/``passes``: the reduced program and sequence; ``verdict``: theirs (the
    failure's kind); ``log``: what each step kept."""

    text: str
    passes: list
    verdict: O.Verdict
    probes: int = 0
    seconds: float = 0.0
    hit_limit: bool = False
    log: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {"passes": self.passes, "lines": len(body_lines(self.text)), "verdict": self.verdict.to_json(),
                "probes": self.probes, "seconds": round(self.seconds, 2), "hit_limit": self.hit_limit, "log": self.log}


class _Judge:
    """Each distinct (text, passes) judged once, against the target's verdict key."""

    def __init__(self, pool, target: O.Verdict, seed: int, max_probes: int, max_seconds: float, check_kw: dict):
        self.pool, self.key, self.seed = pool, target.key(), seed
        self.max_probes, self.deadline = max_probes, time.monotonic() + max_seconds
        self.kw = check_kw
        self.seen: dict = {}
        self.probes = 0

    def __call__(self, text: str, passes) -> O.Verdict | None:
        k = (text, tuple(passes))
        if k not in self.seen:
            if self.probes >= self.max_probes or time.monotonic() > self.deadline:
                raise _Limit
            self.probes += 1
            v = O.check(self.pool, text, list(passes), self.seed, **self.kw).verdict
            self.seen[k] = v if v.key() == self.key else None
        return self.seen[k]


def reduce(pool, text: str, passes: list, target: O.Verdict, seed: int = 0, max_probes: int = 300,
           max_seconds: float = 300.0, **check_kw) -> Reduction:
    """The reduced pass list, then program, of a failure (``target``: its verdict) of
    ``text`` built with ``passes`` on the inputs of ``seed``. ``check_kw`` go to
    :func:`dlgate.tir.oracle.check` (``repeats``, ``margin``, ``interp``), as found."""
    t0 = time.perf_counter()
    judge = _Judge(pool, target, seed, max_probes, max_seconds, check_kw)
    log: list = []
    best = {"text": text, "passes": list(passes)}
    hit = False
    try:
        best["passes"] = _reduce_passes(judge, text, list(passes), log)
        best["text"] = _reduce_text(judge, text, best["passes"], log, best)
    except _PassLimit as e:
        best["passes"] = e.args[0]
        hit = True
        log.append(f"bound reached after {judge.probes} probes")
    except _Limit:
        hit = True
        log.append(f"bound reached after {judge.probes} probes")
    verdict = judge.seen.get((best["text"], tuple(best["passes"]))) or target
    return Reduction(best["text"], best["passes"], verdict, judge.probes, time.perf_counter() - t0, hit, log)


def _reduce_passes(judge, text: str, passes: list, log: list) -> list:
    fixed = [k for k, n in enumerate(passes) if n in P.REQUIRED]
    free = [k for k, n in enumerate(passes) if n not in P.REQUIRED]

    def names(chosen) -> list:
        keep = set(chosen) | set(fixed)
        return [n for k, n in enumerate(passes) if k in keep]

    if judge(text, names([])) is not None:
        log.append("the required passes alone fail")
        return names([])
    if judge(text, passes) is None:
        log.append("the whole sequence does not fail the same way")
        return passes
    state = {"best": list(free)}
    try:
        _ddmin(free, lambda sub: judge(text, names(sub)) is not None, log, lambda s: [passes[k] for k in s], state)
    except _Limit:
        state["limit"] = True
    best = names(state["best"])
    if state.get("limit"):
        raise _PassLimit(best)
    return best


# -- the program's text --------------------------------------------------------------------------
_DEF = re.compile(r"^\s*def main\(")
_LOOP = re.compile(r"\b(range|T\.serial|T\.parallel|T\.vectorized|T\.unroll|T\.grid)\(([^()]*)\)")
#: Lines that declare rather than compute: deleting them alone only makes the program invalid.
_DECL = re.compile(r"^\s*(T\.func_attr|T\.reads|T\.writes|[\w, ]+= T\.axis\.)")


def body_lines(text: str) -> list:
    """The indices of the lines of ``main``'s body (after its ``def`` line)."""
    lines = text.split("\n")
    start = next((k for k, ln in enumerate(lines) if _DEF.match(ln)), None)
    if start is None:
        return []
    # a signature may continue on further lines: the body starts after the line ending in ':'
    while start < len(lines) and not lines[start].rstrip().endswith(":"):
        start += 1
    return [k for k in range(start + 1, len(lines)) if lines[k].strip() and not lines[k].lstrip().startswith("#")]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block(lines: list, k: int) -> int:
    """The end (exclusive) of the statement starting at line ``k``: its lines indented under it."""
    end = k + 1
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > _indent(lines[k])):
        end += 1
    return end


def _dedent(chunk: list, by: int) -> list:
    return [ln[by:] if ln.strip() else ln for ln in chunk]


def candidates(text: str):
    """Smaller versions of ``text``, in a fixed order: statement deletions (largest first),
    then loops, conditionals and blocks replaced by their bodies, then a stored value
    replaced by one of its operands (:func:`operands`), then halved extents."""
    lines = text.split("\n")
    body = body_lines(text)
    spans = sorted(((k, _block(lines, k)) for k in body), key=lambda s: (-(s[1] - s[0]), s[0]))
    for k, end in spans:
        if _DECL.match(lines[k]):
            continue
        yield "\n".join(lines[:k] + lines[end:]), f"deleted line {k + 1}"
    for k in body:
        head = lines[k].strip()
        if not head.endswith(":") or not head.startswith(("for ", "if ", "with ", "else")):
            continue
        end = _block(lines, k)
        inner = lines[k + 1:end]
        if not inner:
            continue
        by = _indent(inner[0]) - _indent(lines[k])
        yield "\n".join(lines[:k] + _dedent(inner, by) + lines[end:]), f"unwrapped line {k + 1}"
        if head.startswith("if ") and end < len(lines) and lines[end].strip() == "else:":
            other_end = _block(lines, end)
            other = lines[end + 1:other_end]
            yield ("\n".join(lines[:k] + _dedent(other, by) + lines[other_end:]),
                   f"kept the else branch of line {k + 1}")
            yield ("\n".join(lines[:k] + _dedent(inner, by) + lines[other_end:]),
                   f"kept the then branch of line {k + 1}")
    for k in body:
        lhs, eq, rhs = lines[k].partition(" = ")
        if not eq or lhs.strip().startswith(("for ", "if ", "with ")) or "T.alloc" in rhs or "T.axis" in rhs:
            continue
        for part in operands(rhs):
            yield "\n".join(lines[:k] + [f"{lhs} = {part}"] + lines[k + 1:]), f"simplified line {k + 1}"
    for k in body:
        for m in _LOOP.finditer(lines[k]):
            args = [a.strip() for a in m.group(2).split(",")]
            for j, a in enumerate(args):
                if a.isdigit() and int(a) > 1:
                    new = args[:j] + [str(int(a) // 2)] + args[j + 1:]
                    line = lines[k][:m.start(2)] + ", ".join(new) + lines[k][m.end(2):]
                    yield "\n".join(lines[:k] + [line] + lines[k + 1:]), f"halved an extent on line {k + 1}"


def operands(expr: str) -> list:
    """The operands of ``expr``'s outermost binary operator (``+ - * /`` between spaces,
    outside brackets), lowest precedence first, or of its outermost call
    (``T.max(a, b)``: ``a`` and ``b``): each a smaller expression of the same value type,
    as TVMScript prints them."""
    expr = expr.strip()
    for ops in ((" + ", " - "), (" * ", " / ", " // ", " % ")):
        depth, cuts = 0, []
        for i, ch in enumerate(expr):
            depth += ch in "([{"
            depth -= ch in ")]}"
            if depth == 0 and any(expr.startswith(o, i) for o in ops):
                cuts.append(i)
        if cuts:
            parts, last = [], 0
            for c in cuts:
                parts.append(expr[last:c].strip())
                last = c + 3 if expr[c + 1] in "+-*/%" and expr[c + 2] == " " else c + 4
            parts.append(expr[last:].strip())
            return [x for x in parts if x]
    m = re.fullmatch(r"T\.\w+\((.*)\)", expr)
    if m:
        depth, parts, last = 0, [], 0
        inner = m.group(1)
        for i, ch in enumerate(inner):
            depth += ch in "([{"
            depth -= ch in ")]}"
            if ch == "," and depth == 0:
                parts.append(inner[last:i].strip())
                last = i + 1
        parts.append(inner[last:].strip())
        # a call's first argument may be a dtype or a name (T.Cast("float32", x)): not a value
        return [x for x in parts if x and not x.startswith(("'", '"'))]
    return []


def _reduce_text(judge, text: str, passes: list, log: list, best: dict) -> str:
    """Greedy to a fixed point: the first candidate that still fails is taken, and the
    candidates of the new text are tried from the start."""
    changed = True
    while changed:
        changed = False
        for cand, what in candidates(text):
            if cand != text and judge(cand, passes) is not None:
                text = best["text"] = cand
                log.append(what)
                changed = True
                break
    return text


# -- repro.py ------------------------------------------------------------------------------------
_REPRO = '''"""Standalone reproduction of a TIR finding on TVM {version} (dlgate's TIR mode).

The PrimFunc below (TVMScript) is built for llvm twice: with the minimal pass sequence and
with the sequence under test, then run on the same deterministic inputs; {against}
Needs only TVM and NumPy. Exit status 1: the failure shows ({kind}: {detail}); 0: it does not.
"""
import base64
import importlib
import sys
import types

import numpy as np
import tvm
from tvm.tirx.build import split_host_device_mods, tir_to_runtime

SCRIPT = {script!r}

#: (module, constructor, arguments) of each pass, in order.
PASSES = {passes!r}
MINIMAL = {minimal!r}
FINALIZE = {finalize!r}
SEED = {seed!r}
KIND = {kind!r}
{extra}

def make_pass(module, ctor, args):
    where = EXTRA[module] if module in EXTRA else importlib.import_module(module)
    item = getattr(where, ctor)
    return item if isinstance(item, tvm.transform.Pass) else item(*args)


def build(passes):
    mod = tvm.script.from_source(SCRIPT)
    mod = mod if isinstance(mod, tvm.IRModule) else tvm.IRModule({{"main": mod}})
    target = tvm.target.Target("llvm")
    mod = tvm.tirx.transform.BindTarget(target.with_host(target))(mod)
    mod = tvm.transform.Sequential([make_pass(*p) for p in passes])(mod)
    host, device = split_host_device_mods(mod)
    host = tvm.transform.Sequential([getattr(tvm.tirx.transform, n)() for n in FINALIZE])(host)
    return tir_to_runtime(host, device, target), mod


def signature():
    mod = tvm.script.from_source(SCRIPT)
    func = mod["main"] if isinstance(mod, tvm.IRModule) else mod
    out = []
    for p in func.params:
        ty = p.ty
        if isinstance(ty, tvm.tirx.buffer.BufferType):
            out.append(("buffer", tuple(int(d) for d in ty.shape), str(ty.dtype)))
        else:
            out.append(("scalar", (), str(ty.dtype)))
    return out


{inputs_for}

{float_tolerance}

#: The program's loosest float dtype: no float is compared more tightly than it.
FLOOR = {floor!r}

{compare}

{to_argument}

def run(rt, values):
    args = [to_argument(v) for v in values]
    rt["main"](*args)
    return [a.numpy() if hasattr(a, "numpy") else np.array(v) for a, v in zip(args, values)]


{expected}

def describe(diff):
    if "index" not in diff:
        return f"argument {{diff['arg']}}: {{diff.get('detail', '')}}"
    return (f"argument {{diff['arg']}} at {{diff['index']}}: {{diff['got']!r}}, expected {{diff['want']!r}} "
            f"({{diff['count']}} elements differ)")


def main():
    values = inputs_for(signature(), SEED)
    want = run(build(MINIMAL)[0], values)
    got = run(build(PASSES)[0], values)  # a crash or an exception here is the finding itself
    if EXPECTED is not None:  # the finding is against TIR's semantics: both builds are held to them
        expected = decode(EXPECTED)
        for name, out in (("minimal sequence", want), ("sequence under test", got)):
            diff = compare(out, expected, FLOOR)
            if diff is not None:
                print(f"reproduced: the build of the {{name}} differs from the expected outputs: "
                      f"{{describe(diff)}}")
                print(f"expected outputs: {{EXPECTED_FROM}}")
                return 1
        print("not reproduced: both builds give the expected outputs")
        print(f"expected outputs: {{EXPECTED_FROM}}")
        return 0
    diff = compare(got, want, FLOOR)
    if diff is None:
        print("not reproduced: the two builds agree")
        return 0
    print(f"reproduced: the sequence under test differs from the minimal one: {{diff}}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
'''


def _spec(name: str) -> tuple:
    if B.external(name):
        mod, _, attr = name.rpartition(":")
        return (mod, attr, ())
    return P.PASSES[name]


#: Where a repro's expected outputs come from and why they are trusted (its comment and output).
EXPECTED_FROM = (
    "the program's semantics per TIR on these inputs, computed by dlgate's TIR interpreter "
    "(dlgate/tir/interp.py, dlgate {dlgate}), which runs the PrimFunc as written with no TVM pass. It is "
    "trusted for this program because it took all of it (it refuses any statement, expression or "
    "intrinsic it does not know) and found none of the undefined behaviours it checks for on these "
    "inputs (an access outside a buffer, a read of an element never written, an element two iterations "
    "of a parallel or vectorized loop share, integer overflow or division by zero, a shift out of range, "
    "a float-to-integer cast out of range, a min or max of NaN): every build must give these values, "
    "floats within the tolerance of compare()")

_EXPECTED = '''#: Expected outputs, one (dtype, shape, base64 of the bytes in native order) per argument:
#: {where}
{literals}EXPECTED = [
{rows}]
EXPECTED_FROM = {where_line!r}


def decode(expected):
    return [np.frombuffer(base64.b64decode(data), dtype=np.dtype(dtype)).reshape(shape).copy()
            for dtype, shape, data in expected]'''

_NO_EXPECTED = '''#: No expected outputs: the two builds are compared with each other.
EXPECTED = None'''


def against_interp(verdict: O.Verdict) -> bool:
    """Whether ``verdict`` is an inconsistency with the interpreter (TIR's semantics), the
    finding a repro needs expected outputs for: the builds may agree with each other."""
    return verdict.kind == O.INCONSISTENT and verdict.mismatch.get("against") == "interp"


def expected_outputs(pool, text: str, seed: int) -> list | None:
    """The interpreter's outputs (:mod:`dlgate.tir.interp`) for ``text`` on the inputs of
    ``seed``, in ``pool``'s TIR worker: every argument after the run; None where the
    interpreter does not take the program or finds its behaviour undefined."""
    out = pool.execute(B.SPEC, B.Job(text, (), seed, False, 0, "interp").model(), [])
    return [np.asarray(a) for a in out.outputs[:-1]] if out.status == OK else None


def _expected_block(expected: list) -> str:
    where = EXPECTED_FROM.format(dlgate=__version__)
    rows, literals = [], []
    for k, a in enumerate(np.asarray(x) for x in expected):
        data = base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()
        rows.append(f"    ({str(a.dtype)!r}, {list(a.shape)!r}, {data!r}),\n")
        if a.size <= 16:  # a small argument's values, for the reader (EXPECTED is what counts)
            literals.append(f"#: argument {k}, {a.dtype}{list(a.shape)}: {a.tolist()!r}\n")
    wrapped = "\n#: ".join(textwrap.wrap(where, 88))
    return _EXPECTED.format(where=wrapped, literals="".join(literals), rows="".join(rows), where_line=where)


def repro_source(text: str, passes: list, verdict: O.Verdict, seed: int = 0, expected: list | None = None,
                 reference: list | None = None) -> str:
    """The standalone ``repro.py`` of a (reduced) finding: see the module's text.
    ``expected``: the interpreter's outputs (:func:`expected_outputs`) for a finding against
    it (:func:`against_interp`): the script then holds both builds to them, so it shows a
    miscompilation both builds share. ``reference``: the reference sequence (default the
    minimal one), as :func:`dlgate.tir.oracle.check` takes it."""
    reference = P.minimal() if reference is None else list(reference)
    extra_mods = sorted({n.rpartition(":")[0] for n in list(passes) + reference if B.external(n)})
    extra = ["EXTRA = {}"]
    for m in extra_mods:
        src = inspect.getsource(importlib.import_module(m))
        extra.append(f"EXTRA[{m!r}] = types.ModuleType({m!r})\n"
                     f"exec(compile({src!r}, {m!r}, 'exec'), EXTRA[{m!r}].__dict__)")
    try:  # the installed TVM's version, without importing it (seconds) on the gate's side
        version = importlib.metadata.version("apache-tvm")
    except importlib.metadata.PackageNotFoundError:
        version = "(version unknown)"
    against = ("both builds' results\nare compared with the expected outputs (EXPECTED below: TIR's semantics, computed by\n"
               "dlgate's interpreter)." if expected is not None else "their results are compared.")
    return _REPRO.format(version=version, kind=verdict.kind, detail=verdict.detail.replace('"""', "'''"),
                         against=against, script=text, passes=[list(_spec(n)) for n in passes],
                         minimal=[list(_spec(n)) for n in reference], finalize=list(P.FINALIZE), seed=seed,
                         extra="\n".join(extra), inputs_for=inspect.getsource(B.inputs_for),
                         to_argument=inspect.getsource(B.to_argument),
                         float_tolerance=inspect.getsource(O.float_tolerance), compare=inspect.getsource(O.compare),
                         floor=O.loosest(text),
                         expected=_NO_EXPECTED if expected is None else _expected_block(expected))
