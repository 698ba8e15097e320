"""The suite's longest-first order (tests/durations.py): a stale or broken table only
changes the order, never what runs; and the tests that share a module fixture run on one
xdist worker (tests/conftest.py), so that it is made once."""
from __future__ import annotations

import json

import pytest

from tests import conftest, durations

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


# -- tests that share a module fixture run on one worker (tests/conftest.py) ------------------------
@pytest.fixture(scope="module")
def made_once():
    """A stand-in for a finished campaign: a fixture of this module made once."""
    return object()


def test_a_user_of_a_module_fixture(made_once):
    assert made_once is not None


@pytest.mark.xdist_group("own-group")
def test_with_a_group_of_its_own(made_once):
    assert made_once is not None


def _item(session, name):
    (item,) = [it for it in session.items if it.nodeid.split("::", 1)[-1].split("@")[0] == name]
    return item


def test_tests_sharing_a_module_fixture_form_one_xdist_group(request, tmp_path):
    from xdist.scheduler import LoadGroupScheduling

    session = request.session
    user, own = _item(session, "test_a_user_of_a_module_fixture"), _item(session, "test_with_a_group_of_its_own")
    me = _item(session, "test_tests_sharing_a_module_fixture_form_one_xdist_group")
    assert conftest.shared_group(user) == "shared-test_durations"
    assert conftest.group_names(user) == ["shared-test_durations"]
    assert conftest.group_names(own) == ["own-group"]  # a test's own mark wins
    assert conftest.shared_group(me) is None and conftest.group_names(me) == []  # tmp_path is pytest's
    if hasattr(request.config, "workerinput") and request.config.option.loadgroup:
        # the scheduler (the controller's) reads the group from the node id the worker reports
        split = LoadGroupScheduling.__new__(LoadGroupScheduling)._split_scope
        assert split(user.nodeid) == "shared-test_durations" and split(own.nodeid) == "own-group"
        assert split(me.nodeid) == me.nodeid  # a test of its own


def test_a_group_suffix_is_given_once_and_only_to_grouped_tests(request):
    item = _item(request.session, "test_a_user_of_a_module_fixture")
    before = item.nodeid
    conftest.apply_group(item)  # given already under xdist, or given now
    assert item.nodeid.endswith("@shared-test_durations") and item.nodeid.count("@") == 1
    conftest.apply_group(item)
    assert item.nodeid.count("@") == 1
    if "@" in before:
        assert item.nodeid == before
    plain = _item(request.session, "test_a_group_suffix_is_given_once_and_only_to_grouped_tests")
    was = plain.nodeid
    conftest.apply_group(plain)
    assert plain.nodeid == was
