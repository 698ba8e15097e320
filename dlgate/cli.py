"""The ``dlgate`` command."""
from __future__ import annotations

import argparse
import errno
import json
import math
import os
import stat
import sys
import tempfile
import time

from dlgate import __version__
from dlgate import tables as T
from dlgate.cliparse import UsageError, exit_status_lines
from dlgate.cliparse import Parser as _Parser


def _change_args(p, what: str) -> None:
    g = p.add_argument_group("the change under test", what)
    g.add_argument("--changed-from", metavar="BASE", help="the pull request's base commit: the change is "
                   "`git diff BASE...HEAD` in --repo")
    g.add_argument("--diff", metavar="FILE", help="the change as a unified diff file (- for standard input), "
                   "instead of git")
    g.add_argument("--repo", default=".", help="the compiler's repository (default: the current folder)")
    g.add_argument("--compiler", help="whose mapping table to use: tvm, onnxruntime or inductor (default: the "
                   "compiler of the first backend under test)")
    g.add_argument("--change-table", metavar="FILE", help="a mapping table to use instead of the one shipped "
                   "with dlgate (tools/change_tables.py writes one)")


def _read_change(args, backends, where: str):
    """The TargetSet of --changed-from or --diff (None when neither is given); bad input is
    one line and exit status 2."""
    from dlgate import change as CH

    given = [f for f, v in (("--changed-from", args.changed_from), ("--diff", args.diff),
                            ("--targets", getattr(args, "targets", None))) if v is not None]
    if not given:
        return None
    if len(given) > 1:
        raise UsageError(f"{where}: give one of {', '.join(given)}, not several")
    if getattr(args, "targets", None) is not None:
        return _target_set(args.targets, f"{where}: --targets")
    if args.changed_from is not None and not args.changed_from.strip():
        raise UsageError(f"{where}: --changed-from: must not be empty")
    try:
        compiler = CH.compiler_of(backends, args.compiler)
        return CH.map_targets(CH.read(args.changed_from, args.diff, args.repo), compiler, args.change_table)
    except CH.ChangeError as e:
        raise UsageError(f"{where}: {e}") from None


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


#: The longest a compile+run, or a reduction, may be given (a day): nan, inf and 0 are refused.
MAX_SECONDS = 86_400.0


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(v) or not 0 < v <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0 and at most {MAX_SECONDS:g}, "
                                         f"got {text!r}")
    return v


def _out_dir(path: str, where: str) -> None:
    """An output folder that exists must be a writable folder; one that does not must be
    creatable: one line and exit status 2 before any work, not a traceback after it. Tried
    for real (a folder made and removed where the output would go), since permission bits
    do not tell: root passes them on a read-only mount, and a pseudo-filesystem (/proc,
    /sys) takes no new folder whatever its bits say."""
    if not path or "\0" in path:
        raise UsageError(f"{where}: not a usable folder name: {path!r}")
    probe = os.path.abspath(path)
    while True:
        try:
            st = os.stat(probe)
            break
        except FileNotFoundError:
            parent = os.path.dirname(probe)
            if parent == probe:
                raise UsageError(f"{where}: {path}: cannot be created") from None
            probe = parent
        except OSError as e:  # ENAMETOOLONG, ENOTDIR (a file on the way), ELOOP, EACCES
            raise UsageError(f"{where}: {path}: {e.strerror or e}") from None
    mine = probe == os.path.abspath(path)
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{where}: {path}: " + ("not a folder" if mine else f"cannot be created: {probe} is not a folder"))
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{where}: {path}: " + ("the folder is not writable" if mine
                                                 else f"cannot be created: {probe} is not writable"))
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".dlgate-probe-", dir=probe))
    except OSError as e:
        fs = _pseudo_filesystem(probe)
        why = f"{probe} is on {fs}, a pseudo-filesystem" if fs else f"{probe}: {e.strerror or e}"
        raise UsageError(f"{where}: {path}: " + ("the folder is not writable" if mine else "cannot be created")
                         + f" ({why})") from None


#: Filesystems that hold no files of their own: nothing dlgate writes belongs there.
_PSEUDO_FILESYSTEMS = ("proc", "sysfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs",
                       "configfs", "pstore", "bpf", "fusectl", "mqueue", "hugetlbfs", "efivarfs", "binfmt_misc")


def _pseudo_filesystem(path: str) -> str | None:
    """The type of the pseudo-filesystem ``path`` is on (``proc``), from /proc/self/mounts
    (the longest mount point above it); None elsewhere or where that cannot be read."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
            mounts = [line.split()[1:3] for line in f if len(line.split()) >= 3]
    except OSError:
        return None
    best, kind = "", None
    for point, fs in mounts:
        point = point.replace("\\040", " ")
        if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) > len(best):
            best, kind = point, fs
    return kind if kind in _PSEUDO_FILESYSTEMS else None


def _share(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"{v} is not between 0 and 1")
    return v


def _opset(text: str) -> int:
    v = _positive(text)
    if not 13 <= v <= 28:
        raise argparse.ArgumentTypeError(f"opset {v} is outside the supported range 13-28")
    return v


_EPILOG = ("exit statuses of `dlgate run`:\n" + exit_status_lines() + "\n"
           "the other commands exit 0 on success, 2 on a usage error (one line on stderr) and 3 on an internal "
           "error; `merge` decides the gate as `run` does (0, 1, 3, 4); `check` exits 1 when a case failed (3 when "
           "the reference did), `reduce` when the case does not fail or its failure does not reproduce, `issues` when "
           "GitHub refused a request; any command exits 141 when its reader closes the pipe it writes to")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="dlgate", description="CI regression gate for deep-learning compilers.", epilog=_EPILOG)
    p.add_argument("--version", action="version", version=f"dlgate {__version__}")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, required=True, metavar="COMMAND",
                           help="one of the commands below; `dlgate COMMAND --help` lists its options")

    g = sub.add_parser("gen", help="generate a deterministic batch of models")
    g.add_argument("--seed", required=True, help="root seed text (a commit SHA in CI)")
    g.add_argument("--count", type=_positive, required=True, help="number of models")
    g.add_argument("--out", required=True, help="output directory")
    g.add_argument("--campaign", default="default", help="campaign name (part of the seed)")
    g.add_argument("--start", type=int, default=0, help="index of the first case")
    g.add_argument("--max-nodes", type=_positive, default=10, help="most operators per model (default 10)")
    g.add_argument("--min-nodes", type=_positive, default=1, help="fewest operators per model (default 1)")
    g.add_argument("--opset", type=_opset, help="fixed ONNX opset (default: drawn per case from 13-28)")
    g.add_argument("--ops", help="comma-separated operator names to draw from (default: all)")
    g.add_argument("--dynamic-share", type=_share, default=0.25,
                   help="share of models with symbolic batch/sequence input dimensions (default 0.25)")
    g.add_argument("--extreme-share", type=_share, default=0.2,
                   help="share of models whose inputs and constants carry extreme values: NaN, +/-Inf, "
                        "huge magnitudes, subnormals, signed zeros, ties, integer limits (default 0.2)")
    g.add_argument("--support", metavar="SYSTEM", help="restrict to what backend SYSTEM was probed to support (e.g. onnxruntime, tvm)")
    g.add_argument("--no-guidance", action="store_true",
                   help="draw every case independently (default: coverage-guided, in index order from case 0, "
                        "as `dlgate run` generates its batch)")
    g.add_argument("--coverage-state", metavar="FILE",
                   help="the coverage state guidance starts from (a run's coverage-start.json, to regenerate "
                        "its cases); default: empty")
    g.add_argument("--targets", metavar="FILE",
                   help="aim the batch at a change's targets: a run's run.json (its recorded change) or the "
                        "output of `dlgate targets --json`")
    g.add_argument("--target-share", type=_share, default=0.8,
                   help="share of the batch aimed at the targets (default 0.8, as `dlgate run`)")

    tg = sub.add_parser("targets", help="what a change touches: its files mapped to operators and rewrites "
                        "(what `dlgate run --changed-from` aims the batch at)")
    _change_args(tg, "the change to map (one of --changed-from, --diff is required)")
    tg.add_argument("--json", action="store_true", help="print the target set as JSON (for `dlgate gen --targets`)")

    s = sub.add_parser("stats", help="diversity metrics of a generated batch")
    s.add_argument("dir", metavar="DIR", help="a folder written by `dlgate gen`")
    s.add_argument("--json", dest="json_out", help="where to write the JSON (default DIR/stats.json)")

    pr = sub.add_parser("probe", help="probe which operator x dtype combinations a system supports")
    pr.add_argument("--system", required=True, help="a backend name (see `dlgate backends`), e.g. onnxruntime, tvm")
    pr.add_argument("--refresh", action="store_true", help="ignore the cache and probe again")
    pr.add_argument("--jobs", type=_positive, default=1, help="probes run in parallel (default 1)")

    c = sub.add_parser("check", help="run generated cases on backends and judge them against the reference")
    c.add_argument("dir", metavar="DIR", help="a folder written by `dlgate gen`")
    c.add_argument("--backend", action="append", required=True, metavar="NAME[:DEVICE][@LEVEL]",
                   help="a backend under test (repeatable), e.g. tvm, onnxruntime@basic, tvm:cuda")
    c.add_argument("--reference", default="torch", metavar="NAME[:DEVICE]", help="the trusted reference (default torch)")
    c.add_argument("--out", help="where to write results.jsonl and failing cases (default DIR/check)")
    c.add_argument("--timeout", type=_seconds, default=60.0, help="seconds per compile+run before a case is a timeout")
    c.add_argument("--memory-mb", type=_positive, default=4096, help="memory cap of a backend worker")
    c.add_argument("--no-crosscheck", action="store_true", help="skip the lowest-opt-level and onnx.reference checks")

    r = sub.add_parser("run", help="run a campaign: the gate; a rerun of an interrupted run resumes it "
                       "(exit statuses below)",
                       epilog="exit statuses:\n" + exit_status_lines())
    r.add_argument("--config", help="campaign YAML, e.g. configs/pr.yaml (default: the embedded default campaign, "
                   "20 models, TVM on CPU against the PyTorch reference)")
    r.add_argument("--commit", help="commit SHA seeding the batch (default: GITHUB_SHA, else git rev-parse HEAD)")
    r.add_argument("--seed", help="explicit seed text instead of a commit")
    r.add_argument("--shard", metavar="I/N", help="run only shard I of N (merge the outputs with `dlgate merge`)")
    r.add_argument("--out", default="dlgate-out", help="output folder (default dlgate-out); a rerun resumes it")
    r.add_argument("--fresh", action="store_true",
                   help="discard what dlgate wrote in --out (journal, reports, cases/, repros/) instead of resuming")
    r.add_argument("--no-progress", action="store_true", help="plain progress lines even on a terminal")
    for key, kind, hlp in (("models", _positive, "number of models"), ("max-nodes", _positive, "most operators per model"),
                           ("min-nodes", _positive, "fewest operators per model"),
                           ("timeout", _seconds, "seconds per compile+run"), ("memory-mb", _positive, "worker memory cap"),
                           ("baseline", str, "baseline file"), ("corpus", str, "regression corpus folder"),
                           ("reference", str, "reference backend"), ("campaign", str, "campaign name"),
                           ("fail-on", str, "new | any | none"), ("confirm-runs", int, "re-runs of a failing case"),
                           ("findings-per-case", int, "most findings one case yields per backend (1: the first)"),
                           ("coverage-state", str, "coverage state file to start from (an earlier run's "
                            "coverage-state.json)")):
        r.add_argument(f"--{key}", type=kind, help=f"override the config: {hlp}")
    r.add_argument("--backend", action="append", metavar="NAME[:DEVICE][@LEVEL]", help="override the config's backends (repeatable)")
    r.add_argument("--base-python", help="head-versus-base: interpreter of the environment with the base build")
    r.add_argument("--budget", type=_seconds, metavar="SECONDS",
                   help="override the config: seconds this invocation may spend running cases; the case in flight "
                        "finishes, the rest is left for a rerun, which resumes (the verdict covers the cases that ran)")
    _change_args(r, "aim most of the batch at what the change touches (docs/change-aware.md)")
    r.add_argument("--targets", metavar="FILE", help="the change's targets as `dlgate targets --json` wrote them "
                   "(instead of --changed-from or --diff: one mapping shared by every shard)")
    r.add_argument("--target-share", type=_share, help="override the config: share of the batch aimed at the "
                   "change's targets (default 0.8)")

    rd = sub.add_parser("reduce", help="shrink a failing case while its failure keeps its signature")
    rd.add_argument("case", metavar="CASE", help="a case folder (a failure's bundle, e.g. OUT/cases/<id>, or a generated case)")
    rd.add_argument("--backend", required=True, metavar="NAME[:DEVICE][@LEVEL]", help="the failing backend")
    rd.add_argument("--reference", default="torch", metavar="NAME[:DEVICE]",
                    help="the trusted reference (default torch)")
    rd.add_argument("--out", help="where to write the reduced case (default CASE-reduced)")
    rd.add_argument("--max-seconds", type=_seconds, default=120.0, help="time bound of the reduction")
    rd.add_argument("--timeout", type=_seconds, default=60.0, help="seconds per compile+run")

    iss = sub.add_parser("issues", help="open or update GitHub issues for a run's reduced failures")
    iss.add_argument("--results", required=True, help="output folder of `dlgate run` or `dlgate merge`")
    iss.add_argument("--repo", required=True, help="OWNER/NAME of the repository to file issues in")
    iss.add_argument("--api-url", default=os.environ.get("GITHUB_API_URL", "https://api.github.com"),
                     help="REST API base (GitHub Enterprise: https://HOST/api/v3; default GITHUB_API_URL or api.github.com)")
    iss.add_argument("--label", default="dlgate", help="label carried by dlgate's issues (default dlgate)")
    iss.add_argument("--max-issues", type=int, help="most new issues one run opens, most severe and most frequent first "
                                                   "(default: the campaign's issues.max_per_run, else 5)")
    iss.add_argument("--bisect-releases", nargs="?", const=True, metavar="PACKAGE",
                     help="before opening an issue, find its regression range among the compiler's published releases "
                          "(`dlgate bisect-releases`; PACKAGE defaults to the backend's; default: the campaign's "
                          "issues.bisect_releases, else off)")
    iss.add_argument("--dry-run", metavar="DIR", help="write each issue's Markdown to DIR instead of calling GitHub")
    iss.add_argument("--memory-safety", choices=("private", "public"),
                     help="where a crash that may be a memory-safety bug (SIGSEGV, SIGBUS, a corrupted heap or stack) "
                          "goes: private, GitHub's private vulnerability reporting, never an issue; public, an issue "
                          "(default: the campaign's issues.memory_safety, else private)")

    from dlgate.github import releases

    releases.add_arguments(sub.add_parser("bisect-releases", help="the regression range of a reduced repro among the "
                                          "compiler's published releases: the newest without the bug, the oldest with it"))

    m = sub.add_parser("merge", help="combine shard outputs into one results file and report")
    m.add_argument("dirs", nargs="+", metavar="DIR", help="output folders of `dlgate run --shard`")
    m.add_argument("--out", required=True, help="the merged output folder (results, verdict, reports)")

    rp = sub.add_parser("report", help="write a static HTML page, with PNG plots, describing a run's output folder")
    rp.add_argument("dir", metavar="DIR", help="output folder of `dlgate run` or `dlgate merge`")
    rp.add_argument("--out", metavar="FILE", help="the page to write (default DIR/report.html); its plots go to the "
                    "folder named like it without .html (DIR/report/)")

    b = sub.add_parser("baseline", help="manage the known-failure baseline")
    bsub = b.add_subparsers(dest="baseline_command", parser_class=_Parser, required=True)
    bu = bsub.add_parser("update", help="accept a run's failures as known (run it on the default branch)")
    bu.add_argument("run_dir", metavar="RUN_DIR", help="output folder of `dlgate run` (or `dlgate merge`)")
    bu.add_argument("--baseline", required=True, help="the baseline file to write")
    bu.add_argument("--prune", action="store_true", help="drop entries this run did not see")

    cf = sub.add_parser("config", help="validate a campaign config, or print the config reference")
    cf.add_argument("file", nargs="?", metavar="FILE", help="a campaign YAML to validate; its resolved settings are printed as JSON")
    cf.add_argument("--reference", action="store_true", help="print every key as a Markdown table")
    cf.add_argument("--schema", action="store_true", help="print the JSON Schema of campaign files (for editors; "
                    "docs/campaign.schema.json holds a copy)")

    sub.add_parser("backends", help="list the installed backends and whether each can run here")
    o = sub.add_parser("ops", help="list the operator specs and the ONNX operator types they cover")
    o.add_argument("--gaps", action="store_true",
                   help="list what is not generated, with the reason: standard ONNX operators without a spec, "
                        "and the parts of spec'd operators their specs leave out")
    from dlgate.init import add_arguments as _init_arguments
    _init_arguments(sub.add_parser("init", help="write dlgate's pull-request and weekly workflows, campaigns and an "
                                   "empty baseline into a compiler's repository (docs/adding-to-ci.md)"))
    return p


def cmd_gen(args) -> int:
    from dlgate.case import make_case
    from dlgate.graph.generator import GenConfig, GenerationError, Generator
    from dlgate.spec.registry import select

    ops = tuple(o.strip() for o in args.ops.split(",") if o.strip()) if args.ops else None
    if ops is not None:
        try:
            select(ops)
        except KeyError as e:
            raise UsageError(f"dlgate gen: --ops: {e.args[0]}") from None
    if args.min_nodes > args.max_nodes:
        raise UsageError("dlgate gen: --min-nodes must not exceed --max-nodes")
    if args.start < 0:
        raise UsageError("dlgate gen: --start must be non-negative")
    _out_dir(args.out, "dlgate gen: --out")
    support = None
    if args.support:
        from dlgate.probe.support import support_set

        support = support_set(_probe_doc(args.support, "dlgate gen: --support"))
    aims = ()
    if args.targets:
        aims = _recorded_aims(args.targets, "dlgate gen: --targets")
    cfg = GenConfig(min_nodes=args.min_nodes, max_nodes=args.max_nodes, ops=ops, opset=args.opset, support=support,
                    dynamic_share=args.dynamic_share, extreme_share=args.extreme_share, aims=aims,
                    aim_share=args.target_share)
    gen = Generator(cfg)
    try:
        gen.drawable()
    except GenerationError as e:
        raise UsageError(f"dlgate gen: {e}") from None
    batch = None
    if not args.no_guidance:
        from dlgate.case import GuidedBatch
        from dlgate.coverage.state import CoverageState, StateError

        try:
            start = CoverageState.load(args.coverage_state) if args.coverage_state else CoverageState()
        except StateError as e:
            raise UsageError(f"dlgate gen: --coverage-state: {e}") from None
        batch = GuidedBatch(gen, args.seed, args.campaign, start)
    elif args.coverage_state:
        raise UsageError("dlgate gen: --coverage-state needs guidance (drop --no-guidance)")
    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    for i in range(args.start, args.start + args.count):
        c = batch.case(i)[0] if batch is not None else make_case(gen, args.seed, args.campaign, i)
        c.write(args.out)
    dt_ms = (time.perf_counter() - t0) * 1000 / args.count
    print(f"wrote {args.count} models to {args.out} ({dt_ms:.1f} ms per model)")
    return 0


def cmd_stats(args) -> int:
    from dlgate import stats

    try:
        graphs = stats.load_graphs(args.dir)
    except FileNotFoundError as e:
        raise UsageError(f"dlgate stats: {e}") from None
    res = stats.compute(graphs)
    T.show(*stats.summary(res))
    path = args.json_out or os.path.join(args.dir, "stats.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {path}")
    return 0


def _probe_doc(system: str, where: str, **kw) -> dict:
    """The probe document of a backend (cached), with usage errors for bad names."""
    from dlgate.backends.registry import load
    from dlgate.probe.support import ProbeError, load_or_probe

    try:
        load(system)
        return load_or_probe(system, **kw)
    except KeyError as e:
        from dlgate.backends.registry import names
        from dlgate.gate.config import did_you_mean

        hint = did_you_mean(system, names()) if ":" not in system else ""
        why = e.args[0].replace("; known:", f"{hint} known:", 1) if hint else e.args[0]
        raise UsageError(f"{where} {system}: {why}") from None
    except ProbeError as e:
        raise UsageError(f"{where}: cannot probe {system}: {e}") from None


def _target_set(path: str, where: str):
    """A target set as ``dlgate targets --json`` wrote it (or a run.json's ``change``)."""
    from dlgate.change.targets import TargetSet

    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise UsageError(f"{where}: {path}: {e.strerror}") from None
    except ValueError as e:
        raise UsageError(f"{where}: {path}: not JSON ({e})") from None
    if isinstance(doc, dict) and "change" in doc and "targets" not in doc:
        doc = doc["change"] or {}
    try:
        if not isinstance(doc, dict) or "targets" not in doc or not doc.get("compiler"):
            raise ValueError("no compiler and targets")
        return TargetSet.from_json(doc)
    except (ValueError, TypeError) as e:
        raise UsageError(f"{where}: {path}: not a target set ({e})") from None


def _recorded_aims(path: str, where: str) -> tuple:
    """The aims of a recorded change: a run.json's ``change``, or a target set's JSON."""
    from dlgate.change.aim import resolve

    ts = _target_set(path, where)
    return tuple(resolve(ts.targets, ts.compiler)[0])


def cmd_targets(args) -> int:
    from dlgate.change.aim import resolve

    from dlgate import change as CH
    from dlgate.change.compilers import guess

    if not (args.changed_from or args.diff):
        raise UsageError("dlgate targets: give the change: --changed-from BASE (git) or --diff FILE")
    if args.changed_from and args.diff:
        raise UsageError("dlgate targets: give one of --changed-from, --diff, not several")
    try:
        change = CH.read(args.changed_from, args.diff, args.repo)
        compiler = args.compiler or guess(change)
        if compiler is None:
            raise CH.ChangeError("cannot tell whose source tree the change is in; name the compiler with --compiler")
        ts = CH.map_targets(change, CH.compiler_of([], compiler), args.change_table)
    except CH.ChangeError as e:
        raise UsageError(f"dlgate targets: {e}") from None
    aims, gaps = resolve(ts.targets, ts.compiler)
    if args.json:
        print(json.dumps(dict(ts.to_json(), gaps=gaps), indent=1, sort_keys=True))
        return 0
    tab = ts.table
    print(f"{ts.source}: {len(ts.files)} changed file(s) on {ts.compiler} (table {tab.get('version', '?')})")
    for f in ts.files:
        if f.targets:
            print(f"  {f.path}")
            for t in f.targets:
                print(f"    -> {t.key}" + (f"  ({t.why.split(': ', 1)[1]})" if ": " in t.why else ""))
        else:
            print(f"  {f.path}: {f.skipped}" + (f" ({f.note})" if f.note else ""))
    targets = ts.targets
    if not targets:
        print("no target: `dlgate run` draws the ordinary batch")
        return 0
    print(f"{len(targets)} target(s); {len(aims)} reachable by the generator" + (":" if gaps else ""))
    for k, why in sorted(gaps.items()):
        print(f"  gap {k}: {why}")
    return 0


def cmd_probe(args) -> int:
    from dlgate.probe.support import cache_path

    last = [0.0]

    def progress(done, total):  # a line every 10 seconds, and at the end
        now = time.monotonic()
        if now - last[0] >= 10 or done == total:
            last[0] = now
            print(f"probing {args.system}: {done}/{total} combinations", file=sys.stderr, flush=True)

    doc = _probe_doc(args.system, "dlgate probe: --system", refresh=args.refresh, jobs=args.jobs, progress=progress)
    ops = sorted({n for n, _, _ in doc["supported"]})
    print(f"{args.system} {doc['version']}: {len(doc['supported'])} supported and "
          f"{len(doc['unsupported'])} unsupported operator x dtype x opset combinations "
          f"({len(ops)} operators usable)")
    print(f"cache: {cache_path(args.system, doc['version'])}")
    return 0


def cmd_ops(args) -> int:
    import onnx

    from dlgate.spec import coverage
    from dlgate.spec.registry import all_specs

    specs = list(all_specs().values())
    cov = coverage.covered(specs)
    std = coverage.standard_ops()
    n_std = sum(op in cov for op in std)
    if args.gaps:
        missing = T.table("operator", "why it has no spec")
        for op, why in coverage.missing(specs):
            T.row(missing, op, why or "(no reason recorded)")
        gaps = coverage.spec_gaps(specs)
        parts = T.table("spec", "part not generated", "why")
        for name, what, why in gaps:
            T.row(parts, name, what, why)
        from dlgate.spec import dtype_gaps
        types = dtype_gaps.listed()
        dts = T.table("schema type not drawn", "why")
        for what, why in types:
            T.row(dts, what, why)
        T.show(f"standard ONNX operators without a spec ({len(std) - n_std} of {len(std)}, onnx {onnx.__version__}):",
               missing, f"parts of spec'd operators not generated ({len(gaps)}):", parts,
               f"types the ONNX schema allows that no spec draws ({len(types)}; derived from the schema, "
               "opsets 13 and up):", dts)
        return 0
    t = T.table("spec", "family", "opset", "dtypes", "ONNX operators")
    for name, spec in all_specs().items():
        dts = sorted({d for s in spec.dtypes for d in s})
        T.row(t, name, spec.family, f">={spec.min_opset}", ",".join(dts), ",".join(dict.fromkeys((spec.onnx_op, *spec.onnx_ops))))
    T.show(t, f"{len(specs)} specs covering {len(cov)} ONNX operator types, {n_std} of the {len(std)} standard "
              f"operators onnx {onnx.__version__} defines (`dlgate ops --gaps` lists the rest and why)")
    return 0


def _backend_spec(text: str, where: str):
    """The BackendSpec of ``--backend``/``--reference`` text; a bad one is one line naming
    ``where`` (the command and the flag as typed), with the nearest name, device or level."""
    from dlgate.gate.config import check_backend

    try:
        return check_backend(text)
    except ValueError as e:
        raise UsageError(f"{where}: {e.args[0]}") from None


def cmd_check(args) -> int:
    from collections import Counter

    from dlgate.check import CaseError, CheckConfig, case_dirs, check, load_bundle, save_bundle, verify_bundle
    from dlgate.exec.worker import Pool
    from dlgate.oracle import verdict as V

    specs = [_backend_spec(b, f"dlgate check: --backend {b}") for b in args.backend]
    ref = _backend_spec(args.reference, f"dlgate check: --reference {args.reference}")
    try:
        dirs = case_dirs(args.dir)
        for d in dirs:  # every case is checked before any runs, and before results.jsonl is opened
            verify_bundle(d)
    except FileNotFoundError as e:
        raise UsageError(f"dlgate check: {e}") from None
    except CaseError as e:
        raise UsageError(f"dlgate check: {e}") from None
    out = args.out or os.path.join(args.dir, "check")
    _out_dir(out, "dlgate check: --out")
    os.makedirs(out, exist_ok=True)
    cfg = CheckConfig(specs, ref, timeout_s=args.timeout, memory_mb=args.memory_mb, crosscheck=not args.no_crosscheck)
    counts: Counter = Counter()
    internal = False
    with Pool(cfg.timeout_s, cfg.memory_mb) as pool, open(os.path.join(out, "results.jsonl"), "w") as res:
        for d in dirs:
            try:
                case = load_bundle(d)
            except CaseError as e:  # changed since it was checked
                raise UsageError(f"dlgate check: {e}") from None
            rec = check(pool, case, cfg)
            res.write(json.dumps(rec, sort_keys=True, default=str) + "\n")
            res.flush()
            bad = [v for v in rec["verdicts"] if v["verdict"] in V.FAILURES or v["verdict"] == V.REFERENCE_ERROR]
            if bad:
                save_bundle(out, case)
            for v in rec["verdicts"]:
                counts[(v["backend"], v["verdict"])] += 1
                internal |= v["verdict"] == V.REFERENCE_ERROR
            for v in bad:
                sig = (v.get("signature") or {}).get("id", "")
                print(f"{case.id} {v['backend']}: {v['verdict']} {sig} {v['detail'][:160]}")
    t = T.table("backend", "verdict", "cases", right=("cases",))
    for (backend, verdict), n in sorted(counts.items()):
        T.row(t, backend, verdict, n)
    T.show(f"{len(dirs)} cases; results in {os.path.join(out, 'results.jsonl')}", t)
    if internal:
        return 3
    return 1 if any(v in V.FAILURES for (_, v) in counts) else 0


def cmd_backends(args) -> int:
    from dlgate.backends.registry import load, names

    t = T.table("backend", "device", "levels", "state")
    for name in names():
        try:
            cls = load(name)
        except Exception as e:  # a broken third-party plug-in is listed, not fatal
            T.row(t, name, "", "", f"cannot be loaded: {e}")
            continue
        for device in cls.devices:
            why = cls.unavailable_reason(device)
            T.row(t, name, device, ",".join(cls.opt_levels), "available" if not why else f"unavailable: {why}")
    T.show(t)
    return 0


_OVERRIDES = {"models": "models", "max_nodes": "max_nodes", "min_nodes": "min_nodes", "timeout": "timeout_s",
              "memory_mb": "memory_mb", "baseline": "baseline", "corpus": "corpus", "reference": "reference",
              "campaign": "campaign", "fail_on": "fail_on", "confirm_runs": "confirm_runs", "backend": "backends",
              "findings_per_case": "findings_per_case",
              "coverage_state": "coverage_state", "budget": "budget", "target_share": "target_share"}


def cmd_run(args) -> int:
    from dlgate.check import CaseError
    from dlgate.gate import config as C
    from dlgate.gate.baseline import BaselineError
    from dlgate.gate.baseline import load as load_baseline
    from dlgate.gate.journal import RunError
    from dlgate.gate.run.loop import run
    from dlgate.gate.run.plan import Shard

    for flag, value in (("--seed", args.seed), ("--commit", args.commit)):
        if value is not None and not value.strip():
            raise UsageError(f"dlgate run: {flag}: must not be empty")
    over = {key: getattr(args, attr) for attr, key in _OVERRIDES.items()}
    # an error in a setting the command line gave names the flag as typed, not the file's key
    flags = {key: "--" + attr.replace("_", "-") for attr, key in _OVERRIDES.items() if getattr(args, attr) is not None}
    if args.backend:
        flags["backends"] = [f"--backend {b}" for b in args.backend]
    if args.reference is not None:
        flags["reference"] = f"--reference {args.reference}"
    if args.base_python:
        over["base"] = {"python": args.base_python}
        flags["base"] = "--base-python"
    try:
        cfg = C.load(args.config, over, flags) if args.config else C.embedded_default(over, flags)
        root, source = C.resolve_root(args.seed, args.commit)
        shard = Shard.parse(args.shard) if args.shard else None
        _out_dir(args.out, "dlgate run: --out")
        load_baseline(cfg.baseline)  # checked before the output folder is touched (run() reads it again)
        change = _read_change(args, cfg.backends, "dlgate run")
        return run(cfg, root, source, args.out, shard, fresh=args.fresh,
                   progress=False if args.no_progress else None, log=_log, change=change)
    except (C.ConfigError, RunError, BaselineError, CaseError) as e:  # a bad file: one line, exit status 2
        raise UsageError(f"dlgate run: {e}") from None


def cmd_reduce(args) -> int:
    from dlgate.check import CaseError, CheckConfig, load_bundle, save_bundle
    from dlgate.exec.worker import Pool
    from dlgate.oracle import verdict as V
    from dlgate.reduce.reducer import NotReproduced, Reducer, Target

    spec = _backend_spec(args.backend, f"dlgate reduce: --backend {args.backend}")
    ref = _backend_spec(args.reference, f"dlgate reduce: --reference {args.reference}")
    if not os.path.isfile(os.path.join(args.case, "meta.json")):
        raise UsageError(f"dlgate reduce: {args.case}: not a case folder (no meta.json)")
    _out_dir(args.out or args.case.rstrip("/") + "-reduced", "dlgate reduce: --out")
    try:
        case = load_bundle(args.case)
    except CaseError as e:
        raise UsageError(f"dlgate reduce: {e}") from None
    cfg = CheckConfig([spec], ref, timeout_s=args.timeout, crosscheck=False)
    with Pool(cfg.timeout_s, cfg.memory_mb) as pool:
        from dlgate.check import check

        rec = check(pool, case, cfg)
        v = rec["verdicts"][0]
        if v["verdict"] not in V.FAILURES:
            print(f"{case.id}: {spec.label()} does not fail here ({v['verdict']}); nothing to reduce"
                  + _cut_pointer(args.case, spec, args, "behind it"), file=sys.stderr)
            return 1
        target = Target.of(spec, v)  # errors match by cluster, as in the gate
        try:
            res = Reducer(pool, cfg, target, max_seconds=args.max_seconds).reduce(case)
        except NotReproduced:  # failed once, not again: flaky, which a reduction cannot keep
            print(f"{case.id}: {spec.label()} failed ({v['verdict']}) but not when run again: the failure does not "
                  f"reproduce (flaky); nothing to reduce", file=sys.stderr)
            return 1
    out = args.out or args.case.rstrip("/") + "-reduced"
    res.case.meta = dict(res.case.meta, id=os.path.basename(out), reduced_from=case.id,
                         reduction={"original_nodes": res.original_nodes, "nodes": len(res.case.graph.nodes),
                                    "probes": res.probes, "seconds": round(res.seconds, 2), "hit_limit": res.hit_limit,
                                    "verdict": res.verdict.verdict, "signature": (res.verdict.signature or {}).get("id")})
    res.case.meta["operators"] = sorted(set(res.case.graph.op_names()))
    d = save_bundle(os.path.dirname(os.path.abspath(out)) or ".", res.case, subdir=os.path.basename(out))
    print(f"{case.id}: {res.original_nodes} -> {len(res.case.graph.nodes)} operators "
          f"({', '.join(res.case.graph.op_names())}), still {res.verdict.verdict} on {spec.label()}; "
          f"{res.probes} probes in {res.seconds:.1f} s; wrote {d}")
    more = _cut_pointer(args.case, spec, args, "behind this failure")
    if more:
        _log(f"dlgate reduce: {more[2:]}")
    return 0


def _cut_folders(case_dir: str, spec) -> list:
    """The cut cases under a failure's bundle (``cut<k>-<backend>/``, where the gate saved
    the rest of the model once a failure's or a refusal's operators were cut out: the
    findings made behind it), those of ``spec``'s backend when there are any, in order."""
    import glob
    import re

    found = []
    for p in glob.glob(os.path.join(glob.escape(case_dir), "cut*-*", "meta.json")):
        m = re.fullmatch(r"cut(\d+)-(.+)", os.path.basename(os.path.dirname(p)))
        if m:
            found.append((int(m.group(1)), m.group(2), os.path.dirname(p)))
    label = re.sub(r"[^A-Za-z0-9_.@-]+", "-", spec.label()).strip("-")  # as the gate names them
    mine = [d for _, b, d in sorted(found) if b == label]
    return mine or [d for _, _, d in sorted(found)]


def _cut_pointer(case_dir: str, spec, args, behind: str) -> str:
    """``; the finding BEHIND is in CUT (run `dlgate reduce CUT --backend B`)`` for the cut
    cases under ``case_dir`` (:func:`_cut_folders`), or "" when there are none."""
    import shlex

    cuts = _cut_folders(case_dir, spec)
    if not cuts:
        return ""
    ref = f" --reference {shlex.quote(args.reference)}" if args.reference != "torch" else ""
    run = f"dlgate reduce {shlex.quote(cuts[0])} --backend {shlex.quote(args.backend)}{ref}"
    where = ", ".join(cuts)
    if len(cuts) == 1:
        return f"; the finding {behind} is in {where} (run `{run}`)"
    return f"; the {len(cuts)} findings {behind} are in {where} (run `{run}`, and likewise for the others)"


def _interrupted(path: str) -> dict | None:
    """verdict.json's ``interrupted`` (the run did not finish), or None."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None  # read, and refused with its reason, where the issues are built
    stopped = doc.get("interrupted") if isinstance(doc, dict) else None
    return stopped if isinstance(stopped, dict) else None


def cmd_issues(args) -> int:
    from dlgate.github.issues import publish

    if not os.path.exists(os.path.join(args.results, "verdict.json")):
        raise UsageError(f"dlgate issues: {args.results}: no verdict.json (not a finished dlgate run)")
    stopped = _interrupted(os.path.join(args.results, "verdict.json"))
    if stopped:
        raise UsageError(f"dlgate issues: {args.results}: the run was interrupted by {stopped.get('signal')} after "
                         f"{stopped.get('cases')} of {stopped.get('planned')} cases; run it again to finish it first")
    if args.max_issues is None:
        args.max_issues = _campaign_issues(args.results).get("max_per_run", 5)
    if not isinstance(args.max_issues, int) or args.max_issues < 0:
        raise UsageError("dlgate issues: --max-issues must be non-negative")
    from dlgate.github.releases import publish_hook

    bisect = publish_hook(args.bisect_releases if args.bisect_releases is not None
                          else _campaign_issues(args.results).get("bisect_releases", False), log=_log)
    client = None
    if not args.dry_run:
        from dlgate.github.client import GitHub, GitHubError

        if not os.environ.get("GITHUB_TOKEN"):
            raise UsageError("dlgate issues: set GITHUB_TOKEN (a token with issues: write) or use --dry-run")
        try:
            client = GitHub(args.repo, api_url=args.api_url, log=_log)
        except GitHubError as e:
            raise UsageError(f"dlgate issues: {e}") from None
    try:
        stats = publish(args.results, client, args.label, args.max_issues, args.dry_run, log=_log,
                        memory_safety=args.memory_safety or _campaign_memory_safety(args.results), bisect=bisect)
    except Exception as e:
        from dlgate.github.client import GitHubError

        if isinstance(e, GitHubError):
            print(f"dlgate issues: GitHub: {e}", file=sys.stderr)
            return 1
        raise
    _log(f"dlgate issues: {stats['findings']} distinct failures; {stats['opened']} opened, {stats['commented']} "
         f"commented, {stats['reported']} reported privately, {stats['withheld']} withheld (possible memory-safety "
         f"bugs the repository could not take privately), {stats['unchanged']} already up to date, "
         f"{stats['over_cap']} over the cap")
    return 0


def _campaign_issues(results: str) -> dict:
    """The campaign's ``issues`` settings as the run recorded them (``run.json``), else none."""
    from dlgate.gate.journal import MANIFEST

    try:
        with open(os.path.join(results, MANIFEST)) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return {}
    config = manifest.get("config") if isinstance(manifest, dict) else None
    issues = config.get("issues") if isinstance(config, dict) else None
    return issues if isinstance(issues, dict) else {}


def _campaign_memory_safety(results: str) -> str:
    """The campaign's ``issues.memory_safety`` as the run recorded it (``run.json``), else private."""
    from dlgate.gate.journal import MANIFEST

    try:
        with open(os.path.join(results, MANIFEST)) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return "private"
    config = manifest.get("config") if isinstance(manifest, dict) else None
    issues = config.get("issues") if isinstance(config, dict) else None
    return "public" if isinstance(issues, dict) and issues.get("memory_safety") == "public" else "private"


def cmd_merge(args) -> int:
    from dlgate.gate.journal import RunError
    from dlgate.gate.run.merge import merge

    _out_dir(args.out, "dlgate merge: --out")
    try:
        return merge(args.dirs, args.out, log=_log)
    except RunError as e:
        raise UsageError(f"dlgate merge: {e}") from None


def cmd_report(args) -> int:
    from dlgate.report import ReportError, write_report

    if args.out:  # the page's folder (its plots go next to it, in a folder of its name)
        _out_dir(os.path.dirname(os.path.abspath(args.out)), f"dlgate report: --out {args.out}")
    try:
        paths = write_report(args.dir, args.out)
    except ReportError as e:
        raise UsageError(f"dlgate report: {e}") from None
    _log(f"dlgate report: wrote {paths['html']} and {len(paths['plots'])} plot(s) in {paths['plots_dir']}")
    return 0


def cmd_baseline(args) -> int:
    from dlgate.gate.journal import RunError
    from dlgate.gate.run.updates import update_baseline

    try:
        update_baseline(args.run_dir, args.baseline, args.prune, log=_log)
    except (RunError, OSError) as e:
        raise UsageError(f"dlgate baseline update: {e}") from None
    return 0


def cmd_config(args) -> int:
    from dlgate.gate import config as C

    if args.reference:
        print(C.reference_markdown(), end="")
        return 0
    if args.schema:
        from dlgate.gate.schema import schema_json

        print(schema_json(), end="")
        return 0
    if not args.file:
        raise UsageError("dlgate config: name a config file, or pass --reference or --schema")
    try:
        cfg = C.load(args.file)
    except C.ConfigError as e:
        raise UsageError(f"dlgate config: {e}") from None
    print(json.dumps(cfg.to_json(), indent=1, sort_keys=True))
    return 0


def cmd_init(args) -> int:
    from dlgate.init import InitError, run

    try:
        return run(args)
    except InitError as e:
        raise UsageError(str(e)) from None


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cmd_bisect_releases(args) -> int:
    from dlgate.github.releases import UsageProblem, command

    try:
        return command(args, log=_log)
    except UsageProblem as e:
        raise UsageError(str(e)) from None


COMMANDS = {"targets": cmd_targets, "run": cmd_run, "reduce": cmd_reduce, "issues": cmd_issues, "merge": cmd_merge, "report": cmd_report, "baseline": cmd_baseline, "config": cmd_config,"gen": cmd_gen, "stats": cmd_stats, "probe": cmd_probe, "ops": cmd_ops, "check": cmd_check,
            "backends": cmd_backends, "init": cmd_init,
            "bisect-releases": cmd_bisect_releases}


#: OSErrors that are the machine's or the user's, not dlgate's: a full disk, a path that
#: cannot be written (read-only, permissions, too long, a file where a folder should be).
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_CANNOT_WRITE = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENAMETOOLONG, errno.ENOTDIR, errno.EISDIR,
                 errno.EEXIST)


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (``dlgate config F | head -1``)."""
    import select

    try:
        fd = sys.stdout.fileno()
        p = select.poll()
        p.register(fd, select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in p.poll(0))
    except (AttributeError, ValueError, OSError):  # stdout replaced (a capture) or closed
        return False


def _environment_error(e: BaseException) -> int | None:
    """The exit status for an error of the machine rather than of dlgate, reported as one
    line; None for anything else."""
    if isinstance(e, BrokenPipeError) and _stdout_closed():
        # the reader stopped reading: quiet, as the Python docs recommend (stdout to devnull,
        # so that the flush at exit does not fail again), with the shell's SIGPIPE status
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    if not isinstance(e, OSError) or e.errno not in _NO_SPACE + _CANNOT_WRITE:
        return None
    where = f" ({e.filename})" if e.filename else ""
    if e.errno in _NO_SPACE:
        _log(f"dlgate: no space left on device{where}: the output is incomplete; the cases finished so far are "
             f"kept in the journal: free some space and run the same command again (dlgate run resumes)")
    else:
        _log(f"dlgate: {e.filename}: {e.strerror or e}" if e.filename else f"dlgate: {e.strerror or e}")
    return 2


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        status = COMMANDS[args.command](args)
        if args.command == "run" and status in (130, 143):  # interrupted: no later signal changes the status
            from dlgate.gate.run.lifecycle import hold_stop_signals

            hold_stop_signals()
        sys.stdout.flush()  # a closed stdout pipe shows here, where it is handled, not at exit
        return status
    except UsageError as e:
        print(str(e).splitlines()[0], file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # Ctrl-C; `dlgate run` stopped by SIGINT (130) or SIGTERM (143)
        return getattr(e, "status", 130)
    except Exception as e:  # dlgate's own defect: never reported as a compiler failure
        status = _environment_error(e)
        if status is not None:  # ... unless it is the machine's: a full disk, a closed pipe
            return status
        import traceback

        traceback.print_exc()
        print("dlgate: internal error (a defect in dlgate, not a failure of the compiler under test); "
              "please report it with the traceback above", file=sys.stderr)
        return 3
