"""The suite's longest-first order (tests/durations.py): a stale or broken table only
changes the order, never what runs."""
from __future__ import annotations

import json

from tests import durations

IDS = ["tests/test_a.py::x", "tests/test_b.py::y", "tests/test_a.py::z", "tests/test_new.py::w",
       "tests/test_c.py::v[1]", "tests/test_c.py::v[2]"]


def test_longest_files_first_each_in_its_own_order_unknown_files_first():
    seconds = {"tests/test_a.py": 5.0, "tests/test_b.py": 1.0, "tests/test_c.py": 9.0, "tests/test_gone.py": 99.0}
    got = [IDS[i] for i in durations.order(IDS, seconds)]
    assert got == ["tests/test_new.py::w", "tests/test_c.py::v[1]", "tests/test_c.py::v[2]",
                   "tests/test_a.py::x", "tests/test_a.py::z", "tests/test_b.py::y"]
    assert sorted(durations.order(IDS, seconds)) == list(range(len(IDS)))  # every test still runs, once


def test_a_missing_or_broken_table_orders_nothing(tmp_path):
    assert durations.load(str(tmp_path / "none.json")) == {}
    for text in ("{", "[]", '{"files": 3}', '{"about": "x"}'):
        (tmp_path / "t.json").write_text(text)
        assert durations.load(str(tmp_path / "t.json")) == {}, text
    assert [IDS[i] for i in durations.order(IDS, {})] == IDS


def test_the_table_is_made_from_junit_and_names_test_files(tmp_path, capsys, monkeypatch):
    (tmp_path / "j.xml").write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_a" name="x" time="1.5"/>'
        '<testcase classname="tests.test_a" name="z" time="2.0"/>'
        '<testcase classname="tests.test_b.TestThing" name="y" time="0.25"/>'
        '</testsuite></testsuites>')
    monkeypatch.setattr(durations, "TABLE", str(tmp_path / "durations.json"))
    assert durations.main([str(tmp_path / "j.xml")]) == 0
    assert json.loads((tmp_path / "durations.json").read_text())["files"] == {"tests/test_a.py": 3.5,
                                                                              "tests/test_b.py": 0.2}
    assert durations.main([str(tmp_path / "nope.xml")]) == 2
    assert "usage:" in capsys.readouterr().err


def test_the_checked_in_table_names_test_files_that_exist():
    import os

    seconds = durations.load()
    assert seconds, "tests/data/durations.json is missing or unreadable"
    root = os.path.dirname(os.path.dirname(os.path.abspath(durations.__file__)))
    present = [f for f in seconds if os.path.isfile(os.path.join(root, f))]
    assert len(present) >= len(seconds) * 0.8  # mostly current: refresh with python -m tests.durations
