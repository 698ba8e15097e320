"""Regenerate a change-mapping table from a compiler's source tree.

    python tools/change_tables.py --compiler tvm --source /path/to/tvm.git --ref v0.27.0
    python tools/change_tables.py --compiler inductor --source .venv/lib/python3.11/site-packages

``--source`` is a git directory (bare clones and mirrors work; ``--ref`` picks the
release) or a plain folder. The table is written to ``dlgate/change/tables/<compiler>.json``
unless ``--out`` says otherwise. See docs/change-aware.md.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dlgate.change.builders import Source, SourceError, build, dump  # noqa: E402
from dlgate.change.compilers import NAMES, TABLES  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compiler", required=True, choices=NAMES)
    ap.add_argument("--source", required=True, help="the compiler's git directory, or a folder of its sources")
    ap.add_argument("--ref", help="the release tag or commit (git sources)")
    ap.add_argument("--version", help="the release the table describes (default: the ref)")
    ap.add_argument("--python-source", help="a folder holding the release's installed Python package (TVM: "
                    "site-packages/tvm), read for its Python files when the git history lacks the release commit")
    ap.add_argument("--out", help="where to write the table")
    a = ap.parse_args(argv)
    try:
        src = Source(a.source, a.ref)
        kw = {"python": Source(a.python_source)} if a.python_source else {}
        doc = build(a.compiler, src, **kw)
    except SourceError as e:
        print(f"change_tables: {e}", file=sys.stderr)
        return 2
    if a.version:
        doc["version"] = a.version
    doc.setdefault("version", a.ref or "")
    out = a.out or os.path.join(TABLES, f"{a.compiler}.json")
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(dump(doc))
    os.replace(tmp, out)
    n_files = len(doc.get("files") or {})
    n_pref = len(doc.get("prefixes") or ())
    print(f"{a.compiler} {doc.get('version')}: {n_files} files, {n_pref} prefixes -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
