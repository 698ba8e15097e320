"""The run's lifecycle: one run per output folder (a lock), a journal that is refused when
damaged rather than guessed at, --fresh, and interruption: SIGTERM ends a run cleanly
(status 143, how to resume), and no worker outlives the gate, SIGKILL included."""
from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import yaml

import dlgate.gate.run.loop  # noqa: F401  (imported before any timing-sensitive step)
from dlgate.cli import main
from dlgate.gate.journal import OutLock, RunError, json_line, read_records

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS = ["Sigmoid", "Add", "Relu", "Mul", "Abs", "Neg", "Tanh"]
LINUX = pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table from /proc")


def write_config(path, **kw) -> str:
    doc = {"campaign": "t", "models": 3, "max_nodes": 4, "opset": 18, "operators": OPS, "backends": ["onnxruntime"],
           "timeout_s": 120, "crosscheck": False}
    doc.update(kw)
    p = os.path.join(str(path), f"cfg-{abs(hash(json.dumps(doc, sort_keys=True))) % 10**8}.yaml")
    with open(p, "w") as f:
        yaml.safe_dump(doc, f)
    return p


def slow(marker, seconds=3600.0) -> dict:
    """A backend whose compile sleeps (an hour: hangs), marking when it starts."""
    return {"name": "tests.fake_backends:SlowCompile", "options": {"marker": str(marker), "seconds": seconds}}


def run_cmd(cfg, out, seed="life"):
    return [sys.executable, "-m", "dlgate", "run", "--config", cfg, "--seed", seed, "--out", str(out), "--no-progress"]


def spawn(cmd, tmpdir):
    """Start a gate in a session of its own, with a temp folder of its own."""
    env = dict(os.environ, TMPDIR=str(tmpdir))
    os.makedirs(tmpdir, exist_ok=True)
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def wait_for(pred, timeout=120.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def records(out) -> list:
    return read_records(os.path.join(str(out), "results.jsonl"))


# -- the process table ------------------------------------------------------------------------
def _stats() -> dict:
    """pid -> the fields of /proc/PID/stat after the command name (state, ppid, process
    group, session, ...) of every process."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    out[int(name)] = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
    return out


def procs() -> dict:
    """pid -> (ppid, process group, state) of every process."""
    return {pid: (int(rest[1]), int(rest[2]), rest[0]) for pid, rest in _stats().items()}


def tree(root: int) -> tuple:
    """The pids descended from ``root`` (itself included), and their process groups."""
    table = procs()
    found, grew = {root}, True
    while grew:
        grew = False
        for pid, (ppid, _, _) in table.items():
            if ppid in found and pid not in found:
                found.add(pid)
                grew = True
    return found, {table[p][1] for p in found if p in table}


def alive(pids: set, groups: set) -> list:
    """Live (not zombie) processes that are in ``pids`` or in one of ``groups``."""
    return sorted(p for p, (_, pgid, state) in procs().items() if state not in "ZX" and (p in pids or pgid in groups))


def reap(pids: set, groups: set) -> None:
    """Kill what a failed test left running (only the processes it started)."""
    for p in alive(pids, groups):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def marked(marker) -> list:
    try:
        return [int(x) for x in open(marker).read().split()]
    except FileNotFoundError:
        return []


# -- one run per output folder -----------------------------------------------------------------
def test_a_second_run_on_the_same_out_is_refused_at_once(tmp_path, capsys):
    cfg = write_config(tmp_path, models=4, backends=[slow(tmp_path / "marks", seconds=1.0)])
    out = tmp_path / "o"
    first = spawn(run_cmd(cfg, out), tmp_path / "tmp")
    try:
        wait_for(lambda: (os.path.exists(out / "results.jsonl") and len(records(out)) >= 1) or first.poll() is not None,
                 what="a first record")
        t0 = time.monotonic()
        assert main(["run", "--config", cfg, "--seed", "life", "--out", str(out)]) == 2
        assert time.monotonic() - t0 < 5  # at once, not after the other run
        err = capsys.readouterr().err
        assert f"is in use by another dlgate run (pid {first.pid})" in err and len(err.strip().splitlines()) == 1, err
        assert first.poll() is None, "the first run should still be running"
        _, stderr = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, stderr
    cases = [r["case"] for r in records(out)]
    assert len(cases) == 4 and len(set(cases)) == 4
    with OutLock(str(out)):  # released when the run ended
        pass


def test_merge_takes_the_same_lock(tmp_path, capsys):
    cfg = write_config(tmp_path, models=1)
    shard = str(tmp_path / "s")
    assert main(["run", "--config", cfg, "--seed", "m", "--out", shard, "--shard", "1/1"]) == 0
    merged = str(tmp_path / "m")
    with OutLock(merged):
        assert main(["merge", shard, "--out", merged]) == 2
    assert f"in use by another dlgate run (pid {os.getpid()})" in capsys.readouterr().err
    assert main(["merge", shard, "--out", merged]) == 0


# -- a damaged journal or manifest ---------------------------------------------------------------
@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished run of 3 cases: (config, folder)."""
    d = tmp_path_factory.mktemp("finished")
    cfg = write_config(d)
    out = str(d / "o")
    assert main(["run", "--config", cfg, "--seed", "life", "--out", out]) == 0
    return cfg, out


def copy_of(finished, tmp_path) -> str:
    out = str(tmp_path / "o")
    shutil.copytree(finished[1], out)
    return out


def journal_lines(out) -> list:
    return open(os.path.join(out, "results.jsonl")).read().splitlines(keepends=True)


@pytest.mark.parametrize("damage, line, words", [
    (lambda ls: ls + [ls[1]], 4, "records case"),  # a case recorded twice
    (lambda ls: ls[:1] + ["garbage\n"] + ls[1:], 2, "is not JSON"),  # garbage in the middle
    (lambda ls: ls[:1] + ["[1, 2]\n"] + ls[1:], 2, "is not a case record"),  # JSON, not an object
    (lambda ls: ls[:2] + ['{"case": "x"}\n'] + ls[2:], 3, "is not a case record"),  # an object, not a record
    (lambda ls: ls + ['"done"\n'], 4, "is not a case record"),  # a complete last line is not torn
])
def test_a_damaged_journal_is_refused_naming_the_line(finished, tmp_path, capsys, damage, line, words):
    out = copy_of(finished, tmp_path)
    path = os.path.join(out, "results.jsonl")
    lines = damage(journal_lines(out))
    with open(path, "w") as f:
        f.writelines(lines)
    before = open(path).read()
    with pytest.raises(RunError, match=f"results.jsonl: line {line} {words}"):
        read_records(path)
    assert main(["run", "--config", finished[0], "--seed", "life", "--out", out]) == 2
    err = capsys.readouterr().err
    assert f"results.jsonl: line {line} {words}" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert open(path).read() == before  # nothing cut, nothing counted twice


def test_a_duplicate_is_refused_by_baseline_update_too(finished, tmp_path, capsys):
    out = copy_of(finished, tmp_path)
    with open(os.path.join(out, "results.jsonl"), "a") as f:
        f.write(journal_lines(out)[0])
    assert main(["baseline", "update", out, "--baseline", str(tmp_path / "b.json")]) == 2
    assert "results.jsonl: line 4 records case" in capsys.readouterr().err


def test_timings_may_repeat_a_case_but_not_hold_garbage(tmp_path):
    from dlgate.gate.journal import read_timings

    with open(tmp_path / "timings.jsonl", "w") as f:
        f.write(json_line({"case": "a", "case_s": 1}) + json_line({"case": "a", "case_s": 2}))
    assert [t["case_s"] for t in read_timings(str(tmp_path))] == [1, 2]  # killed between timing and record
    with open(tmp_path / "timings.jsonl", "a") as f:
        f.write("\x00\x00\n" + json_line({"case": "b"}))
    with pytest.raises(RunError, match="timings.jsonl: line 3 is not JSON"):
        read_timings(str(tmp_path))


@pytest.mark.parametrize("text", ["{not json", "[1, 2]\n", ""])
def test_a_corrupt_manifest_is_one_line_and_exit_2(finished, tmp_path, capsys, text):
    out = copy_of(finished, tmp_path)
    with open(os.path.join(out, "run.json"), "w") as f:
        f.write(text)
    assert main(["run", "--config", finished[0], "--seed", "life", "--out", out]) == 2
    err = capsys.readouterr().err
    assert "run.json is not a dlgate manifest" in err and "--fresh" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert main(["run", "--config", finished[0], "--seed", "life", "--out", out, "--fresh"]) == 0


# -- --fresh ---------------------------------------------------------------------------------------
def test_fresh_removes_everything_dlgate_wrote_and_nothing_else(finished, tmp_path):
    out = copy_of(finished, tmp_path)
    stale = os.path.join(out, "repros", "0123456789abcdef")
    os.makedirs(stale)
    with open(os.path.join(stale, "repro.json"), "w") as f:
        f.write("{}")
    os.makedirs(os.path.join(out, "cases", "old-case"))
    for name in ("verdict.json.tmp", "notes.txt"):
        with open(os.path.join(out, name), "w") as f:
            f.write("x")
    os.makedirs(os.path.join(out, "mine"))
    assert os.path.exists(os.path.join(out, "stats.json"))
    assert main(["run", "--config", finished[0], "--seed", "other", "--out", out, "--fresh"]) == 0
    assert not os.path.exists(os.path.join(out, "repros")), "a stale repro survived --fresh"
    assert not os.path.exists(os.path.join(out, "cases", "old-case"))
    assert not os.path.exists(os.path.join(out, "verdict.json.tmp"))
    assert os.path.exists(os.path.join(out, "notes.txt")) and os.path.isdir(os.path.join(out, "mine"))
    assert {r["root"] for r in records(out)} == {"other"} and len(records(out)) == 3
    assert json.load(open(os.path.join(out, "stats.json")))["cases_run"] == 3


# -- interruption ----------------------------------------------------------------------------------
def _busy_gate(tmp_path):
    """A `dlgate run` subprocess whose backend hangs compiling the first case: (process,
    out, its temp folder, the hung worker's pid, the run's pids and process groups)."""
    marker = tmp_path / "marks"
    cfg = write_config(tmp_path, backends=[slow(marker)], timeout_s=600)
    out, tmp = tmp_path / "o", tmp_path / "tmp"
    proc = spawn(run_cmd(cfg, out), tmp)
    try:
        wait_for(lambda: marked(marker) or proc.poll() is not None, what="a busy worker")
        assert proc.poll() is None, proc.communicate()
        (busy,) = marked(marker)
        pids, groups = tree(proc.pid)
    except BaseException:
        proc.kill()
        raise
    assert busy in pids and busy in groups  # the worker leads a process group of its own
    assert len(pids) >= 3  # the gate, the reference's worker, the hung one (and multiprocessing's helper)
    return proc, out, tmp, busy, pids, groups


@LINUX
@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
def test_sigterm_stops_the_workers_and_says_how_to_resume(tmp_path, sig, status):
    proc, out, tmp, busy, pids, groups = _busy_gate(tmp_path)
    try:
        t0 = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - t0
        assert proc.returncode == status, err
        assert f"dlgate: interrupted by {sig.name} after 0 of 3 cases; run the same command again to resume" in err, err
        assert "Traceback" not in err, err
        assert took < 5, f"shutdown took {took:.1f} s: a hung worker was waited for"
        wait_for(lambda: not alive(pids, groups), timeout=10, what=f"the run's processes to end: {alive(pids, groups)}")
    finally:
        reap(pids, groups)
    assert records(out) == []
    verdict = json.load(open(out / "verdict.json"))  # the reports say so, for 0 cases
    assert verdict["result"] == "interrupted" and verdict["exit_code"] == status
    assert verdict["interrupted"] == {"signal": sig.name, "exit_code": status, "cases": 0, "planned": 3,
                                      "result_so_far": "pass"}
    assert not glob.glob(str(tmp / "dlgate-worker-*")), os.listdir(tmp)  # worker logs removed
    with OutLock(str(out)):
        pass


@LINUX
def test_sigkill_of_the_gate_kills_its_workers(tmp_path):
    proc, out, tmp, busy, pids, groups = _busy_gate(tmp_path)
    try:
        proc.kill()
        proc.communicate(timeout=60)
        wait_for(lambda: not alive(pids, groups), timeout=10, what=f"the workers to die: {alive(pids, groups)}")
    finally:
        reap(pids, groups)
    with OutLock(str(out)):  # the kernel released the lock with the gate
        pass
    assert not glob.glob(str(tmp / "dlgate-worker-*")), os.listdir(tmp)  # a started worker's log has no name


_PARENT = """
import sys
sys.path.insert(0, {repo!r})
import numpy as np
from dlgate.backends.base import BackendSpec, Model
from dlgate.case import make_case
from dlgate.exec import worker as W
from dlgate.graph.generator import GenConfig, Generator

case = make_case(Generator(GenConfig(max_nodes=2, dtypes=("float32",))), "w", "w", 0)
g = case.graph
feeds = [np.zeros(g.tensors[t].shape, g.tensors[t].dtype) for t in g.inputs]
pool = W.Pool(timeout_s=600, python={python!r}, env={{"PYTHONPATH": {repo!r}}})
spec = BackendSpec("tests.fake_backends:SlowCompile", options=(("marker", {marker!r}),))
pool.execute(spec, Model(case.model_bytes, g), feeds)
"""


@LINUX
@pytest.mark.parametrize("base", [False, True], ids=["spawned", "base-interpreter"])
def test_a_worker_dies_with_its_parent(tmp_path, base):
    """Workers of this interpreter (multiprocessing) and of another one (the base build's,
    `python -m dlgate.exec.worker`) alike."""
    marker = str(tmp_path / "marks")
    src = _PARENT.format(repo=REPO, python=sys.executable if base else None, marker=marker)
    proc = spawn([sys.executable, "-c", src], tmp_path / "tmp")
    pids, groups = {proc.pid}, set()
    try:
        wait_for(lambda: marked(marker) or proc.poll() is not None, what="a busy worker")
        assert proc.poll() is None, proc.communicate()
        pids, groups = tree(proc.pid)
        assert marked(marker)[0] in pids
        proc.kill()
        proc.communicate(timeout=60)
        wait_for(lambda: not alive(pids, groups), timeout=10, what=f"the worker to die: {alive(pids, groups)}")
    finally:
        if proc.poll() is None:
            proc.kill()
        reap(pids, groups)
    assert not glob.glob(str(tmp_path / "tmp" / "dlgate-worker-*"))


# A run interrupted by SIGTERM or SIGINT, then resumed, gives the uninterrupted run's journal:
# tests/test_interrupt.py (test_an_interrupted_run_reports_what_ran_then_a_rerun_resumes) checks it
# on the runs it interrupts and resumes for their reports.


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_during_a_journal_append_waits_for_the_count(tmp_path, monkeypatch, sig):
    """A stop that lands between a case's journal line and its count in memory is raised
    once both are done: the interrupted run's reports count what its journal holds."""
    from dlgate.gate.journal import Journal
    from dlgate.gate.run.lifecycle import Interrupted, stopped_by_signals

    real_fsync = os.fsync
    sent = []

    def fsync_then_signal(fd):
        real_fsync(fd)
        if not sent:
            sent.append(sig)
            os.kill(os.getpid(), sig)  # delivered now, in the middle of the append

    monkeypatch.setattr(os, "fsync", fsync_then_signal)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        with Journal(str(tmp_path)) as j:
            with pytest.raises(Interrupted) as got, stopped_by_signals():
                j.append({"case": "00000", "verdicts": {}})
                j.append({"case": "00001", "verdicts": {}})  # never reached: the stop came after the first
    finally:  # an interrupted run leaves its ignoring handler in place; this process goes on
        for s, h in handlers.items():
            signal.signal(s, h)
    assert got.value.status == 128 + sig
    assert [r["case"] for r in j.records] == ["00000"] and j.done == {"00000"}
    assert [r["case"] for r in read_records(str(tmp_path / "results.jsonl"))] == ["00000"]


def test_a_lock_left_to_a_dying_fork_of_a_killed_run_is_waited_for(tmp_path):
    """The run that wrote its pid into the lock file is gone, but a process it forked still
    holds the lock for a moment (a worker outliving a SIGKILL by its watchdog's beat): the
    next run waits for it instead of refusing; a lock whose run is alive is still refused at
    once."""
    from dlgate.gate.journal import DYING_HOLDER_WAIT_S, LOCK

    out = tmp_path / "o"
    out.mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    holder = ("import fcntl, os, sys, time\n"
              f"fd = os.open({str(out / LOCK)!r}, os.O_RDWR | os.O_CREAT, 0o644)\n"
              "fcntl.flock(fd, fcntl.LOCK_EX)\n"
              "pid = str(os.getpid()) if sys.argv[1] == 'SELF' else sys.argv[1]\n"
              "os.ftruncate(fd, 0); os.pwrite(fd, (pid + '\\n').encode(), 0)\n"
              "print('held', flush=True); time.sleep(float(sys.argv[2]))\n")
    p = subprocess.Popen([sys.executable, "-c", holder, str(dead_pid), "1.0"], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    t0 = time.monotonic()
    with OutLock(str(out)):  # the named run is gone: waited for, then taken
        waited = time.monotonic() - t0
    p.wait()
    assert 0.3 < waited < DYING_HOLDER_WAIT_S, waited
    # a live run named in the file: refused at once
    q = subprocess.Popen([sys.executable, "-c", holder, "SELF", "30"], stdout=subprocess.PIPE, text=True)
    try:
        assert q.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        try:
            OutLock(str(out)).acquire()
            raise AssertionError("a lock held by a live run was taken")
        except RunError as e:
            assert "in use by another dlgate run" in str(e)
        assert time.monotonic() - t0 < 0.5
    finally:
        q.kill()
        q.wait()


@LINUX
def test_python_m_dlgate_ends_with_the_status_the_output_and_the_clean_up_of_an_ordinary_exit(tmp_path):
    """``python -m dlgate`` ends without the interpreter's teardown (dlgate/__main__.py): the
    status, everything written to a piped stdout and stderr, the exit handlers (workers
    stopped, multiprocessing's temporary folder removed) are those of an ordinary exit."""
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    proc = spawn(run_cmd(write_config(tmp_path, models=2), out), tmp)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert err.splitlines()[-1].startswith("dlgate: 2 cases; 0 new"), err
    assert len(records(out)) == 2

    def session() -> list:  # what the run started lives in its session, whatever its group
        return [pid for pid, rest in _stats().items() if int(rest[3]) == proc.pid and rest[0] not in "ZX"]
    wait_for(lambda: not session(), timeout=10, what=f"the run's processes to end: {session()}")
    left = [n for n in os.listdir(tmp) if n.startswith(("pymp-", "dlgate-"))]
    assert left == [], left  # neither multiprocessing's folder nor a worker's log
    # a command that writes a long stdout into a pipe: all of it arrives; a usage error keeps its status
    schema = subprocess.run([sys.executable, "-m", "dlgate", "config", "--schema"], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert schema.returncode == 0 and json.loads(schema.stdout)["type"] == "object", schema.stderr
    bad = subprocess.run([sys.executable, "-m", "dlgate", "run", "--config", str(tmp_path / "missing.yaml")], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1, bad.stderr
