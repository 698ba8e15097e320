"""docs/action.md's Inputs and Outputs tables are action.yml's inputs and outputs, rendered by
dlgate.actiondoc and escaped through dlgate.markdown, so the page cannot drift."""
from __future__ import annotations

import os

import pytest
import yaml

from dlgate import actiondoc as A

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(REPO, "docs", "action.md")


def _cells(line: str) -> list:
    """A table row's cells, split as GitHub does: at every | not escaped by a backslash."""
    cells, cur, i = [], "", 0
    body = line.strip()[1:-1]
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            cur += body[i:i + 2]
            i += 2
            continue
        if body[i] == "|":
            cells.append(cur.strip())
            cur = ""
        else:
            cur += body[i]
        i += 1
    return cells + [cur.strip()]


def test_the_action_page_holds_exactly_the_tables_of_action_yml():
    text = open(PAGE, encoding="utf-8").read()
    assert A.stale(text) == [], "regenerate docs/action.md's tables with `python -m dlgate.actiondoc docs/action.md`"
    action = A.load()
    for name, body in A.blocks().items():
        assert text.count(f"<!-- BEGIN generated: {name} -->\n{body}<!-- END generated: {name} -->") == 1
    inputs, outputs = A.blocks()["action-inputs"].splitlines(), A.blocks()["action-outputs"].splitlines()
    # one row per declared input and output, in action.yml's order, with its default
    assert [_cells(r)[0] for r in inputs[2:]] == [f"`{n}`" for n in action["inputs"]]
    assert [_cells(r)[0] for r in outputs[2:]] == [f"`{n}`" for n in action["outputs"]]
    defaults = {_cells(r)[0].strip("`"): _cells(r)[1] for r in inputs[2:]}
    assert defaults["output-dir"] == "`dlgate-out`" and defaults["github-token"] == "`${{ github.token }}`"
    assert defaults["campaign"] == ""
    assert all(len(_cells(r)) == 3 for r in inputs) and all(len(_cells(r)) == 2 for r in outputs)


def test_a_drifted_or_missing_block_is_stale_and_update_rewrites_it():
    text = open(PAGE, encoding="utf-8").read()
    drifted = text.replace("| `budget` |", "| `budget-seconds` |", 1)
    assert drifted != text and A.stale(drifted) == ["action-inputs"]
    assert A.update(drifted) == text
    with pytest.raises(ValueError, match="action-outputs"):
        A.update(text.replace("<!-- BEGIN generated: action-outputs -->", ""))


def test_descriptions_are_escaped_and_their_code_spans_stay_code():
    hostile = {"inputs": {"x": {"description": "a | b <img src=x> [link](http://e) *em* `co|de` $PATH\nnext `y`.",
                                "default": "a|b", "required": False}},
               "outputs": {"o": {"description": "- not a list | @someone #12"}}}
    rows = A.inputs_table(hostile).splitlines()
    assert rows[:2] == ["| input | default | meaning |", "|---|---|---|"]
    cells = _cells(rows[2])
    assert cells[:2] == ["`x`", "`a\\|b`"]
    assert cells[2] == ("a \\| b \\<img src=x\\> \\[link\\](http://e) \\*em\\* `co\\|de` \\$PATH next `y`.")
    out = _cells(A.outputs_table(hostile).splitlines()[2])
    assert out == ["`o`", "\\- not a list \\| @\u2060someone \\#\u206012"]


def test_the_command_line_rewrites_the_page_and_says_so(tmp_path, capsys):
    page = tmp_path / "action.md"
    page.write_text("# x\n\n<!-- BEGIN generated: action-inputs -->\nold\n<!-- END generated: action-inputs -->\n"
                    "<!-- BEGIN generated: action-outputs -->\n<!-- END generated: action-outputs -->\n")
    assert A.main([str(page)]) == 0 and "updated" in capsys.readouterr().out
    assert A.stale(page.read_text()) == []
    assert A.main([str(page)]) == 0 and "up to date" in capsys.readouterr().out
    (tmp_path / "none.md").write_text("# nothing generated here\n")
    assert A.main([str(tmp_path / "none.md")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_tables_come_from_the_action_yml_at_the_repository_root():
    assert os.path.samefile(A.ACTION_YML, os.path.join(REPO, "action.yml"))
    assert A.load() == yaml.safe_load(open(os.path.join(REPO, "action.yml"), encoding="utf-8"))
