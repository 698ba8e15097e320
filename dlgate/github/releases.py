"""The regression range of a finding among a compiler's published releases.

A maintainer triaging a fuzzer's issue first asks "since when?". For a weekly finding, dlgate
answers from the package index: it lists the compiler's releases (``pip index versions``,
which follows pip's own index settings), keeps those up to the version the bug was found on,
installs one release at a time into a scratch folder (``pip install --no-deps --target``,
cached per version) and runs the bundle's standalone ``repro.py`` with that folder first on
``PYTHONPATH``: the interpreter given (dlgate's own by default) supplies NumPy, onnx and the
compiler's other dependencies. It bisects: the newest release is probed first (clean there:
the bug is newer than every release), then the oldest, then the middle of what is left, so
``n`` releases take about ``log2(n) + 2`` probes. The answer is the newest release without the
bug and the oldest with it.

A probe is decisive only when the release fails the way dlgate saw (a wrong result for a
wrong-result finding; an error of the same exception type for an error) or passes. A release
that cannot be installed or imported, or fails differently (an older release that lacks the
operator altogether), says nothing about this bug: it is recorded and skipped, and the bisection
tries its neighbours. This assumes the bug, once in, stays in until the version it was found on;
the probes are listed so that a reader can check.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

from dlgate.gate.journal import write_json

BUG, CLEAN, OTHER, ERROR = "bug", "clean", "other failure", "cannot test"
DECISIVE = (BUG, CLEAN)
#: Wrong-result verdicts: repro.py says "BUG: wrong result" for these.
VALUE_VERDICTS = ("mismatch", "shape_mismatch", "dtype_mismatch")
RESULT = "bisect.json"
#: The most releases one bisection installs and runs.
MAX_PROBES = 10


class ReleaseError(Exception):
    """The releases could not be listed; one line."""


@dataclass
class Probe:
    version: str
    outcome: str
    seconds: float
    line: str  # repro.py's verdict line, or why it could not be run


def _version_key(v: str):
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(v))
    except InvalidVersion:
        return (1, v)


def parse_index_versions(text: str) -> list:
    """The versions ``pip index versions`` printed (its ``Available versions:`` line), oldest first."""
    m = re.search(r"^Available versions:\s*(.*)$", text, re.M)
    if not m:
        raise ReleaseError("pip index versions printed no 'Available versions:' line")
    return sorted({v.strip() for v in m.group(1).split(",") if v.strip()}, key=_version_key)


def list_releases(package: str, python: str = sys.executable, index_url: str | None = None,
                  run=subprocess.run) -> list:
    """The package's releases on the index pip uses (pre-releases left out), oldest first."""
    cmd = [python, "-m", "pip", "index", "versions", package, "--disable-pip-version-check"]
    if index_url:
        cmd += ["--index-url", index_url]
    res = run(cmd, capture_output=True, text=True, timeout=120)
    if res.returncode:
        last = (res.stderr or res.stdout).strip().splitlines()
        raise ReleaseError(f"pip index versions {package}: {last[-1] if last else f'exit status {res.returncode}'}")
    return parse_index_versions(res.stdout)


def candidates(versions: list, found: str | None, since: str | None = None) -> list:
    """The releases a bisection considers: final releases up to ``found`` (the version the bug
    was seen on; a development build's own release counts as not yet published), from ``since``."""
    from packaging.version import InvalidVersion, Version

    out = []
    for v in versions:
        try:
            pv = Version(v)
        except InvalidVersion:
            continue
        if pv.is_prerelease or pv.is_devrelease:
            continue
        if found:
            try:
                fv = Version(found)
            except InvalidVersion:
                fv = None
            if fv is not None and (pv > fv or (fv.is_devrelease or fv.is_prerelease) and pv >= Version(fv.base_version)):
                continue
        if since and pv < Version(since):
            continue
        out.append(v)
    return sorted(out, key=_version_key)


def classify(verdict: str, detail: str, returncode: int, output: str) -> tuple:
    """``(outcome, line)`` of one run of repro.py: the bug, clean, another failure, or not testable."""
    lines = [ln for ln in output.splitlines() if ln.strip()]
    bug = next((ln for ln in lines if ln.startswith("BUG:")), None)
    if returncode == 0 and any(ln.startswith("OK:") for ln in lines):
        return CLEAN, next(ln for ln in lines if ln.startswith("OK:"))
    if returncode < 0:  # killed by a signal: repro.py runs the compiler in-process
        outcome = BUG if verdict == "crash" else OTHER
        return outcome, f"killed by signal {-returncode}"
    if bug is None:
        return ERROR, (lines[-1] if lines else f"exit status {returncode}")[:300]
    wrong = bug.startswith("BUG: wrong result")
    if verdict in VALUE_VERDICTS:
        return (BUG if wrong else OTHER), bug[:300]
    if wrong:
        return OTHER, bug[:300]
    expected = re.match(r"\s*([A-Za-z_][\w.]*)\s*:", detail or "")
    got = re.match(r"BUG:\s*([A-Za-z_][\w.]*)\s*:", bug)
    if expected and got and expected.group(1).split(".")[-1] != got.group(1).split(".")[-1]:
        return OTHER, bug[:300]
    return BUG, bug[:300]


def bisect(versions: list, probe, max_probes: int = MAX_PROBES) -> dict:
    """Bisect ``versions`` (oldest first) with ``probe(version) -> Probe``. The answer:
    ``newest_without`` / ``oldest_with`` (None where no release is), ``fails_otherwise`` (the
    newest release below ``oldest_with`` that failed another way, when that bounds the search),
    the probes in order, and whether the range is ``determined`` (the two are neighbours).

    The newest release is probed first (down to the newest that is decisive); then the middle of
    what is left. A release that fails otherwise, or cannot be installed or run, is taken as too old
    for the model (it lacks the operator, the opset, a binary for this Python): the search goes on
    among the newer ones."""
    done: dict = {}
    order: list = []

    def outcome(i: int) -> str | None:
        if i not in done:
            if len(order) >= max_probes:
                return None
            done[i] = probe(versions[i])
            order.append(done[i])
        return done[i].outcome

    result = {"newest_without": None, "oldest_with": None, "fails_otherwise": None, "determined": False}
    n, top = len(versions), None
    for i in range(n - 1, -1, -1):
        o = outcome(i)
        if o is None or o in DECISIVE:
            top = i if o is not None else None
            break
    if top is not None and done[top].outcome == CLEAN:
        result.update(newest_without=versions[top], determined=top == n - 1)
    elif top is not None:
        good, wall, bad = -1, -1, top  # -1: before the oldest release listed
        while bad - max(good, wall) > 1:
            mid = (max(good, wall) + bad) // 2
            o = outcome(mid)
            if o is None:
                break
            if o == BUG:
                bad = mid
            elif o == CLEAN:
                good = mid
            else:
                wall = mid
        result.update(newest_without=versions[good] if good >= 0 else None, oldest_with=versions[bad],
                      fails_otherwise=versions[wall] if wall > good else None,
                      determined=bad - good == 1 or (bad - wall == 1 and wall > good))
    result["probes"] = [asdict(p) for p in order]
    return result


def summary(package: str, found: str | None, result: dict) -> str:
    """One sentence: the regression range, or what keeps it open."""
    probes = result.get("probes") or []
    secs = sum(p["seconds"] for p in probes)
    tail = f" ({len(probes)} release(s) probed, {secs:.0f} s)"
    new, old, other = result.get("newest_without"), result.get("oldest_with"), result.get("fails_otherwise")
    if new is None and old is None:
        return f"No release of {package} could be tested for this bug" + tail + "."
    if old is None:
        if result.get("determined"):
            return (f"No published release of {package} has the bug: the newest, {new}, does not; it came in after "
                    f"it (found on {found or 'a later build'})" + tail + ".")
        return f"{package} {new} does not have the bug; newer releases could not be tested" + tail + "."
    if other:
        what = next((p["line"] for p in probes if p["version"] == other), "")
        text = (f"{package} {old} is the oldest release with the bug that runs the model; {other} fails otherwise "
                f"({what[:120]})" + ("" if result.get("determined") else ", and releases between them were not tested"))
        if new:
            text += f"; {new} does not have the bug"
        return text + tail + "."
    if new:
        text = f"{package} {old} is the oldest release with the bug; {new} is the newest without it"
        if not result.get("determined"):
            text += " (releases between them were not tested)"
        return text + tail + "."
    if result.get("determined"):
        return f"Every release of {package} considered has the bug, back to the oldest, {old}" + tail + "."
    return f"{package} {old} has the bug; older releases were not tested" + tail + "."


def pip_probe(repro_dir: str, package: str, verdict: str, detail: str, envs: str, python: str = sys.executable,
              index_url: str | None = None, timeout: float = 600, with_deps: bool = False, run=subprocess.run):
    """``probe(version)`` for :func:`bisect`: install ``package==version`` into ``envs`` (once per
    version) and run the bundle's repro.py with it first on ``PYTHONPATH``, from a scratch folder."""
    script = os.path.join(os.path.abspath(repro_dir), "repro.py")

    def probe(version: str) -> Probe:
        start = time.monotonic()
        target = os.path.join(envs, f"{re.sub(r'[^A-Za-z0-9.]+', '-', package)}-{version}")
        if not os.path.exists(os.path.join(target, ".dlgate-installed")):
            cmd = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--target", target,
                   f"{package}=={version}"] + ([] if with_deps else ["--no-deps"])
            if index_url:
                cmd += ["--index-url", index_url]
            res = run(cmd, capture_output=True, text=True, timeout=timeout)
            if res.returncode:
                last = (res.stderr or res.stdout).strip().splitlines()
                return Probe(version, ERROR, round(time.monotonic() - start, 1),
                             f"cannot install: {last[-1] if last else res.returncode}"[:300])
            with open(os.path.join(target, ".dlgate-installed"), "w"):
                pass
        scratch = os.path.join(envs, "scratch")
        os.makedirs(scratch, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTHONPATH"] = target
        try:
            res = run([python, script], cwd=scratch, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            outcome = BUG if verdict == "timeout" else OTHER
            return Probe(version, outcome, round(time.monotonic() - start, 1), f"no answer within {timeout:g} s")
        outcome, line = classify(verdict, detail, res.returncode, res.stdout + "\n" + res.stderr)
        return Probe(version, outcome, round(time.monotonic() - start, 1), line)

    return probe


def bisect_releases(repro_dir: str, package: str, envs: str, python: str = sys.executable,
                    index_url: str | None = None, versions: list | None = None, since: str | None = None,
                    max_probes: int = MAX_PROBES, timeout: float = 600, with_deps: bool = False,
                    log=print, probe=None) -> dict:
    """Bisect the releases of ``package`` for the bug of the bundle in ``repro_dir``; writes
    ``bisect.json`` there and returns its content."""
    with open(os.path.join(repro_dir, "repro.json")) as f:
        doc = json.load(f)
    found = (doc.get("versions") or {}).get("version")
    listed = versions if versions is not None else list_releases(package, python, index_url)
    todo = candidates(listed, found, since)
    log(f"dlgate bisect-releases: {len(todo)} release(s) of {package} up to {found or 'the newest'}"
        + (f", {todo[0]} to {todo[-1]}" if todo else ""))
    probe = probe or pip_probe(repro_dir, package, doc.get("verdict", ""), doc.get("detail", ""), envs, python,
                               index_url, timeout, with_deps)

    def logged(version):
        p = probe(version)
        log(f"dlgate bisect-releases: {package} {version}: {p.outcome} in {p.seconds:g} s: {p.line}")
        return p

    result = bisect(todo, logged, max_probes) if todo else {"newest_without": None, "oldest_with": None,
                                                           "determined": False, "probes": []}
    out = {"package": package, "found_on": found, "releases": todo, **result}
    out["summary"] = summary(package, found, out)
    write_json(os.path.join(repro_dir, RESULT), out)
    log(f"dlgate bisect-releases: {out['summary']}")
    return out


def read(repro_dir: str) -> dict | None:
    """A bundle's ``bisect.json``, when a bisection ran."""
    try:
        with open(os.path.join(repro_dir, RESULT)) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and "summary" in doc else None


def add_arguments(p) -> None:
    """``dlgate bisect-releases``'s arguments."""
    p.add_argument("repro", metavar="REPRO_DIR", help="a reduced repro's folder (repros/<fingerprint>: repro.py, repro.json)")
    p.add_argument("--package", help="the compiler's package on the index (default: the backend's, e.g. onnxruntime, "
                                     "apache-tvm, torch, tensorrt)")
    p.add_argument("--versions", nargs="+", metavar="V", help="the releases to consider (default: pip index versions)")
    p.add_argument("--since", metavar="V", help="consider no release older than V")
    p.add_argument("--max-probes", type=int, default=MAX_PROBES, help=f"most releases installed and run (default {MAX_PROBES})")
    p.add_argument("--envs", help="folder for the installed releases, kept between runs (default: a dlgate-releases "
                                  "folder in the temporary directory)")
    p.add_argument("--python", default=sys.executable, help="interpreter that runs repro.py and supplies NumPy, onnx "
                                                            "and the compiler's dependencies (default: dlgate's)")
    p.add_argument("--index-url", help="package index to list and install from (default: pip's settings)")
    p.add_argument("--with-deps", action="store_true", help="install each release with its dependencies (default: "
                                                            "the release alone; the interpreter supplies the rest)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per install and per run of repro.py (default 600)")


class UsageProblem(ValueError):
    """A bad argument of ``dlgate bisect-releases``: one line, exit status 2."""


def command(args, log=print) -> int:
    """``dlgate bisect-releases``: 0 when the range is determined, 1 when some of it stays open."""
    import tempfile

    doc_path = os.path.join(args.repro, "repro.json")
    if not os.path.isfile(doc_path) or not os.path.isfile(os.path.join(args.repro, "repro.py")):
        raise UsageProblem(f"dlgate bisect-releases: {args.repro}: no repro.json and repro.py (not a reduced repro's folder)")
    try:
        with open(doc_path) as f:
            doc = json.load(f)
    except ValueError as e:
        raise UsageProblem(f"dlgate bisect-releases: {doc_path}: not JSON ({e})") from None
    package = args.package or doc.get("package") or package_of(doc)
    if not package:
        raise UsageProblem(f"dlgate bisect-releases: {args.repro}: which package? the backend "
                           f"{doc.get('backend', '?')} names none; give --package")
    if args.max_probes < 1:
        raise UsageProblem("dlgate bisect-releases: --max-probes must be at least 1")
    envs = args.envs or os.path.join(tempfile.gettempdir(), "dlgate-releases")
    os.makedirs(envs, exist_ok=True)
    try:
        out = bisect_releases(args.repro, package, envs, args.python, args.index_url, args.versions, args.since,
                              args.max_probes, args.timeout, args.with_deps, log=log)
    except ReleaseError as e:
        raise UsageProblem(f"dlgate bisect-releases: {e}") from None
    return 0 if out["determined"] else 1


def package_of(doc: dict) -> str | None:
    """The index package of the backend a repro.json names (``tvm[cpu]@O3`` -> apache-tvm)."""
    from dlgate.reduce.bundle import PACKAGES  # local: imports torch; off the CLI start-up

    name = (doc.get("backend") or "").split("[")[0].split("@")[0].split(":")[0]
    return PACKAGES.get(name)


def publish_hook(setting, log=print, envs: str | None = None, **options):
    """What :func:`dlgate.github.issues.publish` calls before opening an issue, for the campaign's
    ``issues.bisect_releases`` (or ``dlgate issues --bisect-releases``): False, off (None); True,
    the backend's package; a string, that package."""
    import tempfile

    if not setting:
        return None
    envs = envs or os.path.join(tempfile.gettempdir(), "dlgate-releases")

    def hook(repro_dir: str) -> dict | None:
        with open(os.path.join(repro_dir, "repro.json")) as f:
            doc = json.load(f)
        package = setting if isinstance(setting, str) else doc.get("package") or package_of(doc)
        if not package:
            log(f"dlgate: {os.path.basename(repro_dir)}: no regression range: no package for {doc.get('backend')}")
            return None
        os.makedirs(envs, exist_ok=True)
        return bisect_releases(repro_dir, package, envs, log=log, **options)

    return hook
