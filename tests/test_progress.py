"""Progress of ``dlgate run`` (dlgate.gate.progress): an ETA only from an observed rate and
within the budget's end, a heartbeat that names the step in progress when a step is slow
and stays quiet when steps are fast, and the run's live section of the job summary, which
the final summary replaces without touching what other writers put in the file."""
from __future__ import annotations

import io
import os
import re
import threading
import time

import pytest

from dlgate.cli import main
from dlgate.gate import progress as P
from tests.test_gate import write_config


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def quiet(total, clock, **kw) -> P.Progress:
    """A Progress that prints no periodic line (a huge interval) and writes no job summary,
    to read its ETA under a fake clock."""
    kw.setdefault("step_summary", None)
    return P.Progress(total, "t", enabled=False, every_s=1e6, stream=io.StringIO(), clock=clock,
                      activity=P.Activity(clock), **kw)


# -- the ETA ---------------------------------------------------------------------------------------
def test_eta_comes_from_the_rate_after_the_first_case_and_only_once_there_is_one():
    clock = FakeClock()
    p = quiet(100, clock)
    try:
        assert p.eta() == "ETA after 6 cases"
        clock.now = 600.0  # the first case: ten minutes of worker start-up and cold caches
        p.advance(False)
        assert p.eta() == "ETA after 6 cases"  # what the old line turned into "~59400s left"
        for _ in range(5):  # five cases of 2 s: a rate, but from 10 s only
            clock.now += 2.0
            p.advance(False)
        assert p.eta() == "ETA after 30 s of cases"
        for _ in range(10):  # then 6 s each: the mean of the fifteen after the first is 14/3 s
            clock.now += 6.0
            p.advance(True)
        assert p.rate() == pytest.approx((5 * 2 + 10 * 6) / 15)
        assert p.eta() == f"~{P.duration(84 * 70 / 15)} left" == "~7 min left"
        assert p.status(clock.now).startswith("16/100 cases (16%), 10 with failures, 11 min elapsed, ~7 min left")
        clock.now += 4.0  # the case in flight counts down, then holds at the cases after it
        assert p.eta() == f"~{P.duration(83 * 70 / 15 + 70 / 15 - 4)} left"
        clock.now += 60.0
        assert p.eta() == f"~{P.duration(83 * 70 / 15)} left"
    finally:
        p.close()


def test_the_rate_follows_the_recent_cases():
    clock = FakeClock()
    p = quiet(1000, clock)
    try:
        p.advance(False)
        for _ in range(P.WINDOW):
            clock.now += 1.0
            p.advance(False)
        for _ in range(P.WINDOW):  # the compiler's cases got slower (bigger models, reductions)
            clock.now += 10.0
            p.advance(False)
        assert p.rate() == 10.0
    finally:
        p.close()


def test_eta_respects_the_budgets_end():
    clock = FakeClock()
    p = quiet(100, clock, budget_s=100.0)
    try:
        assert p.eta() == "ETA after 6 cases"  # the budget has not started: no case has
        p.case_started()
        clock.now = 20.0
        p.advance(False)
        assert p.eta() == "ETA after 6 cases; the budget ends in 80 s"
        for _ in range(6):
            p.case_started()
            clock.now += 6.0
            p.advance(False)
        # 93 cases at 6 s would be 558 s; the budget lets cases start for 44 s more, and the
        # last one started finishes
        assert p.eta() == "~50 s left (the budget ends the run)"
        clock.now = 100.0
        assert p.eta() == "the budget is spent: the case in flight is the last"
    finally:
        p.close()
    q = quiet(10, clock, budget_s=1e5)  # a budget longer than the run: the rate decides
    try:
        q.case_started()
        for _ in range(7):
            clock.now += 10.0
            q.advance(False)
        assert q.eta() == "~30 s left"
    finally:
        q.close()


def test_no_eta_for_a_run_too_short_to_have_a_rate():
    clock = FakeClock()
    p = quiet(P.MIN_CASES + 1, clock)
    try:
        clock.now = 50.0
        p.advance(False)
        assert p.eta() == "" and "left" not in p.status(clock.now) and "ETA" not in p.status(clock.now)
    finally:
        p.close()


def test_durations_read_as_a_person_reads_them():
    assert [P.duration(s) for s in (0.4, 42, 89, 90, 600, 5399, 5400, 22352)] == \
        ["0 s", "42 s", "89 s", "2 min", "10 min", "90 min", "1.5 h", "6.2 h"]


@pytest.mark.parametrize("value", ["0", "-3", "x", "nan", "inf"])
def test_heartbeat_interval_from_the_environment_is_checked(value):
    assert P.heartbeat_seconds({}) == P.DEFAULT_HEARTBEAT_S
    assert P.heartbeat_seconds({P.HEARTBEAT_ENV: " 2.5 "}) == 2.5
    with pytest.raises(ValueError, match=f"{P.HEARTBEAT_ENV}: expected a number of seconds > 0, got"):
        P.heartbeat_seconds({P.HEARTBEAT_ENV: value})


# -- the heartbeat -------------------------------------------------------------------------------
def test_activity_counts_units_in_one_step():
    clock = FakeClock()
    a = P.Activity(clock)
    assert a.describe() is None
    a.begin("reducing case 00017-0badcafe on tvm", "candidates tried")
    a.tick()
    assert a.describe() == "reducing case 00017-0badcafe on tvm: 1 candidate tried, 0 s"
    clock.now = 22.0
    for _ in range(13):
        a.tick()
    assert a.describe() == "reducing case 00017-0badcafe on tvm: 14 candidates tried, 22 s"
    a.begin("running case 00042-00c0ffee on tvm (reference torch)")
    assert a.describe() == "running case 00042-00c0ffee on tvm (reference torch), 0 s"
    a.clear()
    assert a.snapshot() is None


def test_a_slow_step_gets_heartbeats_naming_it():
    out, act = io.StringIO(), P.Activity()
    p = P.Progress(10, "t", enabled=False, every_s=0.4, settle_s=0.05, stream=out, activity=act, step_summary=None)
    try:
        act.begin("reducing case 00017-0badcafe on tvm", "candidates tried")
        for _ in range(15):  # one step of 1.5 s: no case finishes, no other line would come
            time.sleep(0.1)
            act.tick()
    finally:
        p.close()
    beats = [ln for ln in out.getvalue().splitlines() if "reducing case" in ln]
    assert len(beats) >= 2 and p.heartbeats == len(beats), out.getvalue()
    counts = [int(re.search(r"on tvm: (\d+) candidates tried, \d+ s \(0/10 cases", b).group(1)) for b in beats]
    assert counts == sorted(counts) and counts[-1] > counts[0]
    assert all(b.startswith("dlgate: t: reducing case 00017-0badcafe on tvm: ") for b in beats)


def test_fast_steps_print_progress_lines_and_no_heartbeat():
    out, act = io.StringIO(), P.Activity()
    p = P.Progress(100000, "t", enabled=False, every_s=0.5, settle_s=0.3, stream=out, activity=act,
                   step_summary=None)
    try:
        t_end, i = time.monotonic() + 2.2, 0
        while time.monotonic() < t_end:  # cases of a few milliseconds, each its own activity
            act.begin(f"running case {i:05d} on tvm")
            time.sleep(0.003)
            p.advance(False)
            i += 1
    finally:
        p.close()
    lines = out.getvalue().splitlines()
    assert p.heartbeats == 0 and not any("running case" in ln for ln in lines), lines
    assert len(lines) >= 3 and all(re.match(r"dlgate: t: \d+/100000 cases", ln) for ln in lines), lines


def test_a_heartbeat_that_fails_says_so_and_the_run_goes_on():
    class Broken(P.Activity):
        def snapshot(self):
            raise RuntimeError("boom")

    out = io.StringIO()
    p = P.Progress(5, "t", enabled=False, every_s=0.05, stream=out, activity=Broken(), step_summary=None)
    time.sleep(0.3)
    p.advance(False)
    p.close()
    assert "dlgate: progress: the heartbeat stopped: RuntimeError: boom" in out.getvalue()


def test_on_a_terminal_the_bar_shows_the_step_in_progress():
    out, act = io.StringIO(), P.Activity()
    p = P.Progress(3, "t", enabled=True, every_s=0.2, stream=out, activity=act, step_summary=None)
    try:
        act.begin("reducing case 00017-0badcafe on tvm", "candidates tried")
        act.tick(4)
        time.sleep(1.3)  # the bar's activity is refreshed every second
        assert p.bar.tasks[0].fields["now"].startswith("reducing case 00017-0badcafe on tvm: 4 candidates tried, ")
        assert p.heartbeats == 0  # no line printed under the bar
    finally:
        p.close()
    assert p.bar is None


# -- the job summary -----------------------------------------------------------------------------
def test_live_section_is_replaced_in_place_and_others_content_is_kept(tmp_path):
    path = str(tmp_path / "step-summary.md")
    with open(path, "w") as f:
        f.write("### the builds tested\n\n| a | b |")  # another writer's, without a final line break
    P.put_section(path, "first")
    P.put_section(path, "second")
    with open(path, "a") as f:
        f.write("> a note appended by someone else\n")
    P.put_section(path, "third *state*")
    text = open(path).read()
    assert text == (f"### the builds tested\n\n| a | b |\n{P.BEGIN}\nthird *state*\n{P.END}\n"
                    "> a note appended by someone else\n")
    assert P.final_summary(path, "# dlgate: 0 new failures\n\nbody")
    assert open(path).read() == ("### the builds tested\n\n| a | b |\n# dlgate: 0 new failures\n\nbody\n"
                                 "> a note appended by someone else\n")
    assert not P.final_summary(path, "second run")  # no live section: appended, as before
    assert open(path).read().endswith("> a note appended by someone else\nsecond run\n")


def test_seal_keeps_the_last_progress_under_a_note(tmp_path):
    clock, path = FakeClock(), str(tmp_path / "s.md")
    act = P.Activity(clock)
    p = P.Progress(200, "pr", enabled=False, every_s=1e6, stream=io.StringIO(), clock=clock, activity=act,
                   step_summary=path)
    try:
        assert open(path).read().startswith(P.BEGIN)  # there from the start: "0 of 200"
        act.begin("reducing case 00017-0badcafe on tvm", "candidates tried")
        act.tick(3)
        clock.now = 40.0
        p.advance(True)  # the first case finished: the section is rewritten at once
    finally:
        p.close()
    live = open(path).read()
    assert live.startswith(P.BEGIN) and "**1 of 200** cases run, **1** with failures, 40 s elapsed" in live
    assert "Now: reducing case 00017-0badcafe on tvm: 3 candidates tried, 40 s." in live
    assert P.seal(path, "> **dlgate:** ended with exit status 3")
    sealed = open(path).read()
    assert P.BEGIN not in sealed and P.END not in sealed and P.NOTE_START not in sealed
    assert sealed.startswith("> **dlgate:** ended with exit status 3\n\n### dlgate `pr`: progress\n\n**1 of 200**")
    assert not P.seal(path, "again")


def test_closing_says_what_comes_next_without_an_eta(tmp_path):
    clock, path = FakeClock(), str(tmp_path / "s.md")
    p = P.Progress(20, "pr", enabled=False, every_s=1e6, stream=io.StringIO(), clock=clock,
                   activity=P.Activity(clock), step_summary=path)
    clock.now = 5.0
    p.advance(False)
    assert "ETA after 6 cases" in open(path).read()
    p.close("deciding the verdict and writing the reports")
    text = open(path).read()
    assert "**1 of 20** cases run, **0** with failures, 5 s elapsed.\n" in text and "ETA" not in text
    assert "Now: deciding the verdict and writing the reports." in text
    assert not p._thread.is_alive()


def test_entrypoint_seals_a_section_dlgate_left(tmp_path):
    import entrypoint.results

    path = tmp_path / "s.md"
    path.write_text("before\n")
    P.put_section(str(path), "### dlgate `pr`: progress\n\n**3 of 100** cases run")
    entrypoint.results.seal_progress({"GITHUB_STEP_SUMMARY": str(path)}, 3)
    assert path.read_text() == ("before\n> **dlgate:** the run ended with exit status 3 before writing its summary; "
                                "see the log of the dlgate run step. Its last progress:\n\n"
                                "### dlgate `pr`: progress\n\n**3 of 100** cases run\n")
    entrypoint.results.seal_progress({}, 3)  # no job summary: nothing to do


# -- a real run ------------------------------------------------------------------------------------
SLOW = {"name": "tests.fake_backends:SlowCompile", "options": {"seconds": 0.25}}


def test_run_heartbeat_names_the_reduction_and_the_job_summary_follows_the_run(tmp_path, monkeypatch, capsys):
    """A run whose one case fails, with every compile taking 0.25 s: the reduction is the
    slow step. Its heartbeat names it, the job summary shows the live section while the
    run goes (read by a watcher thread) and the final summary in its place at the end."""
    step = tmp_path / "step-summary.md"
    step.write_text("### the builds tested\n\nbefore dlgate\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    monkeypatch.setenv(P.HEARTBEAT_ENV, "1")
    monkeypatch.setenv("FAKE_BUG", "1")
    monkeypatch.setenv("CI", "1")
    cfg = write_config(str(tmp_path), models=1, crosscheck=False, confirm_runs=0, findings_per_case=1,
                       reduce_seconds=8, backends=[SLOW])
    seen, stop = [], threading.Event()

    def watch():
        while not stop.is_set():
            try:
                text = step.read_text()
            except OSError:
                continue
            if P.BEGIN in text and (not seen or seen[-1] != text):
                seen.append(text)
            stop.wait(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        assert main(["run", "--config", cfg, "--seed", "beat", "--out", str(tmp_path / "o"), "--no-progress"]) == 1
    finally:
        stop.set()
        watcher.join()
    err = capsys.readouterr().err
    beats = [ln for ln in err.splitlines() if re.match(r"dlgate: t: reducing case 00000-[0-9a-f]{8} on "
                                                        r"tests\.fake_backends:SlowCompile\[cpu\]: \d+ candidates "
                                                        r"tried, \d+ s(; [^(]+ for \d+ s)? \(0/1 cases", ln)]
    assert beats, err
    assert any("reducing case 00000-" in s and "**0 of 1** cases run" in s for s in seen), seen[-3:]
    final = step.read_text()
    summary = (tmp_path / "o" / "summary.md").read_text()
    assert final == "### the builds tested\n\nbefore dlgate\n" + summary + "\n"
    assert P.BEGIN not in final


def test_a_bad_heartbeat_interval_is_one_line_and_status_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(P.HEARTBEAT_ENV, "soon")
    cfg = write_config(str(tmp_path), models=1)
    out = tmp_path / "o"
    assert main(["run", "--config", cfg, "--seed", "x", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"dlgate run: {P.HEARTBEAT_ENV}: expected a number of seconds > 0, got 'soon'"]
    assert not os.path.exists(out / "run.json")  # before any work


def test_a_heartbeat_whose_stream_is_closed_stops_quietly():
    """The heartbeat's last word goes to a stream its owner closed: the thread ends without
    an exception of its own (none escapes a daemon thread into the host's output)."""
    closed = threading.Event()

    class Broken(P.Activity):
        def snapshot(self):
            closed.wait(5)
            raise RuntimeError("boom")

    out = io.StringIO()
    errors = []
    old = threading.excepthook
    threading.excepthook = errors.append
    try:
        p = P.Progress(5, "t", enabled=False, every_s=0.05, stream=out, activity=Broken(), step_summary=None)
        out.close()
        closed.set()
        p._thread.join(timeout=5)
        assert not p._thread.is_alive()
    finally:
        threading.excepthook = old
    assert errors == []


def test_a_run_whose_set_up_fails_stops_its_heartbeat_and_workers(tmp_path, monkeypatch, capsys):
    """A step between the start of the heartbeat and the case loop raises (here, reading the
    coverage state): the run ends with an internal error naming it, and neither the heartbeat thread nor a
    started worker outlives the run."""
    import dlgate.gate.run.loop as L
    from dlgate.exec import worker as W

    def broken(*a, **k):
        raise RuntimeError("coverage state unreadable")

    started = []
    real_start = W.Worker.start

    def start(self):
        started.append(self)
        return real_start(self)

    monkeypatch.setattr(L, "coverage_start", broken)
    monkeypatch.setattr(W.Worker, "start", start)
    monkeypatch.setenv(P.HEARTBEAT_ENV, "0.05")
    cfg = write_config(str(tmp_path), models=1)
    before = {t.ident for t in threading.enumerate() if t.name == "dlgate-heartbeat"}
    rc = main(["run", "--config", cfg, "--seed", "x", "--out", str(tmp_path / "o"), "--no-progress"])
    assert rc not in (0, 1, 2)  # an internal error, said as such
    assert "coverage state unreadable" in capsys.readouterr().err
    left = [t for t in threading.enumerate() if t.name == "dlgate-heartbeat" and t.ident not in before]
    assert left == []
    assert started and all(w._proc is None for w in started)


# -- the phase inside a step ---------------------------------------------------------------------
def test_the_phase_inside_a_step_is_named_and_ends_with_the_step():
    clock = FakeClock()
    a = P.Activity(clock)
    a.phase("compiling on tvm[cpu]")  # idle: no step to refine
    assert a.describe() is None
    a.begin("running case 00042-00c0ffee on tvm[cpu] (reference torch)")
    report = P.worker_phases("torch[cpu]", activity=a)
    report("torch[cpu]", "compile")
    assert a.describe().endswith(", 0 s; computing the reference on torch[cpu] for 0 s")
    clock.now = 5.0
    report("tvm[cpu]", "compile")
    clock.now = 45.0
    assert a.describe() == ("running case 00042-00c0ffee on tvm[cpu] (reference torch), 45 s; "
                            "compiling on tvm[cpu] for 40 s")
    report("tvm[cpu]", "run")
    assert a.describe().endswith("; running on tvm[cpu] for 0 s")
    report("onnx-reference[cpu]", "compile")
    assert a.describe().endswith("; cross-checking with ONNX's reference evaluator for 0 s")
    P.worker_phases("torch[cpu]", base=True, activity=a)("tvm[cpu]", "start")
    assert a.describe().endswith("; starting the tvm[cpu] worker (base build) for 0 s")
    a.begin("reducing case 00042-00c0ffee on tvm[cpu]", "candidates tried")
    a.tick(14)
    assert a.describe() == "reducing case 00042-00c0ffee on tvm[cpu]: 14 candidates tried, 0 s"


def test_run_heartbeat_names_the_compile_phase_of_a_slow_backend(tmp_path, monkeypatch, capsys):
    """A passing case whose compile takes 2 s: the heartbeat says the case is compiling on
    that backend, and for how long."""
    monkeypatch.setenv(P.HEARTBEAT_ENV, "0.5")
    monkeypatch.setenv("CI", "1")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    slow = {"name": "tests.fake_backends:SlowCompile", "options": {"seconds": 2}}
    cfg = write_config(str(tmp_path), models=1, crosscheck=False, confirm_runs=0, backends=[slow])
    assert main(["run", "--config", cfg, "--seed", "phase", "--out", str(tmp_path / "o"), "--no-progress"]) == 0
    err = capsys.readouterr().err
    label = r"tests\.fake_backends:SlowCompile\[cpu\]"
    beats = [ln for ln in err.splitlines() if re.match(rf"dlgate: t: running case 00000-[0-9a-f]{{8}} on {label} "
                                                         rf"\(reference torch\), \d+ s; compiling on {label} for "
                                                         rf"\d+ s \(0/1 cases", ln)]
    assert beats, err
