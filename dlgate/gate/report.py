"""Reports of a run: ``junit.xml`` for GitHub's report actions, ``summary.md`` for people
(also appended to ``GITHUB_STEP_SUMMARY``), and ``verdict.json`` for machines."""
from __future__ import annotations

import os
import re
import shlex

from junit_xml import TestCase, TestSuite, to_xml_report_string

from dlgate import GENERATOR_VERSION, __version__
from dlgate import markdown as md
from dlgate.gate import decide as D
from dlgate.gate.journal import write_json, write_text
from dlgate.oracle import verdict as V

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


def failure_message(cls: str, v: dict) -> str:
    """``new mismatch in Sigmoid(float16) [fingerprint]``: what a reviewer reads first."""
    i = D.ident(v)
    where = f" in {i['typed']}" if i.get("typed") else ""
    return f"{cls} {v['verdict']}{where} [{i['fingerprint']}]"


def junit(records: list, decision: D.Decision, baseline, timings: dict, props: dict, fail_on: str,
          logs: dict | None = None) -> str:
    """One testsuite per backend, one testcase per model, and one per finding made behind
    another failure of the model (``<case>/finding-2``, ...)."""
    failing = {(g["fingerprint"], g["class"]) for g in decision.failing(fail_on)}
    suites: dict = {}
    for rec in sorted(records, key=D._order):
        for v, k in D.findings(rec):
            label = v["backend"]
            t = timings.get((rec["case"], label), 0.0) if not k else 0.0
            out = [f"case {rec['case']} (seed {rec.get('seed')}, opset {rec.get('opset')})",
                   f"operators: {', '.join(rec.get('operators') or [])}"]
            if k:
                out.append(f"found behind another failure, with operators {v.get('cut')} cut out of the case")
            i = v.get("identity") or {}
            if i.get("repro"):
                out.append(f"reduced repro: {i['repro']}/repro.py ({i.get('typed', '')})")
            cmd = repro_command(v.get("bundle") or rec.get("bundle"), label)
            if cmd:
                out.append(f"reproduce the whole {'cut ' if k else ''}case: {cmd}")
            err_log = (logs or {}).get((rec["case"], label)) if not k else None
            name = case_name(rec) + (f"/finding-{k + 1}" if k else "")
            tc = TestCase(name, classname=f"dlgate.{decision.campaign}.{label}", elapsed_sec=round(t, 3),
                          stdout="\n".join(out), stderr=err_log or None)
            detail = (v.get("detail") or "").strip()
            cls = D.classify(rec, v, baseline)
            fp = D.ident(v)["fingerprint"]
            if v["verdict"] == V.REFERENCE_ERROR:
                tc.add_error_info(f"dlgate internal error (not a compiler failure): {detail[:300]}",
                                  detail, "reference_error")
            elif cls is not None and (fp, cls) in failing:
                where = f" (repro: {i['repro']}/repro.py)" if i.get("repro") else ""
                msg = f"{failure_message(cls, v)}{where}: {detail[:300]}"
                if v["verdict"] in V.VALUE_CLASSES:
                    tc.add_failure_info(msg, detail, v["verdict"])
                else:
                    tc.add_error_info(msg, detail, v["verdict"])
            elif cls is not None:
                tc.add_skipped_info(f"{failure_message(cls, v)}, not failing the check: {detail[:300]}")
            elif v["verdict"] != V.PASS:
                tc.add_skipped_info(f"{v['verdict']}: {detail[:300]}")
            suites.setdefault(label, []).append(tc)
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


def summary(decision: D.Decision, fail_on: str, shard: str | None = None) -> str:
    code = decision.cases_code(fail_on)
    n_new = len(decision.of(D.NEW)) + len(decision.of(D.REGRESSION))
    head = {D.EXIT_OK: "✅ passed", D.EXIT_FAIL: f"❌ failed: {n_new} new failure(s)",
            D.EXIT_INTERNAL: "💥 dlgate internal error (not a compiler failure)",
            D.EXIT_CANNOT_RUN: "💥 failed: a backend the gate needs could not run"}[code]
    if code == D.EXIT_FAIL and fail_on == "any":
        head = f"❌ failed: {len(decision.failure_groups())} failure(s) (fail_on: any)"
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
                 f"{len(decision.clusters)} distinct cause(s) among the failures.")
    if decision.interrupted:
        lines += ["", f"⏹️ The run was {interrupted_line(decision)}, so the check is not decided and does not "
                  "pass: the cases that did not run may hold failures. What the cases that ran found is below, "
                  "failures included. Run the same command on the same output folder again to resume where it "
                  "stopped (finished cases are not run again)."]
    if decision.stopped_by_budget:
        from dlgate.gate.budget import stop_line

        lines += ["", f"⏱️ The run was {stop_line(decision.cases, decision.planned, decision.budget)}: the "
                  "verdict is decided on the cases that ran. Run the same command on the same output folder "
                  "again to continue where it stopped."]
    lines += ["", novelty_line(decision), ""]
    if decision.change:
        from dlgate.change.report import lines as change_lines

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
    sections = [(D.NEW, "New failures (fail the check)"),
                (D.REGRESSION, "Regressions: corpus cases that passed before (fail the check)"),
                (D.PRE_EXISTING, "Pre-existing: the base build fails the same way (do not fail the check)"),
                (D.KNOWN, "Known failures (in the baseline)"),
                (D.FLAKY, "Flaky: did not reproduce on re-run (do not fail the check)")]
    by_cause = {c.get("cause") or c.get("cluster"): c for c in decision.clusters}
    for cls, title in sections:
        groups = decision.of(cls)
        if not groups:
            continue
        rows: dict = {}
        for g in groups:  # one row per cause: fingerprints sharing one cause, whatever dtype and sibling
            rows.setdefault(g.get("cause") or g["cluster"], []).append(g)
        lines += [f"### {_EMOJI[cls]} {title}: {len(rows)} cause(s), {len(groups)} fingerprint(s)", ""]
        cells = []
        for cl, gs in rows.items():
            g = gs[0]
            typed = "<br>".join(md.cell(x.get("typed") or x.get("pattern") or "?", 80) for x in gs[:5])
            if len(gs) > 5:
                typed += f"<br>… {len(gs) - 5} more"
            where = md.code(f"{g['repro']}/repro.py" if g.get("repro") else (g["bundles"] or [""])[0], table=True)
            blame = ", ".join(sorted({x["blame"] for x in gs if x.get("blame")}))
            notes = [_kin(gs)] if _kin(gs) else []  # one cause met in several operators or dtypes
            if any(x.get("varies") for x in gs):
                notes.append("wrong values change between re-runs (uninitialised memory or a race?)")
            behind = sum(x.get("behind", 0) for x in gs)
            if behind:
                notes.append(f"{behind} found behind another failure of their case (its operators cut out)")
            base = next((x["base"] for x in gs if x.get("base")), None)
            if base:
                notes += base_notes(base)
            detail = "; ".join(notes + [g["detail"]])
            cells.append([f"{md.code(cl, table=True)} {md.cell(by_cause.get(cl, {}).get('text', ''), 60)}",
                          md.cell(g["backend"]), md.cell(g["verdict"]), typed, str(sum(len(x["cases"]) for x in gs)),
                          md.cell(blame), where, md.cell(detail)])
        lines += md.table(["cause", "backend", "verdict", "reduced to", "cases", "blame", "repro", "detail"], cells)
        lines.append("")
    if decision.fixed:
        lines += [f"### ✅ Fixed: {len(decision.fixed)}", ""]
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
    return "\n".join(lines)


def _kin(gs: list) -> str:
    """A cause met in several operators or dtypes: which, e.g. ``operators ReduceMax, ReduceMin;
    dtypes float16, float32``."""
    ops = sorted({p for g in gs for p in (g.get("pattern") or "").split(">") if p})
    dts = sorted({d for g in gs for d in g.get("dtypes") or ()})
    if len(ops) < 2 and len(dts) < 2:
        return ""
    return f"operators {', '.join(ops)}; dtypes {', '.join(dts)}"


def base_notes(base: dict) -> list:
    """What a failure group's summary row says of the base build: its verdict when it does
    not share the failure, and which case decided sharing when it was not the case itself."""
    on = base.get("decided_on") or "case"
    where = f" on the {on}" if on != "case" else ""
    whole = base.get("whole")
    before = f" (it fails the whole case otherwise: {whole.get('verdict')})" if whole else ""
    if not base.get("reproduces"):
        return [f"base build: {base.get('verdict')}{where}{before}"]
    return [f"the base build shares it{where}{before}"] if where else []


def novelty_line(decision: D.Decision) -> str:
    if decision.mode == "base":
        return ("Novelty is decided against the **base build**: every failure on the build under test was re-run "
                "there on the same model and inputs; a failure the base build shares is pre-existing.")
    where = md.code(decision.baseline_path) if decision.baseline_path else "an empty baseline (none configured)"
    return (f"No base build configured: novelty is decided against the baseline {where} "
            f"({decision.baseline_size} accepted fingerprint(s)). Set `base` (Action input `base-compiler`) so that "
            "only what the change introduced fails the check.")


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


def write_all(out_dir: str, records: list, decision: D.Decision, baseline, timings: dict, props: dict,
              fail_on: str, shard: str | None = None, logs: dict | None = None) -> dict:
    """Write junit.xml, summary.md and verdict.json, each atomically (a kill while they are
    written leaves each one whole: this run's or the one it had); returns their paths."""
    paths = {k: os.path.join(out_dir, f) for k, f in (("junit", "junit.xml"), ("summary", "summary.md"),
                                                      ("verdict", "verdict.json"))}
    from dlgate.secrets import redact  # no secret value in a report, nor in the job summary

    write_text(paths["junit"], redact(junit(records, decision, baseline, timings, props, fail_on, logs)))
    text = redact(summary(decision, fail_on, shard))
    write_text(paths["summary"], text)
    doc = decision.to_json(fail_on)
    doc.update(shard=shard, dlgate=__version__, generator=GENERATOR_VERSION)
    write_json(paths["verdict"], doc)
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        from dlgate.gate.progress import final_summary

        try:
            final_summary(step, text)  # in place of the run's live progress section, else appended
        except OSError:
            pass  # a summary we cannot append to must not fail the gate
    return paths
