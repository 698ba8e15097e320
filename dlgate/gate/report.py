"""Reports of a run: ``junit.xml`` for GitHub's report actions, ``summary.md`` for people
(also appended to ``GITHUB_STEP_SUMMARY``), and ``verdict.json`` for machines."""
from __future__ import annotations

import os
import re
import shlex

from junit_xml import TestCase, TestSuite, to_xml_report_string

from dlgate import GENERATOR_VERSION, __version__
from dlgate.gate import decide as D
from dlgate.gate.journal import write_json
from dlgate.oracle import verdict as V

#: Verdicts reported as a JUnit <failure> (wrong answers); other failures are <error>s.
_WRONG = (V.MISMATCH, V.SHAPE_MISMATCH, V.DTYPE_MISMATCH)
_EMOJI = {D.NEW: "❌", D.REGRESSION: "❌", D.PRE_EXISTING: "⚠️", D.KNOWN: "ℹ️", D.FLAKY: "🎲"}


def repro_command(bundle: str | None, label: str) -> str:
    if not bundle:
        return ""
    spec = label.replace("[cpu]", "").replace("[", ":").replace("]", "")
    return f"dlgate check {shlex.quote(bundle)} --backend {shlex.quote(spec)}"


def junit(records: list, decision: D.Decision, baseline, timings: dict, props: dict, fail_on: str) -> str:
    """One testsuite per backend, one testcase per model."""
    failing = {(g["signature"], g["class"]) for g in decision.failing(fail_on)}
    suites: dict = {}
    for rec in sorted(records, key=D._order):
        for v in rec["verdicts"]:
            label = v["backend"]
            name = f"corpus/{rec['corpus_name']}" if rec.get("kind") == "corpus" else rec["case"]
            t = timings.get((rec["case"], label), 0.0)
            out = [f"case {rec['case']} (seed {rec.get('seed')}, opset {rec.get('opset')})",
                   f"operators: {', '.join(rec.get('operators') or [])}"]
            cmd = repro_command(rec.get("bundle"), label)
            if cmd:
                out.append(f"reproduce: {cmd}")
            tc = TestCase(name, classname=f"dlgate.{decision.campaign}.{label}", elapsed_sec=round(t, 3),
                          stdout="\n".join(out))
            sig = (v.get("signature") or {}).get("id", "")
            detail = (v.get("detail") or "").strip()
            cls = D.classify(rec, v, baseline)
            if v["verdict"] == V.REFERENCE_ERROR:
                tc.add_error_info(f"dlgate internal error (not a compiler failure): {detail[:300]}",
                                  detail, "reference_error")
            elif cls is not None and (sig, cls) in failing:
                msg = f"{cls} {v['verdict']} [{sig}]: {detail[:300]}"
                if v["verdict"] in _WRONG:
                    tc.add_failure_info(msg, detail, v["verdict"])
                else:
                    tc.add_error_info(msg, detail, v["verdict"])
            elif cls is not None:
                tc.add_skipped_info(f"{cls} failure {v['verdict']} [{sig}], not failing the check: {detail[:300]}")
            elif v["verdict"] != V.PASS:
                tc.add_skipped_info(f"{v['verdict']}: {detail[:300]}")
            suites.setdefault(label, []).append(tc)
    out = []
    for label in sorted(suites):
        versions = _versions(records, label)
        p = dict(props, **{f"version.{k}": str(x) for k, x in sorted(versions.items())})
        out.append(TestSuite(f"dlgate {decision.campaign} {label}", suites[label], properties=p))
    xml = to_xml_report_string(out, encoding="utf-8")
    # junit-xml sums float times (1.2120000000000002); consumers expect at most 3 decimals
    return re.sub(r'time="([0-9.eE+-]+)"', lambda m: f'time="{float(m.group(1)):.3f}"', xml)


def _versions(records: list, label: str) -> dict:
    for rec in records:
        for v in rec["verdicts"]:
            if v["backend"] == label and v.get("versions"):
                return {k: x for k, x in v["versions"].items() if k in ("name", "version", "device", "opt_level")}
    return {}


def _cell(text: str, n: int = 120) -> str:
    text = " ".join(str(text).split())
    text = text if len(text) <= n else text[: n - 1] + "…"
    return text.replace("|", "\\|")


def summary(decision: D.Decision, fail_on: str, shard: str | None = None) -> str:
    code = decision.exit_code(fail_on)
    n_new = len(decision.of(D.NEW)) + len(decision.of(D.REGRESSION))
    head = {D.EXIT_OK: "✅ passed", D.EXIT_FAIL: f"❌ failed: {n_new} new failure signature(s)",
            D.EXIT_INTERNAL: "💥 dlgate internal error (not a compiler failure)"}[code]
    if code == D.EXIT_FAIL and fail_on == "any":
        head = f"❌ failed: {len(decision.failure_groups())} failure signature(s) (fail_on: any)"
    lines = [f"## dlgate `{decision.campaign}` on `{decision.root[:12]}`: {head}", ""]
    where = f", shard {shard}" if shard else ""
    lines.append(f"{decision.cases} cases{where}; backends: {', '.join(decision.backends)}.")
    lines.append("")
    verdicts = [v for v in V.VERDICTS if any(v in c for c in decision.counts.values())]
    if verdicts:
        lines.append("| backend | " + " | ".join(verdicts) + " |")
        lines.append("|---|" + "---|" * len(verdicts))
        for b, c in decision.counts.items():
            lines.append(f"| {b} | " + " | ".join(str(c.get(v, 0)) for v in verdicts) + " |")
        lines.append("")
    if decision.unavailable:
        lines.append("Backends that cannot run on this machine (skipped, never failing):")
        lines.append("")
        for b, why in sorted(decision.unavailable.items()):
            lines.append(f"- {b}: {_cell(why, 240)}")
        lines.append("")
    sections = [(D.NEW, "New failures (fail the check)"),
                (D.REGRESSION, "Regressions: corpus cases that passed before (fail the check)"),
                (D.PRE_EXISTING, "Pre-existing: the base build fails the same way (do not fail the check)"),
                (D.KNOWN, "Known failures (in the baseline)"),
                (D.FLAKY, "Flaky: did not reproduce on re-run (do not fail the check)")]
    for cls, title in sections:
        groups = decision.of(cls)
        if not groups:
            continue
        lines += [f"### {_EMOJI[cls]} {title}: {len(groups)}", "",
                  "| signature | backend | verdict | cases | repro | detail |", "|---|---|---|---|---|---|"]
        for g in groups:
            if g.get("repro"):
                where = f"`{g['repro']}/repro.py` ({g.get('reduced_operators', '')})"
            else:
                where = f"`{g['bundles'][0]}`" if g["bundles"] else ""
            lines.append(f"| `{g['signature']}` | {g['backend']} | {g['verdict']} | {len(g['cases'])} | "
                         f"{where} | {_cell(g['detail'])} |")
        lines.append("")
    if decision.fixed:
        lines += [f"### ✅ Fixed: {len(decision.fixed)}", "", "| signature | backend | why | failure |",
                  "|---|---|---|---|"]
        for f in decision.fixed:
            lines.append(f"| `{f['signature']}` | {f['backend']} | {f['why']} | {_cell(f.get('text', ''))} |")
        lines.append("")
    elif not decision.complete:
        lines += ["Fixed baseline entries are decided when the shards are merged (`dlgate merge`).", ""]
    if decision.internal:
        lines += [f"### 💥 dlgate internal errors: {len(decision.internal)}", "",
                  "The reference failed on these cases: a dlgate defect, not a compiler failure.", ""]
        for e in decision.internal[:20]:
            lines.append(f"- `{e['case']}`: {_cell(e['detail'], 200)}")
        lines.append("")
    failing = decision.failing(fail_on)
    if failing:
        g = failing[0]
        cmd = f"python {g['repro']}/repro.py" if g.get("repro") else \
            repro_command(g["bundles"][0] if g["bundles"] else None, g["backend"])
        if cmd:
            lines += ["Reproduce the first one locally (from the run's output folder):", "", "```sh", cmd, "```", ""]
    return "\n".join(lines)


def write_all(out_dir: str, records: list, decision: D.Decision, baseline, timings: dict, props: dict,
              fail_on: str, shard: str | None = None) -> dict:
    """Write junit.xml, summary.md and verdict.json; returns their paths."""
    paths = {k: os.path.join(out_dir, f) for k, f in (("junit", "junit.xml"), ("summary", "summary.md"),
                                                      ("verdict", "verdict.json"))}
    with open(paths["junit"], "w") as f:
        f.write(junit(records, decision, baseline, timings, props, fail_on))
    text = summary(decision, fail_on, shard)
    with open(paths["summary"], "w") as f:
        f.write(text)
    doc = decision.to_json(fail_on)
    doc.update(shard=shard, dlgate=__version__, generator=GENERATOR_VERSION)
    write_json(paths["verdict"], doc)
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        try:
            with open(step, "a") as f:
                f.write(text + "\n")
        except OSError:
            pass  # a summary we cannot append to must not fail the gate
    return paths
