"""From ``verdict.json`` to the step: outputs, annotations (at most ``MAX_ANNOTATIONS`` of a
kind), notes on the run, and the job summary's progress section sealed."""
from __future__ import annotations

import json
import os
import shlex

import yaml

from dlgate.gate.progress import live_section, seal
from dlgate.github import checks
from entrypoint.inputs import Context, get_input
from entrypoint.plan import Plan, here
from entrypoint.workflow import EXIT_INTERNAL, VERDICT_OF_EXIT, command, log


def seal_progress(env: dict, rc: int) -> None:
    """``dlgate run`` keeps a live progress section in the job summary, which its final
    summary replaces; when it ended without one (an internal error, a crash), turn the
    section into a paragraph saying so, above the run's last progress."""
    path = env.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        seal(path, f"> **dlgate:** the run ended with exit status {rc} before writing its summary; see the log of "
                   "the dlgate run step. Its last progress:")
    except OSError as e:
        log(f"cannot write the job summary {path}: {e}")


def live_check(p: Plan, ctx: Context, env: dict, token: str) -> checks.LiveCheck | None:
    """The run's live check run (``check-run``), following the live section ``dlgate run``
    writes to the job summary: started here, in the process that holds the token, never
    handed to ``dlgate run`` or the compiler under test; None when off or not possible. Its
    one line, if it turns itself off, goes to the log outside the child's fence."""
    if p.check_run == "off":
        return None
    step = env.get("GITHUB_STEP_SUMMARY")
    name = f"dlgate: {campaign_name(p, ctx, env)}" + (f" {p.shard}" if p.shard else "")
    return checks.start(p.check_run, name, lambda: live_section(step), p.check_run_every, env=env, token=token,
                        log=log)


def campaign_name(p: Plan, ctx: Context, env: dict) -> str:
    """The campaign's name for the check run: the ``campaign`` input, else the campaign
    file's ``campaign`` key (read as plain YAML: nothing of the user's runs here), else the
    file's name."""
    name = get_input(env, "campaign")
    if name:
        return name
    try:
        with open(os.path.join(here(p, ctx), p.config), encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        if isinstance(doc, dict) and isinstance(doc.get("campaign"), str) and doc["campaign"].strip():
            return doc["campaign"].strip()
    except (OSError, yaml.YAMLError):
        pass
    return os.path.splitext(os.path.basename(p.config))[0] or "run"


def read_summary(p: Plan, ctx: Context, since: float) -> str | None:
    """This run's summary.md (None when it wrote none: a crash, or an older run's file)."""
    return checks.run_summary(out_path(p, ctx), since)


def out_path(p: Plan, ctx: Context, *parts: str) -> str:
    """A path in the output folder, on this machine."""
    return os.path.join(here(p, ctx), p.out, *parts)


def display_path(p: Plan, *parts: str) -> str:
    """A path in the output folder as later steps see it: relative to the workspace (whose
    absolute path differs between this container and the runner), or absolute if given so."""
    return os.path.normpath(os.path.join(p.wd, p.out, *parts))


def read_verdict(p: Plan, ctx: Context, since: float) -> dict | None:
    """This run's verdict.json; None when it wrote none (a usage error, a crash) or the file
    is an older run's."""
    path = out_path(p, ctx, "verdict.json")
    try:
        if os.path.getmtime(path) < since:
            return None
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def normalize_exit(rc: int) -> int:
    """dlgate's statuses pass through (interruption included); anything else (killed by a
    signal) is an internal error."""
    return rc if rc in VERDICT_OF_EXIT else EXIT_INTERNAL


def outputs(p: Plan, rc: int, verdict: dict | None) -> dict:
    """The step outputs. The verdict is verdict.json's when it agrees with the exit status
    (a crash after the report was written is an internal error whatever the report says)."""
    v = verdict or {}
    n = {key: len(v.get(key) or []) for key, _ in COUNTS}
    return {"verdict": v["result"] if v.get("exit_code") == rc and v.get("result") else VERDICT_OF_EXIT[rc],
            "new-failures": str(n["new"] + n["regressions"]),
            "junit": display_path(p, "junit.xml"), "summary": display_path(p, "summary.md"),
            "repros": display_path(p, "repros"),
            "cases": str(v.get("cases") or 0), "planned": str(v.get("planned") or v.get("cases") or 0),
            "stopped-by-budget": "true" if v.get("stopped_by_budget") else "false",
            **{name: str(n[key]) for key, name in COUNTS}}


#: verdict.json's lists counted in the step outputs, and each output's name.
COUNTS = (("new", "new"), ("regressions", "regressions"), ("known", "known"), ("pre_existing", "pre-existing"),
          ("fixed", "fixed"), ("flaky", "flaky"))
#: GitHub shows at most 10 error and 10 warning annotations per step; more only clutter the log.
MAX_ANNOTATIONS = 10


def run_notes(verdict: dict, p: Plan) -> list:
    """A ``::warning::`` when the run named a baseline file that does not exist (every
    failure then counts as new; dlgate's summary, in the job summary, says so too), a
    ``::notice::`` when the budget stopped the run, and an ``::error::`` when a signal
    interrupted it (a cancelled job, or one cut by its time limit): the check is not decided."""
    out = []
    stopped = verdict.get("interrupted")
    if isinstance(stopped, dict):
        out.append(command("error", f"interrupted by {stopped.get('signal')} after {stopped.get('cases')} of "
                                    f"{stopped.get('planned')} cases: the check is not decided (the reports cover the "
                                    f"cases that ran); a rerun on the same output-dir resumes",
                           title="dlgate: interrupted"))
    if verdict.get("baseline_missing") and verdict.get("baseline"):
        where = os.path.normpath(os.path.join(p.wd, str(verdict["baseline"])))  # as later steps see it
        means = "no failure counts as known" if verdict.get("novelty") == "base" else "every failure counts as new"
        out.append(command("warning", f"no baseline at {where}: {means}. Check the path (relative to the working "
                                      f"directory), or create the file with `dlgate baseline update`",
                           title="dlgate: no baseline"))
    if verdict.get("stopped_by_budget"):
        b = verdict.get("budget")
        b = f"{b:g}" if isinstance(b, (int, float)) else "?"
        out.append(command("notice", f"stopped by the budget ({b} s) after {verdict.get('cases')} "
                                     f"of {verdict.get('planned')} cases: the verdict is decided on the cases that "
                                     f"ran; a rerun on the same output-dir resumes", title="dlgate: budget spent"))
    return out


def _first_line(text: str, n: int = 300) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= n else line[: n - 1] + "…"


def annotations(verdict: dict, p: Plan) -> list:
    """One ``::error`` per failure signature that fails the check (new failures and
    regressions under ``fail_on: new``, every failure under ``any``) and one ``::warning``
    per other new, regressed or pre-existing one; known and flaky ones are in the summary
    only. At most MAX_ANNOTATIONS of each kind, then one line saying how many more."""
    fail_on = verdict.get("fail_on", "new")
    lines = {"error": [], "warning": []}
    for key, cls in (("new", "new"), ("regressions", "regression"), ("pre_existing", "pre-existing"),
                     ("known", "known")):
        for g in verdict.get(key) or []:
            fails = fail_on == "any" or (fail_on == "new" and key in ("new", "regressions"))
            if key == "known" and not fails:
                continue
            kind = "error" if fails else "warning"
            cases = g.get("cases") or []
            fp = g.get("fingerprint") or g.get("signature")
            where = g.get("typed") or g.get("pattern") or ""
            msg = (f"[{fp}] in {len(cases)} case(s)"
                   f"{', e.g. ' + cases[0] if cases else ''}: {_first_line(g.get('detail', ''))}")
            if g.get("repro"):
                msg += f"\nreduced repro: python {display_path(p, g['repro'] + '/repro.py')}"
            if g.get("bundles"):
                spec = str(g.get("backend", "")).replace("[cpu]", "").replace("[", ":").replace("]", "")
                msg += f"\nreproduce: dlgate check {shlex.quote(display_path(p, g['bundles'][0]))} --backend {spec}"
            title = f"dlgate {cls} failure: {g.get('backend')} {g.get('verdict')}" + (f" in {where}" if where else "")
            lines[kind].append(command(kind, msg, title=title))
    result = []
    for kind, found in lines.items():
        result += found[:MAX_ANNOTATIONS]
        if len(found) > MAX_ANNOTATIONS:
            result.append(command(kind, f"{len(found) - MAX_ANNOTATIONS} more {kind}s: see the job summary",
                                  title="dlgate: more failures"))
    return result
