"""Reports of a run: ``junit.xml`` for GitHub's report actions, ``summary.md`` for people
(also appended to ``GITHUB_STEP_SUMMARY``), and ``verdict.json`` for machines."""
from __future__ import annotations

import html
import os
import re
import shlex

from junit_xml import TestCase, TestSuite, to_xml_report_string

from dlgate import GENERATOR_VERSION, __version__
from dlgate import markdown as md
from dlgate import opnames as N
from dlgate.change.report import lines as change_lines
from dlgate.gate import decide as D
from dlgate.gate.baseline import repros_dir
from dlgate.gate.budget import stop_line
from dlgate.gate.journal import write_json, write_text
from dlgate.gate.progress import final_summary
from dlgate.oracle import verdict as V
from dlgate.secrets import redact

_EMOJI = {D.NEW: "❌", D.REGRESSION: "❌", D.PRE_EXISTING: "⚠️", D.KNOWN: "ℹ️", D.FLAKY: "🎲"}


def repro_command(bundle: str | None, label: str) -> str:
    if not bundle:
        return ""
    spec = label.replace("[cpu]", "").replace("[", ":").replace("]", "")
    return f"dlgate check {shlex.quote(bundle)} --backend {shlex.quote(spec)}"


def case_name(rec: dict) -> str:
    """A testcase name stable across commits: the campaign and index for batch cases (the
    case id also holds the commit's seed), the stable folder name for corpus cases and
    baseline repros."""
    if rec.get("kind") == "corpus":
        return f"corpus/{rec['corpus_name']}"
    if rec.get("kind") == "baseline":
        return f"baseline/{rec['baseline_entry']}"
    if rec.get("index") is not None and rec.get("campaign"):
        return f"{rec['campaign']}/{int(rec['index']):05d}"
    return rec["case"]


def failure_message(cls: str, v: dict, reduced_to: str | None = None) -> str:
    """``new mismatch in Sigmoid(float32) [cluster]``: what a reviewer reads first, the reduced
    operators in ONNX's names (``reduced_to``, else dlgate's own pattern) and the id to quote."""
    i = D.ident(v)
    what = reduced_to or i.get("typed")
    where = f" in {what}" if what else ""
    return f"{cls} {v['verdict']}{where} [{i['cluster']}]"


def junit(records: list, decision: D.Decision, baseline, timings: dict, props: dict, fail_on: str,
          logs: dict | None = None, out_dir: str | None = None) -> str:
    """One testsuite per backend, one testcase per model, and one per finding made behind
    another failure of the model (``<case>/finding-2``, ...). A finding's class is its
    cause's class in this run (:func:`dlgate.gate.decide.one_class`), as in the summary; ``out_dir``:
    the run's folder, whose case models name the operators in ONNX's terms."""
    failing = {(g["fingerprint"], g["class"]) for g in decision.failing(fail_on)}
    by_fp = {g["fingerprint"]: g for gs in decision.groups.values() for g in gs}
    suites: dict = {}
    for rec in sorted(records, key=D._order):
        for v, k in D.findings(rec):
            label = v["backend"]
            t = timings.get((rec["case"], label), 0.0) if not k else 0.0
            out = [f"case {rec['case']} (seed {rec.get('seed')}, opset {rec.get('opset')})"]
            bundle = v.get("bundle") or rec.get("bundle")
            ops = N.folder_op_types(out_dir, bundle) if out_dir else None
            if ops:
                out.append(f"operators{' of the sub-model' if k else ''}: {', '.join(ops)}")
            if rec.get("operators"):
                out.append(f"dlgate specs (the generator's names): {', '.join(rec['operators'])}")
            if k:
                out.append(f"found in a sub-model of the case, with operators {v.get('cut')} cut out, behind "
                           + ("an operator the compiler refuses" if D.behind_refusal(_parent(rec, v), v)
                              else "another failure"))
            i = v.get("identity") or {}
            g = by_fp.get(D.ident(v)["fingerprint"])
            reduced_to = (g or {}).get("reduced_to")
            if i.get("repro"):
                out.append(f"reduced repro: {i['repro']}/repro.py ({reduced_to or i.get('typed', '')})")
            cmd = repro_command(bundle, label)
            if cmd:
                out.append(f"reproduce the whole {'cut ' if k else ''}case: {cmd}")
            err_log = (logs or {}).get((rec["case"], label)) if not k else None
            name = case_name(rec) + (f"/finding-{k + 1}" if k else "")
            tc = TestCase(name, classname=f"dlgate.{decision.campaign}.{label}", elapsed_sec=round(t, 3),
                          stdout="\n".join(out), stderr=err_log or None)
            detail = (v.get("detail") or "").strip()
            own = D.classify(rec, v, baseline)
            fp = D.ident(v)["fingerprint"]
            cls = g["class"] if g is not None and own is not None else own  # its cause's class in this run
            detail_note = f" (this case on its own: {own})" if cls != own else ""
            if v["verdict"] == V.REFERENCE_ERROR:
                tc.add_error_info(f"dlgate internal error (not a compiler failure): {detail[:300]}",
                                  detail, "reference_error")
            elif cls is not None and (fp, cls) in failing:
                where = f" (repro: {i['repro']}/repro.py)" if i.get("repro") else ""
                msg = f"{failure_message(cls, v, reduced_to)}{detail_note}{where}: {detail[:300]}"
                if v["verdict"] in V.VALUE_CLASSES + V.TIR_WRONG:  # a wrong answer: a failure, not an error
                    tc.add_failure_info(msg, detail, v["verdict"])
                else:
                    tc.add_error_info(msg, detail, v["verdict"])
            elif cls is not None:
                tc.add_skipped_info(f"{failure_message(cls, v, reduced_to)}{detail_note}, not failing the check: "
                                    f"{detail[:300]}")
            elif v["verdict"] == V.UNSUPPORTED:
                tc.add_skipped_info(f"unsupported (the compiler refuses an operator; never failing on its own): "
                                    f"{detail[:300]}")
            elif v["verdict"] != V.PASS:
                tc.add_skipped_info(f"{v['verdict']}: {detail[:300]}")
            suites.setdefault(label, []).append(tc)
        for tw in rec.get("twins", ()):  # the equivalence oracle's findings: a testcase of their own
            if tw["status"] != D.INCONSISTENT:
                continue
            v = dict(tw, verdict=D.INCONSISTENT)
            g = by_fp.get(D.ident(v)["fingerprint"])
            i = v.get("identity") or {}
            kind = (rec.get("rewrite") or {}).get("kind")
            out = [f"case {rec['case']} (seed {rec.get('seed')}, opset {rec.get('opset')}): the backend against "
                   f"itself on the case's {kind} twin (twin.onnx beside the case)"]
            if i.get("repro"):
                out.append(f"reduced repro: {i['repro']}/repro.py")
            tc = TestCase(case_name(rec) + "/twin", classname=f"dlgate.{decision.campaign}.{tw['backend']}",
                          stdout="\n".join(out))
            detail = (tw.get("detail") or "").strip()
            if g is not None and (g["fingerprint"], g["class"]) in failing:
                tc.add_failure_info(f"{g['class']} inconsistent: {detail[:300]}", detail, D.INCONSISTENT)
            else:
                tc.add_skipped_info(f"{(g or {}).get('class', 'inconsistent')} inconsistent, not failing the check: "
                                    f"{detail[:300]}")
            suites.setdefault(tw["backend"], []).append(tc)
    out = []
    if decision.interrupted:
        props = dict(props, interrupted=interrupted_line(decision))
    for label in sorted(suites):
        versions = _versions(records, label)
        p = dict(props, **{f"version.{k}": str(x) for k, x in sorted(versions.items())})
        out.append(TestSuite(f"dlgate {decision.campaign} {label}", suites[label], properties=p))
    if decision.interrupted:  # an error of its own, so that no JUnit reader shows the unfinished run green
        tc = TestCase("interrupted", classname=f"dlgate.{decision.campaign}.run",
                      stdout="run the same command on the same output folder again to resume")
        tc.add_error_info(f"{interrupted_line(decision)}: the check is not decided", None, "interrupted")
        out.insert(0, TestSuite(f"dlgate {decision.campaign} run", [tc], properties=props))
    xml = to_xml_report_string(out, encoding="utf-8")
    # junit-xml sums float times (1.2120000000000002); consumers expect at most 3 decimals
    return re.sub(r'time="([0-9.eE+-]+)"', lambda m: f'time="{float(m.group(1)):.3f}"', xml)


def _parent(rec: dict, x: dict) -> dict:
    """The verdict of ``rec`` that finding ``x`` was made behind."""
    return next((v for v in rec["verdicts"] if any(y is x for y in v.get("more", ()))), rec["verdicts"][0])


def _versions(records: list, label: str) -> dict:
    for rec in records:
        for v in rec["verdicts"]:
            if v["backend"] == label and v.get("versions"):
                return {k: x for k, x in v["versions"].items() if k in ("name", "version", "device", "opt_level")}
    return {}


def interrupted_line(decision: D.Decision) -> str:
    """'interrupted by SIGTERM after 51 of 600 cases': the same words in the summary, the
    JUnit report and the log."""
    i = decision.interrupted or {}
    return f"interrupted by {i.get('signal')} after {i.get('cases')} of {i.get('planned')} cases"


def summary(decision: D.Decision, fail_on: str, shard: str | None = None, out: str | None = None) -> str:
    """summary.md: what a reviewer reads first. One row per cause (one class per cause and
    run, :func:`dlgate.gate.decide.one_class`), the title's count equal to the rows that fail
    the check, operators named from the reduced ONNX model (``reduced_to``, set by
    :func:`annotate`), a "what to do" line per section, dlgate's own names in a closed
    details block at the end. ``out``: the run's output folder, for the commands it gives."""
    code = decision.cases_code(fail_on)
    rows = {cls: rows_by_cause(decision.of(cls)) for cls in D.CLASSES}
    n_new = len(rows[D.NEW]) + len(rows[D.REGRESSION])
    head = {D.EXIT_OK: "✅ passed", D.EXIT_FAIL: f"❌ failed: {n_new} new failure(s)",
            D.EXIT_INTERNAL: "💥 dlgate internal error (not a compiler failure)",
            D.EXIT_CANNOT_RUN: "💥 failed: a backend the gate needs could not run"}[code]
    if code == D.EXIT_FAIL and fail_on == "any":
        head = f"❌ failed: {sum(len(rows[c]) for c in D.CLASSES if c != D.FLAKY)} failure(s) (fail_on: any)"
    if decision.interrupted:  # never a pass: the run did not finish; what it found so far still shows
        found = {D.EXIT_OK: "", D.EXIT_FAIL: f", {head.split(': ', 1)[-1]} so far",
                 D.EXIT_INTERNAL: ", a dlgate internal error so far",
                 D.EXIT_CANNOT_RUN: ", a backend the gate needs could not run"}[code]
        head = f"⏹️ {interrupted_line(decision)}: not decided{found}"
    if shard:
        head = f"shard {shard} report ({head.split(' ', 1)[1]}); the merge of all shards decides the check"
    lines = [f"## dlgate {md.code(decision.campaign)} on {md.code(decision.root[:12])}: {head}", ""]
    where = f", shard {shard}" if shard else ""
    lines.append(f"{decision.cases} cases{where}; backends: {md.text(', '.join(decision.backends))}; "
                 f"{cause_counts(decision)}.")
    if decision.interrupted:
        lines += ["", f"⏹️ The run was {interrupted_line(decision)}, so the check is not decided and does not "
                  "pass: the cases that did not run may hold failures. What the cases that ran found is below, "
                  "failures included. Run the same command on the same output folder again to resume where it "
                  "stopped (finished cases are not run again)."]
    if decision.stopped_by_budget:
        lines += ["", f"⏱️ The run was {stop_line(decision.cases, decision.planned, decision.budget)}: the "
                  "verdict is decided on the cases that ran. Run the same command on the same output folder "
                  "again to continue where it stopped."]
    lines += ["", novelty_line(decision), ""]
    if decision.change:
        lines += change_lines(decision.change)
    if decision.baseline_missing:
        lines += [f"⚠️ {missing_baseline_text(decision, markdown=True)}", ""]
    link = run_link()
    if link:
        lines += [link, ""]
    verdicts = [v for v in V.VERDICTS if any(v in c for c in decision.counts.values())]
    if verdicts:
        lines += md.table(["backend"] + verdicts, [[md.cell(b)] + [str(c.get(v, 0)) for v in verdicts]
                                                   for b, c in decision.counts.items()])
        lines.append("")
        lines += [counts_line(decision), ""]
    if decision.twins:
        lines += twins_table(decision)
    if decision.cannot_run:
        lines += ["### 💥 Could not run (the gate fails: nothing can be judged without them)", "",
                  "Fix the installation (or mark a backend that may be absent `optional: true`) and run the same "
                  "command again: finished cases are kept.", ""]
        for b, why in sorted(decision.cannot_run.items()):
            lines.append(f"- {md.cell(b, 120)}: {md.cell(why, 400)}")
        lines.append("")
    if decision.unloadable:
        lines += ["Saved cases that cannot be loaded (left out of this run; repair or remove them):", ""]
        lines += [f"- {md.code(c, limit=120)}: {md.cell(why, 300)}" for c, why in sorted(decision.unloadable.items())]
        lines.append("")
    if decision.unavailable:
        lines.append("Optional backends that cannot run on this machine (skipped, never failing):")
        lines.append("")
        for b, why in sorted(decision.unavailable.items()):
            lines.append(f"- {md.cell(b)}: {md.cell(why, 240)}")
        lines.append("")
    if any(rows.values()):
        lines += ["Quote a row's **id**: its cluster, the id dlgate's issues and the baseline use. Hover it for "
                  "its fingerprints (one per distinct reduced model; each names a `repros/` folder); dlgate's "
                  "internal names for each row are in the details at the end.", ""]
    sections = [(D.NEW, "New failures (fail the check)"),
                (D.REGRESSION, "Regressions: corpus cases that passed before (fail the check)"),
                (D.PRE_EXISTING, "Pre-existing: the base build fails the same way (do not fail the check)"),
                (D.KNOWN, "Known failures (in the baseline)"),
                (D.FLAKY, "Flaky: did not reproduce on re-run (do not fail the check)")]
    several = len({g["backend"] for gs in rows.values() for r in gs for g in r}) > 1 or len(decision.backends) > 1
    for cls, title in sections:
        if not rows[cls]:
            continue
        n = sum(len(g["cases"]) for r in rows[cls] for g in r)
        lines += [f"### {_EMOJI[cls]} {title}: {len(rows[cls])} cause(s), {n} case(s)", "",
                  f"**What to do:** {what_to_do(cls, decision, out)}", ""]
        head_cells = ["id", "reduced to"] + (["backend"] if several else []) + \
            ["verdict", "cases", "what went wrong", "repro"]
        lines += md.table(head_cells, [_row(gs, several) for gs in rows[cls]])
        lines.append("")
    if decision.fixed:
        lines += [f"### ✅ Fixed: {len(decision.fixed)}", "",
                  "**What to do:** nothing: the next `dlgate baseline update` drops them from the baseline "
                  "(if they come back, they are new again).", ""]
        lines += md.table(["fingerprint", "backend", "shown by", "failure"],
                          [[md.code(f["fingerprint"], table=True), md.cell(f["backend"]), md.cell(f["why"]),
                            md.cell(f.get("text", ""))] for f in decision.fixed])
        lines.append("")
    if decision.internal:
        lines += [f"### 💥 dlgate internal errors: {len(decision.internal)}", "",
                  "The reference failed on these cases: a dlgate defect, not a compiler failure.", ""]
        for e in decision.internal[:20]:
            lines.append(f"- {md.code(e['case'])}: {md.cell(e['detail'], 200)}")
        lines.append("")
    failing = decision.failing(fail_on)
    if failing:
        g = failing[0]
        cmd = f"python {g['repro']}/repro.py" if g.get("repro") else \
            repro_command(g["bundles"][0] if g["bundles"] else None, g["backend"])
        if cmd:
            lines += ["Reproduce the first one locally (from the run's output folder):", "", md.fence(cmd, "sh"), ""]
    if any(rows.values()):
        lines += details(decision, rows)
    return "\n".join(lines)


def rows_by_cause(groups: list) -> list:
    """A class's groups, one list per cause (fingerprints sharing one cause, whatever dtype
    and sibling), in the groups' order."""
    out: dict = {}
    for g in groups:
        out.setdefault(g.get("cause") or g["cluster"], []).append(g)
    return list(out.values())


def row_id(gs: list) -> str:
    """The id a row is quoted by: its first group's cluster (issues and the baseline key on clusters)."""
    return gs[0]["cluster"]


def label(g: dict) -> str:
    """What a failure group reduces to, in ONNX's names (:func:`annotate`); dlgate's own
    pattern only for a group no report folder has a model of."""
    return g.get("reduced_to") or g.get("typed") or g.get("pattern") or "?"


def _attr(text: str) -> str:
    """Text for a double-quoted HTML attribute inside a Markdown table cell: one line,
    HTML-escaped, and no character that ends the cell or opens a code span."""
    s = html.escape(" ".join(str(text).split()), quote=True)
    return s.replace("|", "&#124;").replace("`", "&#96;").replace("\\", "&#92;")


def hover(shown: str, title: str) -> str:
    """``shown`` (Markdown already escaped, or trusted HTML) with ``title`` on hover: a
    ``<span title>``, which GitHub keeps."""
    return f'<span title="{_attr(title)}">{shown}</span>'


def _row(gs: list, several: bool) -> list:
    g = gs[0]
    ident = row_id(gs)
    clusters = list(dict.fromkeys(x["cluster"] for x in gs))
    fps = list(dict.fromkeys(x["fingerprint"] for x in gs))
    tip = f"fingerprint(s) {', '.join(fps)}" + (f"; further clusters {', '.join(clusters[1:])}" if clusters[1:] else "")
    cell_id = hover(f"<code>{html.escape(ident)}</code>", tip) + (f" +{len(clusters) - 1}" if clusters[1:] else "")
    names = []
    for x in gs[:3]:
        full = label(x)
        short = md.cell(full, 90)
        names.append(hover(short, full) if len(full) > 90 else short)
    reduced = "<br>".join(names) + (f"<br>… {len(gs) - 3} more" if len(gs) > 3 else "")
    if _kin(gs):
        reduced += f"<br>({md.cell(_kin(gs), 200)})"
    blame = ", ".join(sorted({x["blame"] for x in gs if x.get("blame")}))
    verdict = md.cell(g["verdict"]) + (f" (blame: {md.cell(blame)})" if blame else "")
    n = sum(len(x["cases"]) for x in gs)
    others: dict = {}
    for x in gs:
        for c, k in (x.get("cases_by_class") or {}).items():
            if c != x["class"]:
                others[c] = others.get(c, 0) + k
    cases = str(n) + (f" ({', '.join(f'{k} {c} on its own' for c, k in others.items())})" if others else "")
    notes = []
    behind, refused = sum(x.get("behind", 0) for x in gs), sum(x.get("behind_refused", 0) for x in gs)
    if behind:
        cuts = sorted({b.rsplit("/", 1)[-1].split("-", 1)[0] for x in gs for b in x["bundles"] if "/cut" in b})
        what = ("behind an operator the compiler refuses" if refused == behind else
                f"{refused} behind an operator the compiler refuses, {behind - refused} behind another failure"
                if refused else "behind another failure of its case")
        where = f"sub-model{'s' if len(cuts) > 1 else ''} {', '.join(cuts)}" if cuts else "a sub-model"
        notes.append(f"found in {where} of its case, {what}")
    if any(x.get("varies") for x in gs):
        notes.append("wrong values change between re-runs (uninitialised memory or a race?)")
    base = next((x["base"] for x in gs if x.get("base")), None)
    if base:
        notes += base_notes(base)
    err = md.cell(g["detail"], 160)
    wrong = err + (" — " + md.cell("; ".join(notes), 240) if notes else "")
    where = md.code(f"{g['repro']}/repro.py" if g.get("repro") else (g["bundles"] or [""])[0], table=True)
    return [cell_id, reduced] + ([md.cell(g["backend"])] if several else []) + [verdict, cases, wrong, where]


def details(decision: D.Decision, rows: dict) -> list:
    """A closed block at the end of summary.md: each row's identities and dlgate's internal
    names (the generator's operator specs and attribute regimes, the cause key), for
    dlgate's developers and for matching an issue or a baseline entry by hand."""
    cells = []
    for cls in D.CLASSES:
        for gs in rows[cls]:
            g = gs[0]
            fps = "<br>".join(f"{md.code(x['fingerprint'], table=True)} "
                              f"{md.cell(x.get('typed') or x.get('pattern') or '?')}" for x in gs[:10])
            fps += f"<br>… {len(gs) - 10} more" if len(gs) > 10 else ""
            key = g.get("cause_text") or g.get("cluster_text") or g.get("text", "")
            cells.append([md.code(row_id(gs), table=True), md.cell(cls), fps,
                          f"{md.code(g.get('cause') or g['cluster'], table=True)} {md.cell(key, 200)}"])
    return ["<details><summary>dlgate's identities and internal names for each row</summary>", "",
            "Each row's fingerprints with the generator's pattern (dlgate's operator specs and the attribute "
            "regimes a fingerprint keeps), and the cause key that makes the row (dlgate's docs/gate.md, "
            "\"A failure's identity\").", ""] + \
        md.table(["id", "class", "fingerprints and generator patterns", "cause"], cells) + ["", "</details>", ""]


def cause_counts(decision: D.Decision) -> str:
    """``4 distinct failure cause(s): 1 new, 3 pre-existing``: the rows of the tables below, by
    class (flaky apart: they are not failures of the compiler shown)."""
    n = len(decision.clusters)
    parts = [f"{len(rows_by_cause(decision.of(c)))} {c}" for c in D.CLASSES if c != D.FLAKY and decision.of(c)]
    text = f"{n} distinct failure cause(s)" + (f": {', '.join(parts)}" if parts else "")
    flaky = len(rows_by_cause(decision.of(D.FLAKY)))
    return text + (f"; {flaky} flaky" if flaky else "")


def twins_table(decision: D.Decision) -> list:
    """The equivalence oracle's twins per backend and status (``rewrite_share``), apart from
    the verdicts against the reference: an ``inconsistent`` twin is listed with the failures
    below, under its own verdict."""
    statuses = [s for s in ("consistent", "excused", "inconsistent", "refused", "not_judged", "rewrite_error")
                if any(s in c for c in decision.twins.values())]
    return md.table(["backend (twins)"] + statuses, [[md.cell(b)] + [str(c.get(s, 0)) for s in statuses]
                                                     for b, c in sorted(decision.twins.items())]) + \
        ["", "Twins: cases rewritten into an equivalent model (`rewrite_share`) and run again on the same "
             "backend; `inconsistent`: the backend computes otherwise on the twin, or fails on it while it runs "
             "the case; `refused`: it declares it does not take the twin.", ""]


def counts_line(decision: D.Decision) -> str:
    """What the counts table counts, what ``unsupported`` means, and where findings behind a
    refused operator come from: the table counts each case once, by its first verdict, while
    the tables below also hold what was found in the sub-models cut from a case."""
    text = "The table counts each case once, by its first verdict."
    if any(c.get(V.UNSUPPORTED) for c in decision.counts.values()):
        text += (" `unsupported`: the compiler refused an operator it does not implement; that never fails the "
                 "check on its own" + (" (unless the base build runs it: then it is new)" if decision.mode == "base"
                                       else "") + ".")
    groups = [g for c in D.CLASSES for g in decision.of(c)]
    total = sum(len(g["cases"]) for g in groups)
    behind, refused = sum(g.get("behind", 0) for g in groups), sum(g.get("behind_refused", 0) for g in groups)
    if behind:
        how = ("behind another failure of their case" if not refused else
               "all behind an operator the compiler refuses" if refused == behind else
               f"{refused} of them behind an operator the compiler refuses, {behind - refused} behind another "
               "failure")
        text += (" dlgate also cuts a failing or refused operator out of its case and runs the rest as a sub-model "
                 "(`cases/<case>/cut1-*`, `cut2-*`, ...), where further bugs show: "
                 f"{behind} of the {total} failures below were found that way, {how}. They are failures of "
                 "the compiler on a valid model like any other, whatever the case's first verdict.")
    return text


def what_to_do(cls: str, decision: D.Decision, out: str | None = None) -> str:
    """The next step for a class of failures, with the exact command where there is one."""
    baseline = decision.baseline_path or ".dlgate/baseline.json"
    update = md.code(f"dlgate baseline update {shlex.quote(out or 'OUT')} --baseline {shlex.quote(baseline)}")
    commit = f"then commit {md.code(baseline)} and {md.code(repros_dir(baseline) + '/')}"
    if not decision.baseline_path:
        commit += (f", and set {md.code('baseline: ' + baseline)} in the campaign "
                   f"(or pass {md.code('--baseline ' + baseline)})")
    if cls == D.NEW and decision.mode == "base":
        return ("the base build does not fail these, so the change introduced them: reproduce each with its "
                "`repro.py` and fix the change.")
    if cls == D.NEW:
        return ("reproduce each with its `repro.py`. If the change caused it, fix the change. If the compiler had "
                "it already (without a base build dlgate cannot tell), accept it, and it is known from then on: "
                f"{update}, {commit}.")
    if cls == D.REGRESSION:
        return (f"a saved corpus case that passed before fails now: fix the change, or accept its new state with "
                f"{update}, {commit}.")
    if cls == D.PRE_EXISTING:
        return ("nothing on this change: the base build fails the same way, so these are the compiler's own "
                "bugs. The weekly campaign files one issue per id (`dlgate issues`).")
    if cls == D.KNOWN:
        return (f"nothing: the baseline {md.code(baseline)} accepts them. An entry leaves it when its own repro "
                "passes (it is then listed as fixed).")
    return ("nothing required: they did not reproduce on re-run. A failure that comes and goes may be "
            "nondeterminism in the compiler; raise `confirm_runs` to re-run more.")


def _kin(gs: list) -> str:
    """A cause met in several operators or dtypes: which, e.g. ``operators ReduceMax, ReduceMin;
    dtypes float16, float32``, the operators as the reduced models name them."""
    if len(gs) < 2:
        return ""
    ops = sorted({p.split("(", 1)[0] for g in gs for p in label(g).split(" → ") if p and p != "?"})
    dts = sorted({d for g in gs for d in g.get("dtypes") or ()})
    if len(ops) < 2 and len(dts) < 2:
        return ""
    return f"operators {', '.join(ops)}; dtypes {', '.join(dts)}"


def base_notes(base: dict) -> list:
    """What a failure group's summary row says of the base build: its verdict when it does
    not share the failure, and which case decided sharing when it was not the case itself."""
    on = base.get("decided_on") or "case"
    where = f" on the {on}" if on != "case" else ""
    if on == "reused reduction":  # decided once for the cause, on the case reduced for it
        where = f" (decided for its cause on case {base.get('reused')}, whose reduction it reuses)"
    whole = base.get("whole")
    before = f" (it fails the whole case otherwise: {whole.get('verdict')})" if whole else ""
    if not base.get("reproduces"):
        return [f"base build: {base.get('verdict')}{where}{before}"]
    return [f"the base build shares it{where}{before}"] if where else []


#: How a run without a base build can be told to fail only on what a change introduces.
SET_BASE = ("To fail only on what a change introduces, set a base build: `base: {python: PATH}` in the campaign "
            "(the interpreter of an environment with the base commit's build), `--base-python PATH` on "
            "`dlgate run`, or the Action input `base-compiler`.")


def novelty_line(decision: D.Decision) -> str:
    if decision.mode == "base":
        return ("Novelty is decided against the **base build**: every failure on the build under test was re-run "
                "there on the same model and inputs; a failure the base build shares is pre-existing.")
    if decision.baseline_path:
        return (f"No base build configured: novelty is decided against the baseline {md.code(decision.baseline_path)} "
                f"({decision.baseline_size} accepted fingerprint(s)): a failure it does not hold counts as new, even "
                f"one the compiler had before this change. {SET_BASE}")
    return ("No base build and no baseline configured: every failure counts as new, even one the compiler had "
            f"before this change. {SET_BASE}")


def missing_baseline_text(decision: D.Decision, markdown: bool = False) -> str:
    """What a baseline file that is named but not there means for this run: a log line, or with
    ``markdown`` a line of summary.md, where the path is a code span (it shows literally)."""
    means = ("no failure counts as known (the base build still decides what is new)" if decision.mode == "base"
             else "every failure counts as new")
    path = md.code(decision.baseline_path) if markdown else decision.baseline_path
    return (f"no baseline at {path}: {means}. Check the path (relative to the working "
            "directory), or create the file with `dlgate baseline update`.")


def run_url(env=os.environ) -> str | None:
    """This GitHub Actions workflow run's page, or None outside GitHub Actions."""
    server, repo, run_id = (env.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    return f"{server}/{repo}/actions/runs/{run_id}" if server and repo and run_id else None


def run_link() -> str:
    """Links to this workflow run and its artifacts, when running in GitHub Actions."""
    url = run_url()
    return f"[Workflow run]({url}) · [artifacts (repros, reports)]({url}#artifacts)" if url else ""


def annotate(out_dir: str, decision: D.Decision) -> None:
    """Name each failure group's operators in ONNX's terms (``reduced_to``), from its reduced
    model (``repros/<fingerprint>/model.onnx``), else its first case's model (``not reduced:``
    its operator types); each cause of ``cluster_list`` lists its groups' names. What
    verdict.json, the summary, JUnit, the HTML report and issues show."""
    names: dict = {}
    for gs in decision.groups.values():
        for g in gs:
            text = N.folder_label(out_dir, g.get("repro"))
            if text is None:
                ops = N.folder_op_types(out_dir, (g.get("bundles") or [None])[0])
                text = f"not reduced: {', '.join(ops)}" if ops else None
            g["reduced_to"] = text
            if text:
                names.setdefault(g.get("cause") or g["cluster"], []).append(text)
    for c in decision.clusters:
        c["reduced_to"] = list(dict.fromkeys(names.get(c["cause"], ())))


def write_all(out_dir: str, records: list, decision: D.Decision, baseline, timings: dict, props: dict,
              fail_on: str, shard: str | None = None, logs: dict | None = None) -> dict:
    """Write junit.xml, summary.md and verdict.json, each atomically (a kill while they are
    written leaves each one whole: this run's or the one it had); returns their paths."""
    paths = {k: os.path.join(out_dir, f) for k, f in (("junit", "junit.xml"), ("summary", "summary.md"),
                                                      ("verdict", "verdict.json"))}
    annotate(out_dir, decision)
    write_text(paths["junit"], redact(junit(records, decision, baseline, timings, props, fail_on, logs, out_dir)))
    text = redact(summary(decision, fail_on, shard, out=out_dir))
    write_text(paths["summary"], text)
    doc = decision.to_json(fail_on)
    doc.update(shard=shard, dlgate=__version__, generator=GENERATOR_VERSION)
    write_json(paths["verdict"], doc)
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        try:
            final_summary(step, text)  # in place of the run's live progress section, else appended
        except OSError:
            pass  # a summary we cannot append to must not fail the gate
    return paths
