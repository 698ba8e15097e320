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
import os
from urllib.parse import quote

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
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 1100px;
       padding: 0 1em; color: #1f2328; line-height: 1.45; }
h1 { font-size: 1.5em; border-bottom: 1px solid #d0d7de; padding-bottom: .3em; }
h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #d0d7de; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .92em; }
th, td { border: 1px solid #d0d7de; padding: .3em .6em; text-align: left; vertical-align: top;
         overflow-wrap: break-word; }
th { background: #f6f8fa; white-space: nowrap; }
td code, td a, .w { overflow-wrap: anywhere; }
tr:nth-child(even) td { background: #fafbfc; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: .9em; }
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


def _table(head: list, rows: list, numeric: set = frozenset()) -> str:
    """A table of already-escaped cells; columns in ``numeric`` are right-aligned."""
    out = ["<table>", "<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
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
    from dlgate.change.coverage import rewrites_of, table

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


def _findings(f: RunFolder, found: list, links: _Links) -> str:
    if not found:
        return "<p>No finding: no backend failed on any case.</p>" if f.records else "<p>No finding yet.</p>"
    rows = []
    for x in found:
        first = links.a(x.bundle, x.first_case, folder=True) if x.bundle else _e(x.first_case)
        repro = "not reduced"
        if x.repro:
            repro = links.a(x.repro, x.repro + "/", folder=True)
            if os.path.isfile(os.path.join(f.path, x.repro, "repro.py")):
                repro += " · " + links.a(x.repro + "/repro.py", "repro.py")
        rows.append([f'<span class="w">{_e(x.backend)}</span>', _e(", ".join(x.classes) or "?"), _e(x.verdict),
                     f"<code>{_e(x.fingerprint)}</code><br>{_e(x.typed)}",
                     f"<code>{_e(x.cluster)}</code><br>{_e(x.cause)}", first, str(len(x.cases)), repro])
    causes = len({(x.backend, x.cluster) for x in found})
    flaky = sum(x.confirmed_at is None for x in found)
    text = (f"<p>{len(found)} distinct finding(s) (fingerprints), {causes} distinct cause(s) (clusters)"
            + (f"; {flaky} of them only flaky (not reproduced on re-run)" if flaky else "") + ".</p>")
    return text + _table(["backend", "class", "verdict", "finding (reduced to)", "cause", "first case", "cases",
                          "repro"], rows, {6})


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


def render(f: RunFolder, page: str, plots_dir: str, written: dict, found: list) -> str:
    links = _Links(f.path, page)
    title = f"dlgate report: {f.manifest.get('campaign', '?')} on {str(f.manifest.get('root', '?'))[:12]}"
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">', f"<title>{_e(title)}</title>",
           f"<style>{_CSS}</style>", "</head>", "<body>", f"<h1>{_e(title)}</h1>", _header(f), _change(f),
           '<h2 id="verdicts">Verdicts per backend</h2>',
           _verdicts(f) if f.records else "<p>No case has been journaled yet.</p>",
           '<h2 id="findings">Distinct findings</h2>', _findings(f, found, links)]
    if f.verdict is None:
        out.append(f'<p class="note">Classes: {_e(f.verdict_note)}.</p>')
    if "findings" in written:
        out.append(_img(plots_dir, page, PLOTS["findings"], written["findings"]))
        out.append('<p class="note">Solid: distinct findings (fingerprints); dashed: distinct causes (clusters). '
                   "A finding that never reproduced on re-run (flaky) is not counted.</p>")
    out.append('<h2 id="coverage">Coverage over the cases</h2>')
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
    out.append('<h2 id="stats">Batch metrics (stats.json)</h2>')
    out.append(_stats(f))
    present = [n for n in FILES if os.path.isfile(os.path.join(f.path, n))]
    out.append('<h2 id="files">Files of the run</h2>')
    out.append("<p>" + " · ".join(links.a(n, n) for n in present) + "</p>" if present else "<p>None.</p>")
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


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
