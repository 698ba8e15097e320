"""dlgate.markdown: untrusted text shows literally wherever dlgate writes Markdown, checked by rendering
with a real CommonMark parser (markdown-it-py, with GitHub's tables), in the module and at each call
site (summary.md, GitHub issue bodies and comments, the Action's job summary, Mermaid labels)."""
from __future__ import annotations

import html
import os
import re

import pytest
from markdown_it import MarkdownIt

from dlgate import markdown as md
from dlgate.gate import decide as D
from dlgate.gate.report import summary
from dlgate.github import issues

WJ = md.WORD_JOINER
HOSTILE = [
    "a | b || c\\|d",
    "`one` ``two`` ```three``` ````four````",
    "`",
    "ends with a backtick `",
    "line one\nline two\r\n\n- item\n> quote",
    "<script>alert(1)</script> <img src=x onerror=alert(1)> <!-- hidden -->",
    "[click](https://evil.example) ![img](https://evil.example/x.png) <https://evil.example>",
    "@octocat and @org/team, see #1 and acme/tvm#12",
    "# not a heading",
    "- not a list",
    "> not a quote",
    "1. not an ordered list",
    "+ plus",
    "=== setext",
    "**bold** _it_ __init__ ~~strike~~ $x^2$ &amp; &lt;b&gt; \\ trailing backslash\\",
    "    four spaces of indent",
]
PARSER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
#: The HTML dlgate itself writes: hidden markers, collapsible sections and the cells' line breaks.
OWN_HTML = ("<!-- dlgate-", "<details>", "</details>", "<br>", "<code>", "</code>", "</span>", '<span title="')
#: A hover title dlgate writes: one double-quoted attribute with nothing in it that ends it early.
SPAN = re.compile(r'<span title="[^"<>`|\\]*">')


def one_line(s: str) -> str:
    return " ".join(s.split())


def walk(tokens):
    for t in tokens:
        yield t
        yield from walk(t.children or [])


def plain(inline) -> str:
    """What an inline token shows as text: its text and code, line breaks as spaces, word joiners removed."""
    shown = {"text": None, "code_inline": None, "softbreak": " ", "hardbreak": " "}
    return "".join(c.content if shown.get(c.type, "") is None else shown.get(c.type, "")
                   for c in inline.children).replace(WJ, "")


def cut(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n - 1] + "…"


def injected(tokens, links=()) -> list:
    """Elements that escaped text would never make: links (but ``links``), images, emphasis other than
    dlgate's bold, block quotes, indented code, rules, HTML that is not dlgate's own."""
    bad = []
    for t in walk(tokens):
        if t.type in ("image", "em_open", "s_open", "blockquote_open", "code_block", "hr", "ordered_list_open"):
            bad.append(t.type)
        if t.type == "link_open" and t.attrs.get("href") not in links:
            bad.append(f"link to {t.attrs.get('href')}")
        if t.type in ("html_inline", "html_block") and not t.content.strip().startswith(OWN_HTML):
            bad.append(f"{t.type}: {t.content!r}")
        if t.type == "html_inline" and t.content.startswith("<span") and not SPAN.fullmatch(t.content):
            bad.append(f"hover title not escaped: {t.content!r}")
    return bad


def headings(tokens) -> list:
    return [plain(tokens[i + 1]) for i, t in enumerate(tokens) if t.type == "heading_open"]


def cells(tokens) -> list:
    """The rows of every table, as lists of cell inline tokens."""
    rows, row = [], None
    for i, t in enumerate(tokens):
        if t.type == "tr_open":
            row = []
        elif t.type in ("th_open", "td_open"):
            row.append(tokens[i + 1])
        elif t.type == "tr_close":
            rows.append(row)
    return rows


# The module, function by function

@pytest.mark.parametrize("s", HOSTILE)
def test_text_renders_literally_on_one_line(s):
    tokens = PARSER.parse(md.text(s))
    assert [t.type for t in tokens] == ["paragraph_open", "inline", "paragraph_close"]
    assert plain(tokens[1]) == one_line(s) and not injected(tokens)
    assert "\n" not in md.text(s)


@pytest.mark.parametrize("s", HOSTILE)
def test_text_and_code_stay_in_one_table_cell(s):
    lines = md.table(["text", "code", "n"], [[md.text(s), md.code(s, table=True), "1"]])
    rows = cells(PARSER.parse("\n".join(lines)))
    assert len(rows) == 2 and all(len(r) == 3 for r in rows)
    text, code, n = rows[1]
    assert plain(text) == one_line(s) and n.content == "1"
    assert [c.type for c in code.children] == ["code_inline"] and code.children[0].content == one_line(s)


@pytest.mark.parametrize("s", HOSTILE)
def test_code_span_holds_any_backtick_run(s):
    tokens = PARSER.parse(f"see {md.code(s)} here")
    kids = tokens[1].children
    assert [c.type for c in kids] == ["text", "code_inline", "text"] and kids[1].content == one_line(s)


def test_code_picks_a_fence_longer_than_any_run():
    assert md.code("a``b") == "```a``b```"
    assert md.code("`x`") == "`` `x` ``"  # padded: a backtick at either end would join the fence
    assert md.code("") == "" and md.code("a|b", table=True) == "`a\\|b`"


@pytest.mark.parametrize("s", HOSTILE + ["```\nbreak out\n```\n<script>x</script>", "x\n````\n`````"])
def test_fence_keeps_every_line_verbatim(s):
    tokens = PARSER.parse(md.fence(s, "text") + "\n\nafter")
    assert tokens[0].type == "fence" and tokens[0].info == "text"
    assert tokens[0].content == s.rstrip("\n").replace("\r\n", "\n") + "\n"  # CommonMark reads CRLF as LF
    assert [t.type for t in tokens[1:]] == ["paragraph_open", "inline", "paragraph_close"]


def test_fence_is_longer_than_any_backtick_run_and_its_info_is_clean():
    assert md.fence("a ````` b").startswith("``````\n")
    assert md.fence("plain", "py`thon x").startswith("```pythonx\n") and md.fence("").count("```") == 2


def test_mentions_and_references_are_neutralised():
    out = md.text("@octocat fixed #12 in acme/tvm#3, mail a@b.c")
    assert "@octocat" not in out and f"@{WJ}octocat" in out and f"#{WJ}12" in out and f"#{WJ}3" in out
    assert out.replace(WJ, "").replace("\\", "") == "@octocat fixed #12 in acme/tvm#3, mail a@b.c"


def test_leading_block_markers_and_limits():
    assert md.text("# h") == "\\# h" and md.text("- a") == "\\- a" and md.text("12. a") == "12\\. a"
    assert md.text("a - b. 3) c") == "a - b. 3) c"  # markers only matter at the start,
    assert md.text("1.0") == "1.0" and md.text("-O2") == "-O2" and md.text("3)") == "3\\)"  # before a space
    assert md.cell("x" * 200, 10) == "x" * 9 + "…" and md.text(None) == "None"


def test_table_rows_always_have_the_columns():
    lines = md.table(["a", "b"], [["1"], ["2", "3", "4"], ["x\ny", "z"]], align="r")
    assert lines[1] == "|--:|---|" and lines[2] == "| 1 |  |" and lines[3] == "| 2 | 3 |" and lines[4] == "| x y | z |"


def test_url_is_an_autolink_only_when_it_is_one():
    assert md.url("https://github.com/acme/tvm/actions/runs/1") == "<https://github.com/acme/tvm/actions/runs/1>"
    assert md.url("javascript:alert(1)") == "javascript:alert(1)"
    assert md.url("https://x.example/<b>") == "https://x.example/\\<b\\>"


def test_mermaid_labels_cannot_close_their_quotes():
    out = md.mermaid('a"]; click n1 "http://evil" <b>#x`|\nz')
    assert '"' not in out and "<" not in out and "`" not in out and "|" not in out and "\n" not in out
    assert out.startswith("a#34;]") and "#35;x" in out


# Call sites: hostile compiler text in a finding

COMPILER = "E: `x`` | y |\n# Boom\n<img src=x> [l](http://e) @dev #7 **b**"


def decision_with(text: str) -> D.Decision:
    group = {"cluster": "cl1", "fingerprint": "fp1", "typed": f"Conv({text})", "backend": "tvm[cpu]",
             "verdict": "compile_error", "cases": ["c0", "c1"], "repro": "repros/fp1", "bundles": [],
             "detail": text, "blame": "Conv"}
    return D.Decision(root="0123456789abcdef", campaign="pr`|x", complete=True, backends=["tvm[cpu]"], cases=2,
                      counts={"tvm[cpu]": {"compile_error": 2}}, groups={D.NEW: [group]},
                      clusters=[{"cluster": "cl1", "text": text}],
                      unavailable={"tvm[cuda]": f"no CUDA | {text}"})


def test_summary_md_shows_hostile_compiler_text_literally(monkeypatch):
    monkeypatch.delenv("GITHUB_SERVER_URL", raising=False)
    tokens = PARSER.parse(summary(decision_with(COMPILER), "new"))
    assert not injected(tokens)
    heads = headings(tokens)
    assert len(heads) == 2 and heads[0].startswith("dlgate pr`|x on 0123456789ab: ") and "New failures" in heads[1]
    items = [plain(tokens[i + 2]) for i, t in enumerate(tokens) if t.type == "list_item_open"]
    assert items == [cut(f"tvm[cuda]: {cut('no CUDA | ' + one_line(COMPILER), 240)}", 10**6)]
    rows = cells(tokens)
    findings = [r for r in rows if len(r) == 6]
    assert len(findings) == 2 and plain(findings[0][0]) == "id"
    row = findings[1]
    assert plain(row[0]) == "cl1" and plain(row[4]) == cut(one_line(COMPILER), 160)
    assert plain(row[1]) == f"Conv({one_line(COMPILER)})"
    details = [r for r in rows if len(r) == 4]
    assert plain(details[1][2]) == "fp1 " + cut(f"Conv({one_line(COMPILER)})", 120)
    assert [[plain(c) for c in r] for r in rows if r not in findings and r not in details] == \
        [["backend", "compile_error"], ["tvm[cpu]", "2"]]


def test_a_long_operator_label_is_cut_and_whole_on_hover(monkeypatch):
    """The title attribute holds hostile text whole, escaped: nothing ends it or the cell."""
    monkeypatch.delenv("GITHUB_SERVER_URL", raising=False)
    text = COMPILER + ' " onmouseover="alert(1)" ' + COMPILER
    tokens = PARSER.parse(summary(decision_with(text), "new"))
    assert not injected(tokens)
    row = [r for r in cells(tokens) if len(r) == 6][1]
    assert plain(row[1]) == cut(f"Conv({one_line(text)})", 90)
    title = next(t.content for t in walk(tokens) if t.type == "html_inline" and "Conv(" in t.content)
    assert html.unescape(title[len('<span title="'):-2]) == f"Conv({one_line(text)})"


def write_repro(folder, detail: str) -> dict:
    os.makedirs(folder)
    for name, data in {"graph.mmd": "flowchart TD\n  n0[\"Conv\"]\n", "graph.txt": "graph g {\n```\n}\n",
                       "repro.py": f'"""{detail}"""\nprint("```")\n', "model.onnx": "m", "inputs.npz": "i",
                       "reference.npz": "r"}.items():
        with open(os.path.join(folder, name), "w") as f:
            f.write(data)
    return {"verdict": "compile_error", "backend": "tvm[cpu]", "detail": detail, "pattern": "Conv",
            "typed": f"Conv({one_line(detail)[:40]})", "nodes": 1, "original_nodes": 5, "opset": 18,
            "versions": {"name": "tvm", "version": "0.27 | `x`"}, "environment": {"os": "linux @dev"}}


def test_issue_body_and_comment_show_hostile_compiler_text_literally(tmp_path):
    repro = str(tmp_path / "fp1")
    doc = write_repro(repro, COMPILER)
    finding = issues.Finding("cl1", repro, doc, [("fp1", f"Conv | {COMPILER}", repro)], 2, ["new"], ["Conv"])
    run = {"commit": "abc", "campaign": "pr", "key": "k", "url": "https://github.com/acme/tvm/actions/runs/9"}
    tokens = PARSER.parse(issues.body(finding, run))
    assert not injected(tokens, links=(run["url"],))
    assert headings(tokens) == ["What goes wrong", "The model", "Reproduce"]
    assert not [t for t in tokens if t.type == "list_item_open"]
    fences = [t for t in tokens if t.type == "fence"]
    assert [f.info for f in fences] == ["text", "mermaid", "text", "text", "python"]
    assert fences[0].content == COMPILER + "\n" and fences[2].content == "graph g {\n```\n}\n"
    assert fences[4].content.startswith(f'"""{COMPILER}"""')
    rows = cells(tokens)
    assert all(len(r) == 2 for r in rows)
    table = {plain(k): v for k, v in rows[1:]}
    assert plain(table["fingerprints"]) == f"fp1 Conv | {one_line(COMPILER)}"
    assert plain(table["backend"]) == "tvm[cpu] (name tvm, version 0.27 | `x`)"
    assert plain(table["environment"]) == "os linux @dev" and plain(table["run"]) == run["url"]
    note = PARSER.parse(issues.comment(finding, run))
    assert not injected(note, links=(run["url"],))
    shown = " ".join(plain(t) for t in note if t.type == "inline")
    assert f"fp1 (Conv | {one_line(COMPILER)})" in shown


def test_action_job_summary_table_escapes_build_values():
    from dlgate import install
    import entrypoint.compiler

    row = install.Row("evil|dist", "1.0`<b>`", "mod", "/site/x|y\n# z", "@me", ok=False)
    lines = entrypoint.compiler.build_table([("build under test", row)], [])
    rows = cells(PARSER.parse(lines))
    assert len(rows) == 2 and all(len(r) == 7 for r in rows)
    assert [plain(c) for c in rows[1]] == ["build under test", "evil|dist", "1.0`<b>`", "mod", "@me",
                                           "/site/x|y # z", "not the installed build"]


@pytest.mark.parametrize("path", ["ci/base`line|x.json", "a | b/``c``/[x](https://evil.example)/*b*.json",
                                  "`edge` |", "#12 @octocat/<b>.json"])
@pytest.mark.parametrize("mode", ["baseline", "base"])
def test_a_missing_baseline_path_shows_literally_in_summary_md(monkeypatch, path, mode):
    from dlgate.gate.report import missing_baseline_text

    monkeypatch.delenv("GITHUB_SERVER_URL", raising=False)
    d = D.Decision(root="0123456789abcdef", campaign="pr", complete=True, backends=["tvm[cpu]"], mode=mode,
                   baseline_path=path, baseline_missing=True)
    tokens = PARSER.parse(summary(d, "new"))
    assert not injected(tokens)
    shown = [plain(t) for t in tokens if t.type == "inline" and "no baseline at" in plain(t)]
    assert len(shown) == 1
    # the log line's words, with the path exactly as it is
    assert shown[0] == "⚠️ " + missing_baseline_text(d).replace("`dlgate baseline update`", "dlgate baseline update")
    spans = [c.content for t in tokens if t.type == "inline" for c in t.children if c.type == "code_inline"]
    assert path in spans
    assert missing_baseline_text(d).startswith(f"no baseline at {path}: ")  # the log keeps the raw path
