"""The coverage table of a change-aware run, as the summary opens with it: each target,
where it came from, how many models were aimed at it, exercised it and were tested on
it, and for a rewrite how many times each backend applied it; then the gaps with why,
and the changed files that mapped to no target."""
from __future__ import annotations

from dlgate import markdown as md

_SKIPPED = {"tests": "tests only", "docs": "docs only", "build": "build files", "deleted": "deleted",
            "unmapped": "no target"}


def _target(row: dict) -> str:
    label = row["target"].split(":", 1)[1]
    return f"{row['kind']} {md.code(label, table=True)}"


def lines(ch: dict) -> list:
    """Markdown lines; empty for a run with no change."""
    if not ch:
        return []
    rows, files = ch.get("rows") or [], ch.get("files") or []
    tab = ch.get("table") or {}
    table_of = f"{ch.get('compiler')} table {tab['version']}" if tab.get("version") else f"{ch.get('compiler')} table"
    out = ["### 🎯 What this change touches", ""]
    if not rows:
        why = sorted({_SKIPPED.get(f.get("skipped"), f.get("skipped") or "no target") for f in files})
        out += [f"The change ({md.text(ch.get('source', ''), 160)}) touches no target the {table_of} knows "
                f"({', '.join(why) or 'no changed file'}): this batch is the ordinary, random one.", ""]
    else:
        reached = sum(1 for r in rows if not r.get("gap"))
        share = ch.get("target_share")
        out += [f"{len(rows)} target(s) from {len(files)} changed file(s) ({md.text(ch.get('source', ''), 160)}; "
                f"{table_of}); {reached} tested, {len(rows) - reached} gap(s)"
                + (f"; {share:.0%} of the batch was aimed at them." if isinstance(share, (int, float)) else "."), ""]
        cells = []
        for r in rows:
            applied = r.get("applied")
            app = "" if applied is None else (", ".join(f"{md.cell(b, 40)}: {n}" for b, n in sorted(applied.items()))
                                              or "not recorded")
            status = "⚠️ gap" if r.get("gap") else "✅"
            cells.append([status, _target(r), md.cell(r.get("why", ""), 90), str(r["aimed"]), str(r["models"]),
                          str(r["tested"]), app])
        out += md.table(["", "target", "changed code", "aimed", "models", "tested", "rewrite applied"], cells)
        out.append("")
        gaps = [r for r in rows if r.get("gap")]
        if gaps:
            out += ["Not tested by this batch:", ""]
            out += [f"- {_target(r)}: {md.cell(r['gap'], 200)}" for r in gaps]
            out.append("")
    rest = [f for f in files if f.get("skipped")]
    if rest and rows:
        out += [f"Changed files with no target ({len(rest)}):", ""]
        for f in rest[:15]:
            note = f" ({md.cell(f['note'], 120)})" if f.get("note") else ""
            out.append(f"- {md.code(f['path'], limit=120)}: {_SKIPPED.get(f['skipped'], f['skipped'])}{note}")
        if len(rest) > 15:
            out.append(f"- … {len(rest) - 15} more (run.json, `change.files`)")
        out.append("")
    return out
