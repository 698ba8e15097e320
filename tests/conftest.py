"""Suite-wide hooks: which tests share a worker under xdist, and in which order they start."""
from __future__ import annotations

import pytest

from tests import durations
from tests import golden

#: The scopes of a fixture made once for many tests.
SHARED_SCOPES = ("class", "module", "package", "session")


def shared_group(item) -> str | None:
    """The ``xdist_group`` that keeps the tests sharing one of the suite's own fixtures of a
    wider scope than a test (a finished campaign, a generated batch, a started pool) on one
    xdist worker; None for a test that uses none. xdist hands out ungrouped tests one at a
    time to whichever worker is free, so the tests of one module fixture otherwise land on
    both workers and each worker builds it (a campaign of a minute, twice). The group is
    named after the test's file for a module-, class- or package-scoped fixture, "session"
    for a session-scoped one of the suite. Fixtures of pytest and its plugins
    (``tmp_path_factory``) are cheap and per worker anyway: not counted."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    scopes = set()
    for name in item.fixturenames:
        defs = info.name2fixturedefs.get(name)
        if not defs:
            continue
        fd = defs[-1]  # the definition that applies to this test
        if fd.scope in SHARED_SCOPES and fd.baseid.startswith("tests"):
            scopes.add(fd.scope)
    if not scopes:
        return None
    if "session" in scopes:
        return "session"
    return "shared-" + item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")


def group_names(item) -> list:
    """The names of ``item``'s ``xdist_group`` marks, as xdist reads them."""
    return sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                   for m in item.iter_markers("xdist_group")})


def apply_group(item) -> None:
    """Give ``item`` the node id suffix ``@group`` by which xdist's loadgroup scheduler
    keeps a group on one worker. xdist adds it itself by rewriting a private attribute
    that pytest 9 no longer reads (its node ids became structured), so under pytest 9 no
    group was kept together: every ``xdist_group`` mark of the suite was ignored. Where
    xdist's own suffix took, or pytest keeps its node ids otherwise, nothing is done (a
    group not kept together costs wall time, never a result)."""
    names = group_names(item)
    if not names or "@" in item.nodeid.rsplit("]", 1)[-1]:
        return
    try:
        from _pytest.nodeid import coerce_node_id  # local: pytest 9's node ids; absent before
    except ImportError:
        return
    if hasattr(item, "_id"):
        item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(names)}")


def pytest_configure(config):
    """xdist's loadgroup hands out its work units largest group first, by number of tests;
    keep the order :func:`pytest_collection_modifyitems` makes instead (the slowest files
    first), which places each group where its file's first test stands: a group of many
    quick tests is no reason to start before a long campaign."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Tests that share a fixture of the suite made once per module or session run on one
    worker (:func:`shared_group`; a test's own ``xdist_group`` mark wins, :func:`apply_group`);
    then, under xdist, the slowest files first (``tests/durations.py``); every worker sorts its
    identical collection the same way, as xdist requires."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            group = shared_group(item)
            if group is not None:
                item.add_marker(pytest.mark.xdist_group(group))
    if not hasattr(config, "workerinput"):
        return
    if config.getvalue("dist") == "loadgroup" or getattr(config.option, "loadgroup", False):
        for item in items:
            apply_group(item)
    seconds = durations.load()
    if seconds:
        items[:] = [items[i] for i in durations.order([it.nodeid for it in items], seconds)]


@pytest.fixture(scope="session")
def golden_cases() -> list:
    """The golden batch's cases with their digests (``tests/golden.py``'s ``case_digests``),
    computed once for the session: ``test_golden`` sums them into the digests it compares with
    the pin, ``test_search_determinism`` compares the searched cases computed under other CPU
    capabilities with them. The tests that use it share the "session" xdist group."""
    return list(golden.case_digests())
