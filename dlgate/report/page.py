"""``dlgate report``: one static HTML page describing a run's output folder.

The page (``DIR/report.html`` by default) holds the run's header, the verdict counts per
backend, the distinct findings with links to their repro bundles, coverage and
findings over the cases, and the batch metrics of ``stats.json``. Its plots are PNG files
in the folder named like the page without ``.html`` (``DIR/report/``), referenced by
relative paths, so the page, its plots and the bundles it links can be uploaded together
as a workflow artifact, and the PNGs shown on their own (a job summary). No scripts, no
remote resources, every text HTML-escaped. The output is a function of the folder's
files: the same folder gives the same bytes (no clock, no machine name).
"""
from __future__ import annotations

import html
import json
import os
from urllib.parse import quote

from dlgate import opnames as N
from dlgate.change.coverage import rewrites_of, table
from dlgate.gate import decide as D
from dlgate.gate.report import repro_command, row_id, rows_by_cause
from dlgate.report import series as S
from dlgate.report.load import ReportError, RunFolder, load
from dlgate.report.plots import Line, curve_plot
from dlgate.report.stats_table import stats_rows

#: The plot files the report writes (and removes before writing, so none is stale).
PLOTS = {"features": "features.png", "rewrites": "rewrites.png", "findings": "findings.png"}
#: The run's own files, linked at the foot of the page when they are there.
FILES = ("summary.md", "junit.xml", "verdict.json", "run.json", "stats.json", "results.jsonl", "timings.jsonl",
         "coverage.jsonl", "coverage-state.json")

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 1500px;
       padding: 0 1.5em; color: #1f2328; line-height: 1.45; }
h1 { font-size: 1.5em; border-bottom: 1px solid #d0d7de; padding-bottom: .3em; overflow-wrap: anywhere; }
h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #d0d7de; padding-bottom: .2em; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .92em; max-width: 100%; }
table.fixed { table-layout: fixed; width: 100%; }
th, td { border: 1px solid #d0d7de; padding: .3em .6em; text-align: left; vertical-align: top;
         overflow-wrap: anywhere; }
th { background: #f6f8fa; }
tr:nth-child(even) td { background: #fafbfc; }
table.findings tr.cause td { background: #fff; border-bottom: none; }
table.findings tr.more td { background: #fff; border-top: none; padding-top: 0; }
col.c-what { width: 40%; } col.c-repro { width: 24%; } col.c-ops { width: 18%; } col.c-cases { width: 6%; }
col.c-id { width: 12%; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: .9em; }
code, .w { overflow-wrap: anywhere; }
pre.msg, pre.cmd, pre.frames { white-space: pre-wrap; overflow-wrap: anywhere; margin: .3em 0; padding: .4em .5em;
                   background: #f6f8fa; border-radius: 4px; }
pre.msg { border-left: 3px solid #cf222e; }
.verdict { font-weight: 600; }
p.behind { margin: .3em 0 0; font-size: .92em; }
details > summary { cursor: pointer; color: #0969da; }
img { max-width: 100%; height: auto; border: 1px solid #d0d7de; margin: .4em 0; }
.note { color: #59636e; }
.fail { color: #cf222e; font-weight: 600; } .pass { color: #1a7f37; font-weight: 600; }
"""


def _e(x) -> str:
    return html.escape(str(x), quote=True)


class _Links:
    """Relative links from the page's folder to files of the run folder."""

    def __init__(self, run_dir: str, page: str):
        self.run_dir, self.here = os.path.abspath(run_dir), os.path.dirname(os.path.abspath(page))

    def href(self, rel: str, folder: bool = False) -> str:
        path = os.path.relpath(os.path.join(self.run_dir, rel), self.here).replace(os.sep, "/")
        return quote(path + ("/" if folder else ""), safe="/")

    def a(self, rel: str, text: str, folder: bool = False) -> str:
        return f'<a href="{_e(self.href(rel, folder))}">{_e(text)}</a>'


def _table(head: list, rows: list, numeric: set = frozenset(), cls: str = "", widths: tuple = ()) -> str:
    """A table of already-escaped cells; columns in ``numeric`` are right-aligned; ``widths``
    (percentages) fix the columns' widths (with ``cls="fixed"``: the table fits its page)."""
    out = [f'<table class="{cls}">' if cls else "<table>"]
    if widths:
        out.append("<colgroup>" + "".join(f'<col style="width: {w}%">' for w in widths) + "</colgroup>")
    out.append("<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>")
    for r in rows:
        out.append("<tr>" + "".join(f'<td class="n">{c}</td>' if k in numeric else f"<td>{c}</td>"
                                    for k, c in enumerate(r)) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _version(v: dict | None) -> str:
    if not v:
        return "not recorded"
    extra = ", ".join(str(v[k]) for k in ("device", "opt_level") if v.get(k))
    return f"{v.get('name', '?')} {v.get('version', '?')}" + (f" ({extra})" if extra else "")


def _header(f: RunFolder) -> str:
    m, cfg = f.manifest, f.manifest.get("config") or {}
    versions: dict = {}
    for r in f.records:
        for v in r["verdicts"]:
            if v.get("versions") and v["backend"] not in versions:
                versions[v["backend"]] = v["versions"]
    ref = next(((r.get("reference") or {}).get("versions") for r in f.records
                if (r.get("reference") or {}).get("versions")), None)
    shard = m.get("shard")
    where = (f"shard {shard[0]} of {shard[1]}" if shard else
             f"merged from {len(m['merged_from'])} shard folders" if m.get("merged_from") else "the whole batch")
    if m.get("cases"):
        where += ", cases " + ", ".join(f"{a}-{b}" for a, b in m["cases"]) + " of the batch"
    opsets = m.get("opset_range")
    rows = [("seed", f"<code>{_e(m.get('root', '?'))}</code> (from {_e(m.get('root_source', '?'))})"),
            ("campaign", f"<code>{_e(m.get('campaign', '?'))}</code>, config {_e(m.get('config_source', '?'))}, "
                         f"fingerprint <code>{_e(m.get('fingerprint', '?'))}</code>"),
            ("dlgate", f"{_e(m.get('dlgate', '?'))}, generator {_e(m.get('generator', '?'))}"),
            ("cases", f"{len(f.records)} journaled of {_e(m.get('planned', '?'))} planned ({_e(where)})"),
            ("opset range", f"{_e(opsets[0])} to {_e(opsets[1])}" if isinstance(opsets, list) and len(opsets) == 2
             else "not recorded"),
            ("reference", f"{_e(cfg.get('reference', '?'))}: {_e(_version(ref))}")]
    rows += [(f"backend {_e(b)}", _e(_version(versions.get(b)))) for b in S.backends(f)]
    if f.verdict is not None:
        res = f.verdict.get("result", "?")
        rows.append(("gate", f'<span class="{"pass" if res == "pass" else "fail"}">{_e(res)}</span> (exit status '
                             f"{_e(f.verdict.get('exit_code'))}, fail_on {_e(f.verdict.get('fail_on'))}, novelty "
                             f"against the {_e('base build' if f.verdict.get('novelty') == 'base' else 'baseline')})"))
    else:
        rows.append(("gate", f'<span class="note">{_e(f.verdict_note)}</span>'))
    if m.get("skipped"):
        rows.append(("left out", f"{len(m['skipped'])} saved case(s) that cannot be loaded (see summary.md)"))
    return "<table>\n" + "\n".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "\n</table>"


def _change(f: RunFolder) -> str:
    """What the change touches and what the batch covered (a change-aware run), as the
    summary opens with it; "" for a run without a change."""
    doc = f.manifest.get("change")
    if not doc:
        return ""
    ch = table(doc, f.records, rewrites_of(f.timings.values()))
    out = ['<h2 id="change">What this change touches</h2>',
           f"<p>{_e(ch.get('source', ''))}: {len(ch['rows'])} target(s) on {_e(ch.get('compiler', '?'))} from "
           f"{len(ch['files'])} changed file(s).</p>"]
    if not ch["rows"]:
        out.append("<p>No target (tests, docs, build files or paths no table maps): the batch is the ordinary one.</p>")
    else:
        rows = []
        for r in ch["rows"]:
            applied = r.get("applied")
            app = "" if applied is None else (", ".join(f"{_e(b)}: {n}" for b, n in sorted(applied.items()))
                                              or "not recorded")
            status = f'<span class="fail">gap: {_e(r["gap"])}</span>' if r.get("gap") else '<span class="pass">tested</span>'
            rows.append([f"{_e(r['kind'])} <code>{_e(r['target'].split(':', 1)[1])}</code>", _e(r.get("why", "")),
                         str(r["aimed"]), str(r["models"]), str(r["tested"]), app, status])
        out.append(_table(["target", "changed code", "aimed", "models", "tested", "rewrite applied", ""], rows,
                          {2, 3, 4}))
    rest = [x for x in ch["files"] if x.get("skipped")]
    if rest:
        out.append("<p>Changed files with no target: " + ", ".join(
            f"<code>{_e(x['path'])}</code> ({_e(x['skipped'])})" for x in rest[:30])
                   + (f" and {len(rest) - 30} more" if len(rest) > 30 else "") + ".</p>")
    return "\n".join(out)


def _verdicts(f: RunFolder) -> str:
    counts = S.verdict_counts(f)
    cols = S.verdict_columns(counts)
    rows = [[_e(b)] + [str(c.get(v, 0)) for v in cols] + [str(sum(c.values()))] for b, c in counts.items()]
    return _table(["backend"] + [_e(v) for v in cols] + ["all cases"], rows, set(range(1, len(cols) + 2)))


#: A class's heading and what it means for the check, in the order the page lists them.
_SECTIONS = ((D.NEW, "New failures", "fail the check"),
             (D.REGRESSION, "Regressions: corpus cases that passed before", "fail the check"),
             (D.PRE_EXISTING, "Pre-existing: the base build fails the same way", "do not fail the check"),
             (D.KNOWN, "Known failures (in the baseline)", "do not fail the check"),
             (S.UNDECIDED, "Undecided failures", "no verdict.json decides them"),
             (D.FLAKY, "Flaky: did not reproduce on re-run", "do not fail the check"))
#: Lines and characters of a message the row shows; the whole message is in its details.
MESSAGE_LINES, MESSAGE_CHARS = 8, 600


def _clip(text: str) -> tuple:
    """``text``'s first lines, at most :data:`MESSAGE_LINES` and :data:`MESSAGE_CHARS`, and
    whether anything was left out."""
    lines = text.strip().splitlines()
    shown = "\n".join(lines[:MESSAGE_LINES])
    cut = len(lines) > MESSAGE_LINES
    if len(shown) > MESSAGE_CHARS:
        shown, cut = shown[:MESSAGE_CHARS].rstrip() + " …", True
    return shown, cut


def _repro_detail(f: RunFolder, x) -> str:
    """What the reduced repro fails with (repro.json's ``detail``: the message ``repro.py``
    prints), or "" without one."""
    if not x.repro:
        return ""
    try:
        with open(os.path.join(f.path, x.repro, "repro.json"), encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return ""
    return str(doc.get("detail") or "") if isinstance(doc, dict) else ""


def _message(x) -> str:
    """The backend's own message for finding ``x`` in its first case: the exception's type and
    whole message as the worker caught it, else the verdict's detail (what differs, for a
    wrong answer)."""
    err = x.error or {}
    if err.get("message") or err.get("type"):
        return f"{err.get('type', '')}: {err.get('message', '')}".strip(": ")
    return x.detail


def _command(x) -> str:
    if x.repro:
        return f"python {x.repro}/repro.py"
    return repro_command(x.sub_model or x.bundle, x.backend)


def _reduced_to(f: RunFolder, x) -> str:
    """The finding's operators in ONNX's names (:mod:`dlgate.opnames`), from its reduced model,
    else the operator types of the model it showed in."""
    text = N.folder_label(f.path, x.repro)
    if text:
        return text
    ops = N.folder_op_types(f.path, x.sub_model or x.bundle) or []
    more = f", … {len(ops) - 12} more" if len(ops) > 12 else ""  # a whole case can hold dozens of types
    return f"not reduced: {', '.join(ops[:12])}{more}" if ops else "not reduced"


def _cause_rows(found: list) -> list:
    """The findings grouped by cause (backend and the gate's cause id), in the order of their
    first finding; each cause's class the most severe of its findings'."""
    out: dict = {}
    for x in found:
        out.setdefault((x.backend, x.cause_id), []).append(x)
    return list(out.values())


def _class_of(xs: list) -> str:
    rank = {c: k for k, (c, _, _) in enumerate(_SECTIONS)}
    return min((c for x in xs for c in (x.classes or [S.UNDECIDED])), key=lambda c: rank.get(c, len(rank)))


def _quote_ids(f: RunFolder) -> dict:
    """Each cause's id to quote, as the run's summary gives it (:func:`row_id` over the
    gate's own order), so the page and ``summary.md`` name a cause spanning several clusters
    by the same id."""
    out: dict = {}
    v = f.verdict or {}
    for _, key in S.CLASS_KEYS:  # a cause is in one class per run, so their order does not matter
        groups = [g for g in v.get(key) or [] if isinstance(g, dict) and "cluster" in g]
        for gs in rows_by_cause(groups):
            out.setdefault(gs[0].get("cause") or gs[0]["cluster"], row_id(gs))
    return out


def _cause(f: RunFolder, xs: list, links: _Links, cols: int, quote_ids: dict) -> list:
    """A cause's two rows: what went wrong, how to reproduce it, its operators, cases and id;
    then its details (every finding, the whole message and frames, dlgate's own names)."""
    x = xs[0]
    shown = _repro_detail(f, x) or _message(x)
    text, cut = _clip(shown)
    more = ' <span class="note">(whole message in the details)</span>' if cut else ""
    refused = list(dict.fromkeys(t for y in xs for t in y.behind_refused))
    msg = f'<pre class="msg">{_e(text)}</pre>{more}' if text else '<p class="note">No message recorded.</p>'
    what = f'<span class="verdict">{_e(x.verdict)}</span> on {_e(x.backend)}{msg}'
    subs = sorted({os.path.basename(y.sub_model).split("-", 1)[0] for y in xs if y.sub_model})
    if subs:
        parts = (["the operators of an earlier failure"] if any(y.behind_failure for y in xs) or not refused else []) \
            + ([f"the operator(s) it refuses ({', '.join(f'<code>{_e(t)}</code>' for t in refused)})"] if refused
               else [])
        why = " and ".join(parts)
        what += (f'<p class="behind">Found in sub-model {_e(", ".join(subs))} of its case, once {why} were cut '
                 "out.</p>")
    cmd = _command(x)
    repro = f'<pre class="cmd">{_e(cmd)}</pre>' if cmd else '<span class="note">no bundle to run</span>'
    files = []
    if x.repro:
        files.append(links.a(x.repro, "repro folder", folder=True))
    if x.sub_model or x.bundle:
        files.append(links.a(x.sub_model or x.bundle, "case model", folder=True))
    if files:
        repro += " · ".join(files)
    ops = "<br>".join(f"<code>{_e(_reduced_to(f, y))}</code>" for y in xs[:3])
    if len(xs) > 3:
        ops += f"<br>… {len(xs) - 3} more in the details"
    n = len({c for y in xs for c in y.cases})
    ident = f"<code>{_e(quote_ids.get(x.cause_id, x.cluster))}</code>" + (f"<br>+{len(xs) - 1} fingerprint(s)" if len(xs) > 1 else "")
    main = (f'<tr class="cause"><td class="what">{what}</td><td>{repro}</td><td>{ops}</td>'
            f'<td class="n">{n}</td><td>{ident}</td></tr>')
    return [main, f'<tr class="more"><td colspan="{cols}">{_details(f, xs, links)}</td></tr>']


def _details(f: RunFolder, xs: list, links: _Links) -> str:
    x = xs[0]
    out = ['<details><summary>Details: the whole message, where it was raised, every fingerprint, '
           "dlgate's own names</summary>"]
    reduced = _repro_detail(f, x)
    if reduced:
        out.append(f"<p>The reduced repro fails with (<code>{_e(x.repro)}/repro.json</code>):</p>"
                   f'<pre class="msg">{_e(reduced)}</pre>')
    if _message(x):
        out.append(f"<p>In its first case, <code>{_e(x.first_case)}</code>:</p>"
                   f'<pre class="msg">{_e(_message(x))}</pre>')
    frames = (x.error or {}).get("frames") or []
    if frames:
        out.append(f"<p>Raised at ({_e((x.error or {}).get('stage', ''))} stage; innermost last):</p>"
                   f'<pre class="frames">{_e(chr(10).join(str(fr) for fr in frames))}</pre>')
    rows = []
    for y in xs:
        first = links.a(y.sub_model or y.bundle, y.first_case, folder=True) if (y.sub_model or y.bundle) \
            else _e(y.first_case)
        repro = links.a(y.repro + "/repro.py", f"{y.repro}/repro.py") if y.repro and \
            os.path.isfile(os.path.join(f.path, y.repro, "repro.py")) else "not reduced"
        rows.append([f"<code>{_e(y.fingerprint)}</code>", _e(", ".join(y.classes) or "?"),
                     f"<code>{_e(_reduced_to(f, y))}</code>", first, str(len(y.cases)), repro,
                     f"<code>{_e(y.typed)}</code>"])
    out.append(_table(["fingerprint", "class", "reduced to (ONNX)", "first case", "cases", "repro",
                       "dlgate's pattern"], rows, {4}, cls="fixed", widths=(13, 8, 22, 12, 6, 17, 22)))
    out.append(f'<p class="note">The cause (how dlgate groups failures; <code>{_e(x.cause_id)}</code>), '
               f"normalized: <code>{_e(x.cause)}</code></p>")
    out.append("</details>")
    return "\n".join(out)


def _findings(f: RunFolder, found: list, links: _Links) -> str:
    if not found:
        return "<p>No finding: no backend failed on any case.</p>" if f.records else "<p>No finding yet.</p>"
    groups = _cause_rows(found)
    flaky = sum(x.confirmed_at is None for x in found)
    behind = [x for x in found if x.sub_model]
    refused = [x for x in behind if x.behind_refused]
    out = [f"<p>{len(groups)} distinct cause(s) of {len(found)} distinct finding(s) (reduced models, by "
           "fingerprint); each row is one cause: the message the compiler gave, the command that reproduces "
           "it (from the run folder), the operators it reduces to in ONNX's names, and the id to quote (its "
           "first cluster, as the run's summary quotes it; a cause met in several dtypes or sibling operators is "
           "one row, and one issue). The details row under each holds the rest."
           + (f" {flaky} finding(s) only flaky (not reproduced on re-run)." if flaky else "") + "</p>"]
    if behind:
        out.append(f"<p>{len(behind)} finding(s) showed in a sub-model of their case, once the operators of an "
                   "earlier failure" + (f" or an operator the compiler refuses ({len(refused)} of them)"
                                        if refused else "")
                   + " were cut out: failures of the compiler on a valid model like any other.</p>")
    by_class: dict = {}
    for xs in groups:
        by_class.setdefault(_class_of(xs), []).append(xs)
    head = ["what went wrong", "reproduce", "reduced to (ONNX)", "cases", "id"]
    quote_ids = _quote_ids(f)
    for cls, title, means in _SECTIONS:
        if cls not in by_class:
            continue
        rows = [r for xs in by_class[cls] for r in _cause(f, xs, links, len(head), quote_ids)]
        out.append(f'<h3 id="findings-{_e(cls)}">{_e(title)} ({_e(means)}): {len(by_class[cls])} cause(s)</h3>')
        out.append('<table class="findings fixed"><colgroup><col class="c-what"><col class="c-repro">'
                   '<col class="c-ops"><col class="c-cases"><col class="c-id"></colgroup>')
        out.append("<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>")
        out += rows
        out.append("</table>")
    return "\n".join(out)


def _refusals(f: RunFolder) -> str:
    """The operators each backend refused (``unsupported``: no converter or kernel), by
    ONNX type, with how many cases and the backend's own message."""
    found = S.refusals(f)
    if not found:
        return ""
    rows = []
    for r in found:
        op = f"<code>{_e(r.operator)}</code>" if r.operator else '<span class="note">not named by the message</span>'
        rows.append([op, _e(r.backend), str(len(r.cases)), _e(r.cases[0]), f'<span class="w">{_e(r.message)}</span>'])
    return "\n".join([
        '<h2 id="refused">Operators the compiler refused</h2>',
        f"<p>{len({x for r in found for x in r.cases})} case(s) were refused (<code>unsupported</code>: the compiler "
        "has no converter or kernel for an operator). A refusal does not fail the check unless the base build "
        "runs the model; dlgate cuts the refused operators out and tests the rest of the case.</p>",
        _table(["operator (ONNX)", "backend", "cases", "first case", "message"], rows, {2}, cls="fixed refusals",
               widths=(20, 12, 7, 16, 45))])


def _final_table(name: str, curves: dict, what: str) -> str:
    return _table([name, what], [[_e(k), str(c[-1] if c else 0)] for k, c in curves.items()], {1})


def _img(links_dir: str, page: str, name: str, alt: str) -> str:
    rel = os.path.relpath(os.path.join(links_dir, name), os.path.dirname(os.path.abspath(page))).replace(os.sep, "/")
    return f'<p><img src="{_e(quote(rel, safe="/"))}" alt="{_e(alt)}" width="800" height="360"></p>'


def _plots(f: RunFolder, found: list, plots_dir: str) -> dict:
    """Draw the plots that have data; name -> alt text of each written."""
    written = {}
    if not f.records:
        return written
    feats = S.feature_curves(f)
    if feats:
        curve_plot(os.path.join(plots_dir, PLOTS["features"]), "Coverage: distinct graph features per criterion",
                   "distinct features", [Line(c, v, c) for c, v in feats.items()])
        written["features"] = "cumulative distinct coverage features per criterion over the cases"
    rw = S.rewrite_curves(f)
    if rw:
        curve_plot(os.path.join(plots_dir, PLOTS["rewrites"]), "Coverage: distinct rewrite kinds per backend",
                   "distinct rewrite kinds", [Line(b, v, b) for b, v in rw.items()])
        written["rewrites"] = "cumulative distinct rewrite kinds per backend over the cases"
    lines = []
    for b, c in S.finding_curves(f, found).items():
        lines += [Line(f"{b} findings", c["findings"], b), Line(f"{b} causes", c["causes"], b, dashed=True)]
    curve_plot(os.path.join(plots_dir, PLOTS["findings"]), "Distinct findings (solid) and causes (dashed)",
               "distinct", lines)
    written["findings"] = "cumulative distinct findings and causes per backend over the cases"
    return written


def _internals(f: RunFolder, page: str, plots_dir: str, written: dict) -> list:
    """dlgate's own view of the run (findings and coverage over the cases, batch metrics):
    for dlgate's developers and campaign tuning, not needed to act on a finding, so the page
    keeps it closed, at its end."""
    out = ['<h2 id="internals">dlgate\'s coverage and metrics</h2>',
           "<details><summary>Coverage over the cases, findings over the cases and stats.json (how well the batch "
           "explored the compiler; closed: nothing here is needed to act on a finding)</summary>",
           '<h3 id="found-over-cases">Findings over the cases</h3>']
    if "findings" in written:
        out.append(_img(plots_dir, page, PLOTS["findings"], written["findings"]))
        out.append('<p class="note">Solid: distinct findings (fingerprints); dashed: distinct causes (as the rows above count them). '
                   "A finding that never reproduced on re-run (flaky) is not counted.</p>")
    else:
        out.append("<p>No case has been journaled yet.</p>")
    out.append('<h3 id="coverage">Coverage over the cases</h3>')
    feats = S.feature_curves(f) if f.records else None
    if f.coverage is None:
        out.append("<p>Graph-feature coverage not recorded (no coverage.jsonl in the run folder).</p>")
    elif not feats:
        out.append("<p>coverage.jsonl holds no feature (the run generated no batch case).</p>")
    else:
        out.append(_img(plots_dir, page, PLOTS["features"], written["features"]))
        out.append(_final_table("criterion", feats, "distinct features in this run"))
        if f.coverage_start:
            out.append(f'<p class="note">The run started from a coverage state of {f.coverage_start} feature(s) '
                       "(coverage-start.json); the curves count the features of this run's cases, seen before "
                       "or not.</p>")
    rw = S.rewrite_curves(f) if f.records else {}
    if rw:
        out.append(_img(plots_dir, page, PLOTS["rewrites"], written["rewrites"]))
        out.append(_final_table("backend", rw, "distinct rewrite kinds in this run"))
    missing = [b for b in S.backends(f) if b not in rw]
    if missing:
        out.append(f"<p>Rewrite kinds not recorded for {_e(', '.join(missing))} (the backend names none, or no "
                   "case compiled).</p>")
    out.append('<h3 id="stats">Batch metrics (stats.json)</h3>')
    out.append(_stats(f))
    out.append("</details>")
    return out


def render(f: RunFolder, page: str, plots_dir: str, written: dict, found: list) -> str:
    """The page: what a compiler engineer acts on first (the gate's result, the failures with
    their messages and repro commands, the refused operators), the run's files, then dlgate's
    own coverage internals, closed."""
    links = _Links(f.path, page)
    title = f"dlgate report: {f.manifest.get('campaign', '?')} on {str(f.manifest.get('root', '?'))[:12]}"
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">', f"<title>{_e(title)}</title>",
           f"<style>{_CSS}</style>", "</head>", "<body>", f"<h1>{_e(title)}</h1>", _header(f), _change(f),
           '<h2 id="verdicts">Verdicts per backend</h2>',
           _verdicts(f) if f.records else "<p>No case has been journaled yet.</p>",
           '<h2 id="findings">Failures, one row per cause</h2>', _findings(f, found, links)]
    if f.verdict is None:
        out.append(f'<p class="note">Classes: {_e(f.verdict_note)}.</p>')
    out.append(_refusals(f))
    present = [n for n in FILES if os.path.isfile(os.path.join(f.path, n))]
    out.append('<h2 id="files">Files of the run</h2>')
    out.append("<p>" + " · ".join(links.a(n, n) for n in present) + "</p>" if present else "<p>None.</p>")
    out += _internals(f, page, plots_dir, written)
    out += ["</body>", "</html>", ""]
    return "\n".join(x for x in out if x)


def _stats(f: RunFolder) -> str:
    if f.stats is None:
        return "<p>stats.json not recorded (the run has not finished).</p>"
    rows, rewrites = stats_rows(f.stats)
    out = [_table(["metric", "value", "meaning"], [[f"<code>{_e(k)}</code>", _e(v), _e(d)] for k, v, d in rows],
                  {1})]
    for b, kinds in rewrites.items():
        out.append(f"<details><summary>Rewrite kinds of {_e(b)}: {len(kinds)} (cases each fired on)</summary>")
        out.append(_table(["rewrite kind", "cases"], [[f"<code>{_e(k)}</code>", _e(n)] for k, n in kinds.items()],
                          {1}))
        out.append("</details>")
    return "\n".join(out)


def write_report(run_dir: str, page: str | None = None) -> dict:
    """Write the page and its plots; {"html": path, "plots_dir": path, "plots": [paths]}."""
    f = load(run_dir)
    page = page or os.path.join(run_dir, "report.html")
    stem, ext = os.path.splitext(page)
    if ext.lower() not in (".html", ".htm"):
        raise ReportError(f"--out {page}: name an .html file (its plots go to the folder of the same name)")
    plots_dir = stem
    try:
        os.makedirs(plots_dir, exist_ok=True)
        for name in PLOTS.values():
            if os.path.lexists(os.path.join(plots_dir, name)):
                os.unlink(os.path.join(plots_dir, name))
    except OSError as e:
        raise ReportError(f"{plots_dir}: cannot write the plots there ({e.strerror or e})") from None
    found = S.findings(f)
    written = _plots(f, found, plots_dir)
    text = render(f, page, plots_dir, written, found)
    tmp = page + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, page)
    return {"html": page, "plots_dir": plots_dir, "plots": [os.path.join(plots_dir, PLOTS[k]) for k in written]}
