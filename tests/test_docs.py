"""The documentation holds together: every relative link in README.md and docs/*.md leads to a
file that exists, and a link to a heading (``page.md#anchor``, ``#anchor``) to a heading GitHub
renders with that anchor; every docs page is reachable from the README; the quick start's
commands say what CI and the embedded default do."""
from __future__ import annotations

import glob
import os
import re
import urllib.parse

import pytest

from dlgate.gate import config as C

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
HTML_ID = re.compile(r"<a\s[^>]*(?:name|id)=\"([^\"]+)\"", re.I)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//")


def _prose_lines(text: str):
    """(line number, line) of every line outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
                continue
            if m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
                continue
        if fence is None:
            yield n, line


def _rendered(heading: str) -> str:
    """A heading's text as GitHub renders it: code spans, links and emphasis reduced to text."""
    text = CODE_SPAN.sub(lambda m: m.group(2).strip(), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    return text.replace("*", "")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading (github-slugger): lower case, every character but letters,
    digits, spaces, hyphens and underscores dropped, spaces made hyphens."""
    text = _rendered(heading).strip().lower()
    return "".join(ch for ch in text if ch.isalnum() or ch in " -_").replace(" ", "-")


def anchors(path: str) -> set:
    """Every anchor a Markdown file offers: its headings' slugs (a repeated one numbered -1, -2,
    as GitHub does) and explicit HTML anchors."""
    seen: dict = {}
    out = set()
    for _, line in _prose_lines(open(path, encoding="utf-8").read()):
        m = ATX.match(line)
        if m:
            s = slug(m.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            out.add(s if k == 0 else f"{s}-{k}")
        out.update(HTML_ID.findall(line))
    return out


def links(path: str):
    """(line number, target) of every link in a Markdown file's prose (not in code)."""
    for n, line in _prose_lines(open(path, encoding="utf-8").read()):
        m = REF_DEF.match(line)
        if m:
            yield n, m.group(1)
            continue
        for m in INLINE_LINK.finditer(CODE_SPAN.sub("", line)):
            yield n, m.group(1)


def dead_links(path: str, root: str) -> list:
    """The links of ``path`` that lead nowhere: a relative file that does not exist, or an anchor
    that no heading of the Markdown file it names has. Absolute URLs are not checked."""
    dead = []
    for n, target in links(path):
        if not target or SCHEME.match(target):
            continue
        file, _, anchor = target.partition("#")
        file = urllib.parse.unquote(file)
        if not file:
            dest = path
        elif file.startswith("/"):
            dest = os.path.join(root, file.lstrip("/"))
        else:
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file))
        where = f"{os.path.relpath(path, root)}:{n}: {target}"
        if not os.path.exists(dest):
            dead.append(f"{where} (no such file)")
        elif anchor and dest.endswith(".md") and urllib.parse.unquote(anchor) not in anchors(dest):
            dead.append(f"{where} (no heading with that anchor in {os.path.relpath(dest, root)})")
    return dead


def doc_files() -> list:
    return [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))


def test_every_relative_link_in_the_readme_and_docs_resolves():
    dead = [d for f in doc_files() for d in dead_links(f, REPO)]
    assert not dead, "dead links:\n" + "\n".join(dead)


def test_every_docs_page_is_linked_from_the_readme():
    linked = {os.path.normpath(os.path.join(REPO, t.partition("#")[0]))
              for _, t in links(os.path.join(REPO, "README.md")) if not SCHEME.match(t)}
    missing = [os.path.relpath(f, REPO) for f in doc_files()[1:] if f not in linked]
    assert not missing, f"docs pages the README's documentation index does not link: {missing}"


def test_the_checker_reports_dead_files_and_anchors_and_nothing_else(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "b.md").write_text("# The gate: `dlgate run`\n\n## Notes\n\n## Notes\n")
    (tmp_path / "a.md").write_text(
        "# Title\n\n"
        "[ok](docs/b.md) [ok](docs/b.md#the-gate-dlgate-run) [ok](docs/b.md#notes-1) [ok](#title)\n"
        "[ok](https://example.com/x.md#nowhere) [ok](docs/) [ok](/docs/b.md#notes)\n"
        "`[in code](missing.md)`\n"
        "```\n[in a fence](missing.md)\n```\n"
        "[gone](docs/c.md) [bad anchor](docs/b.md#the-gate) [own](#nowhere)\n"
        "[ref]: docs/missing.md\n")
    dead = dead_links(str(tmp_path / "a.md"), str(tmp_path))
    assert [d.split(": ", 1)[1] for d in dead] == [
        "docs/c.md (no such file)",
        "docs/b.md#the-gate (no heading with that anchor in docs/b.md)",
        "#nowhere (no heading with that anchor in a.md)",
        "docs/missing.md (no such file)",
    ]


@pytest.mark.parametrize("heading, anchor", [
    ("The gate: `dlgate run`", "the-gate-dlgate-run"),
    ("Adding dlgate to TVM's or onnxruntime's CI, step by step",
     "adding-dlgate-to-tvms-or-onnxruntimes-ci-step-by-step"),
    ("Backends, workers and the oracle", "backends-workers-and-the-oracle"),
    ("What `dlgate gen` writes", "what-dlgate-gen-writes"),
    ("The HTML report: `dlgate report`", "the-html-report-dlgate-report"),
    ("Support probing and [batch](x.md) statistics", "support-probing-and-batch-statistics"),
    ("restrict_to_support **and** `max_opset`", "restrict_to_support-and-max_opset"),
])
def test_headings_get_githubs_anchors(heading, anchor):
    assert slug(heading) == anchor


def _quick_start() -> str:
    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    m = re.search(r"^## Quick start\n(.*?)^## ", readme, re.S | re.M)
    assert m, "the README has a Quick start section"
    return m.group(1)


def test_the_quick_start_comes_first_and_runs_what_ci_runs():
    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    sections = re.findall(r"^## (.+)$", readme, re.M)
    assert sections[:2] == ["Quick start", "Add dlgate to your compiler's CI"]
    quick = _quick_start()
    assert "bash .ci/setup && .venv/bin/dlgate run --seed demo --out out/demo --fresh\n" in quick
    assert "bash .ci/setup && .venv/bin/python -m pytest -q -n 2\n" in quick
    ci_run = open(os.path.join(REPO, ".ci", "run"), encoding="utf-8").read().split("\n")
    assert "bash .ci/setup" in ci_run and ".venv/bin/python -m pytest -q -n 2" in ci_run


def test_the_quick_start_describes_the_embedded_default():
    quick = _quick_start()
    default = C.embedded_default()
    assert f"({default.models} models)" in quick and default.backends == ["tvm"]
    assert "TVM against the PyTorch reference on CPU" in quick.replace("\n# ", " ")
    assert default.reference == "torch"
