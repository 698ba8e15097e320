"""GitHub issues for failures: one per cause, never a duplicate.

The failures a run classed new, regression or pre-existing are grouped by cause, as the
gate's summary and the HTML report group them (:func:`dlgate.gate.decide.clusters`): the
fingerprints (distinct reduced bugs) that share one cause whatever the operator, e.g.
float16 ``unknown intrinsic`` reached through seven maths functions (one cluster), or one
converter's wrong answer met in several dtypes and sibling operators (several clusters, one
cause). For each cause, an issue carrying its hidden marker (``<!-- dlgate-cause: ... -->``)
and the label is looked up, and else one filed before causes were grouped, under the
marker of one of the cause's clusters (``<!-- dlgate-cluster: ... -->``; an open one
first), so that grouping files no duplicate; if one exists, the run adds one comment to it
(commit, run link, case count,
the fingerprints seen), marked per workflow run (not per attempt) so that neither a
retried publication nor a re-run attempt of the same workflow run comments twice, and
none when this run opened the issue (its body carries the run's marker too);
otherwise a new issue is opened with the verdict, versions, every fingerprint with its
reduced pattern, and the first one's Mermaid graph, listing and inline ``repro.py``. A
cap bounds how many issues one run opens. ``dry_run`` writes each issue's Markdown to
disk instead of talking to GitHub.

A cause that may be a memory-safety bug (:mod:`dlgate.oracle.memsafety`: a crash by SIGSEGV
or SIGBUS, or one the C library or a sanitizer stopped for a corrupted heap or stack) is
never filed in public by default: it goes to the maintainers through GitHub's private
vulnerability reporting, once (its advisory carries the cluster's marker and is looked for
before each report), and where the repository takes no private reports it is withheld with
a notice in the log and the workflow's step summary. ``memory_safety="public"`` files these
causes as issues like any other.
"""
from __future__ import annotations

import base64
import io
import json
import os
import zipfile
from dataclasses import dataclass, field

from dlgate import markdown as md
from dlgate.gate.journal import write_json
from dlgate.gate.report import run_url
from dlgate.github import releases
from dlgate.github.client import GitHubError
from dlgate.oracle import memsafety as MS
from dlgate.reduce.bundle import read_repro
from dlgate.secrets import redact

ELIGIBLE = ("new", "regressions", "pre_existing")
#: The label every issue dlgate opens carries besides the campaign's own: how a maintainer tells a
#: fuzzer's report from a user's, and filters them.
FUZZER_LABEL = "fuzzer-generated"
#: Verdicts from the most to the least severe, for the order in which the cap admits new issues:
#: a possible memory-safety bug comes before them all (it may be exploitable); then wrong results,
#: which reach users unnoticed; then crashes and hangs, which are seen but take the process down;
#: then errors, which the compiler reports itself.
SEVERITY = ("mismatch", "shape_mismatch", "dtype_mismatch", "crash", "timeout", "oom", "run_error", "compile_error")
#: Among equally severe causes of equal frequency: a regression (the base build passed) first.
CLASS_ORDER = ("regressions", "new", "pre_existing")
#: Where a possible memory-safety bug goes: GitHub's private vulnerability reporting, or an issue.
MEMORY_SAFETY = ("private", "public")
#: GitHub's answers to a private report that a repository does not take: 403 or 404 when private
#: vulnerability reporting is off (or the token may not use it), 422 when GitHub refuses the report.
NOT_TAKEN = (403, 404, 422)
#: What each publication did with each cause, written into the results folder.
ISSUES_RECORD = "issues.json"
#: What every dlgate issue's body holds (:func:`marker`), to tell them from others with the label;
#: issues filed before causes were grouped hold the cluster's (:func:`cluster_marker`).
MARKER_PREFIX = "<!-- dlgate-cause: "
CLUSTER_PREFIX = "<!-- dlgate-cluster: "
#: GitHub refuses issue bodies over 65,536 characters; keep room for the rest.
INLINE_FILES_LIMIT = 30_000
BODY_LIMIT = 65_000


@dataclass
class Finding:
    cause: str  # the gate's cause (identity ``cause``, else the cluster): one issue each
    repro: str  # folder of the first fingerprint's reduced repro
    doc: dict  # its repro.json
    fingerprints: list  # [(fingerprint, typed pattern, repro folder or "")]
    cases: int
    classes: list
    operators: list
    memory_safety: dict | None = None  # memsafety.classify's answer for any of its failures
    clusters: list = field(default_factory=list)  # its clusters, in the run's order
    dtypes: list = field(default_factory=list)  # its reduced operators' input dtypes

    @property
    def cluster(self) -> str:
        """Its first cluster: the id the run's summary quotes it by."""
        return self.clusters[0] if self.clusters else self.cause


def marker(cause: str) -> str:
    return f"{MARKER_PREFIX}{cause} -->"


def cluster_marker(cluster: str) -> str:
    """The marker of an issue filed for one cluster, before causes were grouped."""
    return f"{CLUSTER_PREFIX}{cluster} -->"


def occurrence_marker(cause: str, run_key: str) -> str:
    return f"<!-- dlgate-occurrence: {cause} {run_key} -->"


def findings(results_dir: str) -> list:
    """The run's eligible failures with a reduced repro, one Finding per cause (the gate's
    grouping: one cause met in several dtypes or sibling operators is one), in a stable
    order."""
    with open(os.path.join(results_dir, "verdict.json")) as f:
        verdict = json.load(f)
    by_cause: dict = {}
    for cls in ELIGIBLE:
        for g in verdict.get(cls, []):
            fp = g.get("fingerprint") or g["signature"]
            cl = g.get("cluster") or fp
            d = os.path.join(results_dir, "repros", fp)
            has = os.path.exists(os.path.join(d, "repro.json"))
            key = (g.get("backend"), g.get("cause") or cl)
            f = by_cause.get(key)
            if f is None:
                if not has:
                    continue
                f = by_cause[key] = Finding(key[1], d, read_repro(d), [], 0, [], [])
            if fp not in [x[0] for x in f.fingerprints]:
                f.fingerprints.append((fp, g.get("typed") or g.get("pattern", ""), d if has else ""))
            if cl not in f.clusters:
                f.clusters.append(cl)
            f.cases += len(g["cases"])
            f.memory_safety = f.memory_safety or _memory_safety(g, d if has else None)
            if cls not in f.classes:
                f.classes.append(cls)
            f.operators = sorted(set(f.operators) | {p for p in (g.get("pattern") or "").split(">") if p})
            f.dtypes = sorted(set(f.dtypes) | set(g.get("dtypes") or ()))
    return [by_cause[k] for k in sorted(by_cause, key=lambda k: by_cause[k].repro)]


def existing_issue(client, f: Finding, label: str) -> dict | None:
    """``f``'s issue: the one carrying its cause's marker, else one filed for one of its
    clusters before causes were grouped (an open one before a closed one, then the newest),
    so that a cause whose clusters have issues gets a comment there, not a new issue."""
    found = client.find_issue(marker(f.cause), label)
    if found is not None:
        return found
    old = [i for i in (client.find_issue(cluster_marker(c), label) for c in f.clusters) if i is not None]
    return next((i for i in old if i.get("state") == "open"), old[0] if old else None)


def rank(f: Finding) -> tuple:
    """The order in which the cap admits new issues: most severe first (:data:`SEVERITY`), then most
    frequent (cases in this run), then regressions before new before pre-existing, then the cluster."""
    verdict = f.doc.get("verdict", "")
    return (0 if f.memory_safety else 1, SEVERITY.index(verdict) if verdict in SEVERITY else len(SEVERITY),
            -f.cases, min(CLASS_ORDER.index(c) for c in f.classes) if f.classes else len(CLASS_ORDER), f.cause)


def _memory_safety(group: dict, repro: str | None) -> dict | None:
    """Whether a failure group may be a memory-safety bug: verdict.json's record of it; for a run
    from before that record, its bundle's, else what dlgate's own detail of a crash says (the signal)."""
    if group.get("memory_safety"):
        return group["memory_safety"]
    return (read_repro(repro).get("memory_safety") if repro else None) or \
        MS.classify(group["verdict"], {"message": group.get("detail") or ""})


def title(f: Finding) -> str:
    d = f.doc
    detail = " ".join((d.get("detail") or "").split())
    ops = ", ".join(f.operators) if len(f.fingerprints) > 1 else d["pattern"].replace(">", " → ")
    head = f"[dlgate] {d['backend'].split('[')[0]}: {d['verdict'].replace('_', ' ')} in {ops}"
    if d["verdict"] not in ("mismatch", "shape_mismatch", "dtype_mismatch") and detail:
        head += f": {detail}"
    return head if len(head) <= 120 else head[:119] + "…"


def _versions(d: dict) -> str:
    v = d.get("versions") or {}
    return ", ".join(f"{k} {v[k]}" for k in ("name", "version", "device", "opt_level") if k in v) or "unknown"


def _inline_files(repro_dir: str) -> str | None:
    """A zip of the bundle's data files, base64, when small enough to paste into an issue."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name in ("model.onnx", "inputs.npz", "reference.npz"):
            z.write(os.path.join(repro_dir, name), name)
    data = base64.b64encode(buf.getvalue()).decode()
    return data if len(data) <= INLINE_FILES_LIMIT else None


def body(f: Finding, run: dict, note: str = "") -> str:
    d = f.doc
    read = lambda name: open(os.path.join(f.repro, name)).read()  # noqa: E731
    rows = [("verdict", md.code(d["verdict"], table=True)),
            ("backend", md.text(f"{d['backend']} ({_versions(d)})")),
            ("cause", md.code(f.cause, table=True)),
            ("clusters", "<br>".join(md.code(c, table=True) for c in f.clusters[:20])),
            ("dtypes", md.text(", ".join(f.dtypes) or "unknown")),
            ("fingerprints", "<br>".join(f"{md.code(fp, table=True)} {md.text(typed)}"
                                         for fp, typed, _ in f.fingerprints[:20])),
            ("cases", md.text(f"{f.cases} in this run ({run.get('campaign', '')}, {run.get('commit', '')[:12]})")),
            ("reduced", md.text(f"{d['tir']['original_lines']} → {d['tir']['lines']} lines of TVMScript, passes: "
                                f"{', '.join(d['tir']['passes'])}" if d.get("tir") else
                                f"{d.get('original_nodes')} → {d.get('nodes')} operators, opset {d.get('opset')}")),
            ("found by", md.text(f"dlgate {d.get('dlgate')} (generator {d.get('generator')})"))]
    env = d.get("environment") or {}
    if env:
        rows.append(("environment", md.text(", ".join(f"{k} {v}" for k, v in env.items()))))
    if run.get("url"):
        rows.append(("run", md.url(run["url"])))
    also = (f" The same cause was met through {len(f.fingerprints) - 1} more reduced pattern(s) "
            f"(operators: {md.text(', '.join(f.operators))}; dtypes: {md.text(', '.join(f.dtypes) or 'unknown')}), "
            "listed below." if len(f.fingerprints) > 1 else "")
    out = [marker(f.cause)] + ([occurrence_marker(f.cause, run["key"])] if run.get("key") else []) + ["",
           f"dlgate found a **{md.text(d['verdict'].replace('_', ' '))}** in **{md.text(d['backend'])}** on a "
           + (f"generated TIR program and pass sequence, reduced to {md.text(d['tir']['lines'])} line(s): "
              if d.get("tir") else f"generated model, reduced to {md.text(d.get('nodes'))} operator(s): ")
           + f"{md.code(d.get('typed') or d['pattern'])}.{also}", ""] + ([note, ""] if note else [])
    out += md.table(["", ""], rows)
    out += ["", "### What goes wrong", "", md.fence((d.get("detail") or "").strip()[:3000], "text"), ""]
    if d.get("tir"):  # a PrimFunc, not a model: its reduced TVMScript
        out += ["### The program", "", md.fence(read("reduced.tvmscript"), "python"), ""]
    else:
        out += ["### The model", "", md.fence(read("graph.mmd"), "mermaid"), "",
                "<details><summary>Graph listing</summary>", "", md.fence(read("graph.txt"), "text"), "",
                "</details>", ""]
    bis = releases.read(f.repro)
    if bis:
        out += ["### Regression range", "", md.text(bis["summary"]), ""]
        if bis.get("probes"):
            out += md.table(["release", "result", "seconds", "repro.py said"],
                            [(md.code(p["version"], table=True), md.text(p["outcome"]), md.text(f"{p['seconds']:g}"),
                              md.code(p["line"][:160], table=True)) for p in bis["probes"]]) + [""]
    out += ["### Reproduce", ""]
    if d.get("tir"):  # the TIR mode's finding: a PrimFunc and a pass sequence, no model
        out += ["`repro.py` below is the whole repro: it holds the reduced PrimFunc as TVMScript and the pass "
                "sequence, builds the PrimFunc for `llvm` with that sequence and with the minimal one, runs both on "
                "the same inputs and compares them. It needs only TVM and NumPy. Save it and run `python repro.py`: "
                "it exits 1 while the bug is present, 0 once it is fixed."
                + (f" The run's `repros` artifact holds the program as found ({md.url(run['url'])})."
                   if run.get("url") else "")]
    elif (d.get("invalid") or {}).get("level") == "relax" and d.get("tvmscript"):  # a Relax module TVM must reject
        out += ["`repro.py` below is the whole repro: it holds the Relax module as TVMScript (the module and the "
                "one declaration of `main`'s parameter it breaks), the pass list and the inputs, and needs only TVM "
                "and NumPy. Save it and run `python repro.py`: TVM must reject the module with an error; the script "
                "exits 1 while TVM builds and runs it (or hangs), 0 once it raises, and a crash of TVM is the "
                "script's own crash."]
    elif d.get("self_contained"):
        out += ["`repro.py` below is the whole repro: it builds the reduced model with `onnx.helper` and holds its "
                "inputs and the expected outputs, and needs only NumPy, onnx and the compiler under test. Save it and "
                "run `python repro.py`: it prints expected versus actual (with onnx.reference's and a float64 "
                "evaluation's values) and exits 1 while the bug is present, 0 once it is fixed. The run's `repros` "
                "artifact holds the same folder with `model.onnx`"
                + (f" ({md.url(run['url'])})" if run.get("url") else "") + "."]
    else:
        out += ["`repro.py` needs only NumPy, onnx and the compiler under test. It prints expected versus actual "
                "(with onnx.reference's and a float64 evaluation's values) and exits 1 while the bug is present, 0 "
                "once it is fixed. It reads `model.onnx`, `inputs.npz` and `reference.npz` from its own folder: the "
                "run's `repros` artifact holds the whole folder"
                + (f" ({md.url(run['url'])})" if run.get("url") else "") + "."]
        files = _inline_files(f.repro)
        if files:
            out += ["", "Or recreate the folder from this issue: save the block below as `files.b64`, then run "
                    "`python -c \"import base64,io,zipfile; zipfile.ZipFile(io.BytesIO(base64.b64decode("
                    "open('files.b64').read()))).extractall()\"` next to `repro.py`.", "",
                    "<details><summary>files.b64 (model.onnx, inputs.npz, reference.npz)</summary>", "",
                    md.fence("\n".join(files[i:i + 100] for i in range(0, len(files), 100)), "text"), "",
                    "</details>"]
    if d.get("polygraphy"):
        out += ["", "With TensorRT's own tools, in the same folder (`repro.py` writes `model.onnx` and `inputs.json`, "
                "Polygraphy's input file, beside itself when they are missing):", "",
                md.fence(d["polygraphy"], "sh")]
    what = "repro.py (self-contained: save it and run it)" if d.get("self_contained") else "repro.py"
    out += ["", f"<details><summary>{what}</summary>", "", md.fence(read("repro.py"), "python"), "",
            "</details>", ""]
    text = "\n".join(out)
    if len(text) > BODY_LIMIT:  # drop the inline files first, then cut
        text = text[:BODY_LIMIT] + "\n\n(truncated: see the run's artifacts)\n"
    return text


def _heading(text: str) -> str:
    """An issue title as a Markdown heading: dlgate's own ``[dlgate]`` prefix as it is (no link
    definition exists for it to resolve to), the rest escaped."""
    prefix = "[dlgate] "
    return prefix + md.text(text[len(prefix):]) if text.startswith(prefix) else md.text(text)


def comment(f: Finding, run: dict) -> str:
    key = run.get("key", run.get("commit", ""))
    lines = [occurrence_marker(f.cause, key), "",
             f"Seen again by dlgate: {f.cases} case(s) in campaign {md.code(run.get('campaign', ''))} at commit "
             f"{md.code(run.get('commit', '')[:12])}" + (f", run {md.url(run['url'])}" if run.get("url") else "") + ".",
             f"Backend: {md.text(f.doc['backend'])} ({md.text(_versions(f.doc))}); fingerprints: "
             + ", ".join(f"{md.code(fp)} ({md.text(typed)})" for fp, typed, _ in f.fingerprints) + "."]
    return "\n".join(lines) + "\n"


def run_info(results_dir: str, env=os.environ) -> dict:
    """Commit, campaign and run link (from GitHub Actions' environment when present), and the
    key of this occurrence: the workflow run, whatever its attempt (``GITHUB_RUN_ATTEMPT`` is
    left out on purpose: re-running a job must not comment again), else commit and campaign."""
    with open(os.path.join(results_dir, "verdict.json")) as f:
        v = json.load(f)
    info = {"commit": v.get("root", ""), "campaign": v.get("campaign", "")}
    url = run_url(env)
    if url:
        info["url"] = url
        info["key"] = f"run-{env['GITHUB_RUN_ID']}"
    else:
        info["key"] = f"{info['commit']}-{info['campaign']}"
    return info


def private_note(f: Finding) -> str:
    """Why a cause is a private report, for the report itself."""
    ms = f.memory_safety
    return (f"dlgate classes this crash as a possible **memory-safety bug**: {md.text(MS.describe(ms))}, "
            f"{md.text(ms['cwe'])}. A crafted model may be able to exploit it, so dlgate reports it privately "
            "and opens no public issue for it.")


def _what(f: Finding) -> str:
    return f"possible memory-safety bug ({MS.describe(f.memory_safety)}) in {f.doc['backend']}"


def publish(results_dir: str, client, label: str = "dlgate", max_issues: int = 5, dry_run: str | None = None,
            log=print, env=os.environ, memory_safety: str = "private", bisect=None) -> dict:
    """Open or update one issue per cause, or report a possible memory-safety bug privately
    (``memory_safety="private"``, the default); returns counts (opened, commented, reported,
    withheld, unchanged, over the cap) and, when GitHub was asked, ``tally``: dlgate's issues in
    the repository by state (open, closed as fixed, closed otherwise). ``max_issues`` caps issues
    and reports together; causes are taken most severe and most frequent first (:func:`rank`), and
    those over the cap are listed in the log, the step summary and ``issues.json``. ``bisect``,
    when given, is called with a repro folder before its issue is opened (``dlgate bisect-releases``:
    it writes the folder's ``bisect.json``, which the issue's body quotes)."""
    if memory_safety not in MEMORY_SAFETY:
        raise ValueError(f"memory_safety: expected one of {', '.join(MEMORY_SAFETY)}, got {memory_safety!r}")
    run = run_info(results_dir, env)
    found = sorted(findings(results_dir), key=rank)
    private = {f.cause for f in found if f.memory_safety and memory_safety == "private"}
    stats = {"findings": len(found), "opened": 0, "commented": 0, "reported": 0, "withheld": 0, "unchanged": 0,
             "over_cap": 0}
    if dry_run:
        os.makedirs(dry_run, exist_ok=True)
        for f in found:
            if f.cause in private:
                path = os.path.join(dry_run, f"private-report-{f.cause}.md")
                text = f"# {_heading(title(f))}\n\n{body(f, run, private_note(f))}"
                what = f" (a {_what(f)}: a private vulnerability report, never an issue)"
            else:
                path, text, what = os.path.join(dry_run, f"issue-{f.cause}.md"), \
                    f"# {_heading(title(f))}\n\n{body(f, run)}", ""
            with open(path, "w") as fh:
                fh.write(redact(text))
            log(f"dlgate: dry run: wrote {path}{what}")
        return stats
    if any(f.cause not in private for f in found):
        client.ensure_label(label, "b60205", "Found by dlgate")
        client.ensure_label(FUZZER_LABEL, "ededed", "Found by a fuzzer: a generated model, reduced")
    withheld, outcome = [], {}
    for f in found:
        if f.cause in private:
            why = _report_privately(f, client, run, stats, max_issues, log)
            if why:
                withheld.append((f, why))
            outcome[f.cause] = ("withheld", None) if why else ("private report", None)
            continue
        existing = existing_issue(client, f, label)
        if existing is not None and occurrence_marker(f.cause, run["key"]) in (existing.get("body") or ""):
            stats["unchanged"] += 1  # this run opened it (an earlier attempt): nothing to add
            outcome[f.cause] = ("opened", existing)
            log(f"dlgate: {f.cause}: issue #{existing['number']} was opened by this run")
            continue
        if existing is not None:
            _, created = client.comment_once(existing["number"], occurrence_marker(f.cause, run["key"]),
                                             comment(f, run))
            stats["commented" if created else "unchanged"] += 1
            outcome[f.cause] = ("commented", existing)
            log(f"dlgate: {f.cause}: issue #{existing['number']} "
                f"{'gets a comment' if created else 'already has this run'}")
            continue
        if stats["opened"] + stats["reported"] >= max_issues:
            stats["over_cap"] += 1
            outcome[f.cause] = ("over the cap", None)
            log(f"dlgate: {f.cause}: not opened (cap of {max_issues} new issues per run): "
                f"{f.doc['verdict']} in {f.doc['backend']}, {f.cases} case(s), {os.path.relpath(f.repro, results_dir)}")
            continue
        if bisect is not None and releases.read(f.repro) is None:
            try:
                bisect(f.repro)
            except Exception as e:  # the issue is worth opening without its range
                log(f"dlgate: {f.cause}: no regression range: {type(e).__name__}: {e}")
        issue, created = client.open_or_find(marker(f.cause), label, title(f), body(f, run), [label, FUZZER_LABEL])
        stats["opened" if created else "unchanged"] += 1
        outcome[f.cause] = ("opened", issue)
        log(f"dlgate: {f.cause}: issue #{issue['number']} {'opened' if created else 'exists'}: "
            f"{issue.get('html_url', '')}")
    try:
        stats["tally"] = tally(client, label)
        t = stats["tally"]
        log(f"dlgate: issues filed by dlgate in {client.repo}: {t['filed']}; {t['fixed']} closed as fixed, "
            f"{t['not_planned']} closed as not planned, {t['closed_other']} closed otherwise, {t['open']} open")
    except GitHubError as e:  # the tally is a report; the issues are filed
        log(f"dlgate: cannot count dlgate's issues: {e}")
    record = _record(found, outcome, stats, max_issues, results_dir)
    try:
        write_json(os.path.join(results_dir, ISSUES_RECORD), record)
    except OSError as e:
        log(f"dlgate: cannot write {ISSUES_RECORD}: {e.strerror or e}")
    if env.get("GITHUB_STEP_SUMMARY"):
        try:
            with open(env["GITHUB_STEP_SUMMARY"], "a") as fh:
                if withheld:
                    fh.write(redact(withheld_summary(withheld, client.repo)))
                fh.write(redact(issues_summary(record, client.repo)))
        except OSError as e:  # the log lines above said it already
            log(f"dlgate: cannot add the notice to the step summary: {e.strerror or e}")
    return stats


def tally(client, label: str) -> dict:
    """dlgate's issues in the repository (carrying ``label`` and a cluster marker), by state:
    ``fixed`` counts those closed as completed (GitHub's ``state_reason``), which is how a
    maintainer closes an issue a fix resolved."""
    out = {"filed": 0, "open": 0, "fixed": 0, "not_planned": 0, "closed_other": 0}
    for issue in client.list_issues(label, state="all"):
        if MARKER_PREFIX not in (issue.get("body") or "") and CLUSTER_PREFIX not in (issue.get("body") or ""):
            continue
        out["filed"] += 1
        if issue.get("state") == "open":
            out["open"] += 1
        elif issue.get("state_reason") == "completed":
            out["fixed"] += 1
        elif issue.get("state_reason") == "not_planned":
            out["not_planned"] += 1
        else:
            out["closed_other"] += 1
    return out


def _record(found: list, outcome: dict, stats: dict, cap: int, results_dir: str) -> dict:
    """``issues.json``: what this publication did with each cause, in the order the cap took them."""
    causes = []
    for f in found:
        what, issue = outcome.get(f.cause, ("", None))
        row = {"cause": f.cause, "cluster": f.cluster, "clusters": f.clusters, "dtypes": f.dtypes,
               "verdict": f.doc.get("verdict"), "backend": f.doc.get("backend"),
               "cases": f.cases, "classes": f.classes, "repro": os.path.relpath(f.repro, results_dir),
               "outcome": what}
        if issue:
            row.update(issue=issue.get("number"), url=issue.get("html_url", ""))
        causes.append(row)
    return {"cap": cap, "counts": {k: v for k, v in stats.items() if k != "tally"}, "tally": stats.get("tally"),
            "causes": causes}


def issues_summary(record: dict, repo: str) -> str:
    """The workflow step summary's account of the issues: what was filed, the causes the cap left
    unfiled (still in the run's report), and how many of dlgate's issues were closed as fixed."""
    c = record["counts"]
    lines = ["", "### dlgate: issues", "",
             f"{c['opened']} opened, {c['commented']} commented, {c['reported']} reported privately, "
             f"{c['withheld']} withheld, {c['unchanged']} already up to date, {c['over_cap']} over the cap "
             f"of {record['cap']} new issues per run."]
    t = record.get("tally")
    if t:
        lines += ["", f"Filed by dlgate in {md.text(repo)} so far: {t['filed']} issue(s); **{t['fixed']} closed as "
                      f"fixed**, {t['not_planned']} closed as not planned, {t['closed_other']} closed otherwise, "
                      f"{t['open']} open."]
    over = [r for r in record["causes"] if r["outcome"] == "over the cap"]
    if over:
        lines += ["", "Not filed this run (over the cap; most severe and most frequent were filed first), in the "
                      "run's report and `repros` artifact:", ""]
        lines += [f"- {md.code(r['cluster'])}: {md.text(r['verdict'])} in {md.text(r['backend'])}, {r['cases']} "
                  f"case(s), {md.code(r['repro'])}" for r in over]
    return "\n".join(lines) + "\n"


def _report_privately(f: Finding, client, run: dict, stats: dict, max_issues: int, log) -> str | None:
    """Report ``f`` through GitHub's private vulnerability reporting unless its report exists; the
    reason when it cannot be (the repository takes no private reports, or the token cannot see
    earlier ones, so a report could be a duplicate), after one line saying so."""
    mark, what = marker(f.cause), _what(f)
    try:  # one reported before causes were grouped carries its cluster's marker
        existing = next(filter(None, (client.find_advisory(m) for m in
                                      [mark] + [cluster_marker(c) for c in f.clusters])), None)
    except GitHubError as e:
        if e.status not in (403, 404):
            raise
        return _withhold(f, what, f"the token cannot read {client.repo}'s security advisories, so dlgate "
                                  f"cannot tell whether it reported this already ({e})", stats, log)
    if existing is not None:
        stats["unchanged"] += 1
        log(f"dlgate: {f.cluster}: {what}: reported privately already: {existing.get('ghsa_id', '')}")
        return None
    if stats["opened"] + stats["reported"] >= max_issues:
        stats["over_cap"] += 1
        log(f"dlgate: {f.cluster}: {what}: not reported (cap of {max_issues} new issues and reports per run)")
        return None
    try:
        adv, created = client.report_once(mark, title(f), body(f, run, private_note(f)), [f.memory_safety["cwe"]])
    except GitHubError as e:  # an unsettled write (UncertainWrite, 5xx) is not a refusal: it is raised
        if e.status not in NOT_TAKEN:
            raise
        return _withhold(f, what, f"{client.repo} takes no private vulnerability reports ({e})", stats, log)
    stats["reported" if created else "unchanged"] += 1
    log(f"dlgate: {f.cluster}: {what}: {'reported privately' if created else 'reported privately already'}, "
        f"not as a public issue: {adv.get('ghsa_id', '')} {adv.get('html_url', '')}")
    return None


def _withhold(f: Finding, what: str, why: str, stats: dict, log) -> str:
    stats["withheld"] += 1
    log(f"dlgate: {f.cluster}: {what}: not filed: dlgate opens no public issue for it, and {why}; enable "
        "private vulnerability reporting on the repository, or report it to its maintainers privately "
        f"from the run's artifact {os.path.join('repros', os.path.basename(f.repro))}")
    return why


def withheld_summary(withheld: list, repo: str) -> str:
    """The workflow step summary's notice of possible memory-safety bugs that were not filed."""
    lines = ["", "### dlgate: possible memory-safety bugs, not filed", "",
             f"dlgate opens no public issue for a crash that may be a memory-safety bug, and {md.text(repo)} "
             "could not take a private vulnerability report for these. Enable private vulnerability reporting "
             "(the repository's Settings, Code security), or report them to the maintainers privately; each "
             "one's reduced repro is in the run's `repros` artifact.", ""]
    for f, why in withheld:
        lines.append(f"- {md.code(f.cluster)}: {md.text(MS.describe(f.memory_safety))} in {md.text(f.doc['backend'])}"
                     f", {md.code(os.path.join('repros', os.path.basename(f.repro)))}: {md.text(why)}")
    return "\n".join(lines) + "\n"
