"""Isolation: crashes, aborts, hangs and memory hogs are contained and classified, the
worker is replaced, and the batch goes on."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest

from dlgate.backends.base import BackendSpec, Model
from dlgate.case import make_case
from dlgate.exec import proctree as PT
from dlgate.exec import worker as W
from dlgate.graph.generator import GenConfig, Generator


@pytest.fixture(scope="module")
def model():
    case = make_case(Generator(GenConfig(max_nodes=3, dtypes=("float32",))), "w", "w", 0)
    return Model(case.model_bytes, case.graph)


def spec(name):
    return BackendSpec(f"tests.fake_backends:{name}")


def feeds(model):
    g = model.graph
    return [np.zeros(g.tensors[t].shape, g.tensors[t].dtype) for t in g.inputs]


def test_failures_are_classified_and_the_batch_goes_on(model):
    # a generous timeout: the hog must be stopped by the memory cap, not by the clock, also on a loaded
    # machine where page faults are slow; the hang has a pool of its own with a short one
    with W.Pool(timeout_s=120, memory_mb=400) as pool, W.Pool(timeout_s=3) as short:
        good = pool.execute(spec("Good"), model, feeds(model))
        assert good.ok and len(good.outputs) == len(model.graph.outputs)
        seg = pool.execute(spec("Segfault"), model, feeds(model))
        assert seg.status == W.CRASH and seg.error["signal"] == "SIGSEGV"
        ab = pool.execute(spec("Abort"), model, feeds(model))
        assert ab.status == W.CRASH and ab.error["signal"] == "SIGABRT"
        hang = short.execute(spec("Hang"), model, feeds(model))
        assert hang.status == W.TIMEOUT and hang.wall_s < 10
        hog = pool.execute(spec("Hog"), model, feeds(model))
        assert hog.status == W.OOM, hog.error
        dec = pool.execute(spec("Declines"), model, feeds(model))
        assert dec.status == W.UNSUPPORTED and dec.error["stage"] == "compile"
        err = pool.execute(spec("Raises"), model, feeds(model))
        assert err.status == W.RUN_ERROR and "FuseOps" in err.error["message"] and err.error["frames"]
        # the crashed worker is replaced on the next case
        again = pool.execute(spec("Segfault"), model, feeds(model))
        assert again.status == W.CRASH and pool.get(spec("Segfault")).restarts == 2
        assert pool.execute(spec("Good"), model, feeds(model)).ok


@pytest.mark.skipif(not os.path.exists("/proc/self/schedstat") or not hasattr(os, "sched_setaffinity"),
                    reason="the kernel says nothing of run-queue waits here (timeouts are wall-clock time)")
def test_a_worker_starved_of_cpu_is_not_timed_out_and_a_hang_still_is(model):
    """The timeout counts the worker's own time: pinned to one CPU beside three busy
    processes (each in a session of its own, so each gets a fair share), a job that needs
    0.5 s of CPU under a 1 s limit takes about 2 s and is answered, not timed out; a job that
    spins for ever under the same load still times out, its log saying how long it waited
    for a CPU, and a blocked one (Hang) at the limit."""
    cpu = max(os.sched_getaffinity(0))
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(3)]
    try:
        for h in hogs:
            os.sched_setaffinity(h.pid, {cpu})

        def starved(w):
            assert w.start()
            os.sched_setaffinity(w._proc.pid, {cpu})
            return w

        with W.Pool(timeout_s=1) as pool:
            busy = BackendSpec("tests.fake_backends:Spins", options=(("cpu_s", "0.5"),))
            out = starved(pool.get(busy)).execute(model, feeds(model))
            assert out.ok, out.error
            assert out.wall_s > 1.2, out.wall_s  # the load did keep it past the limit in wall-clock time
            out = starved(pool.get(spec("Spins"))).execute(model, feeds(model))
            assert out.status == W.TIMEOUT and out.error["message"] == "no answer within 1 s"
            assert "the worker waited" in out.error["log"] and out.wall_s < 30, (out.wall_s, out.error["log"][:200])
            out = starved(pool.get(spec("Hang"))).execute(model, feeds(model))
            assert out.status == W.TIMEOUT and out.wall_s < 3, out.wall_s
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def test_unavailable_and_broken_backends_say_why(model):
    with W.Pool() as pool:
        out = pool.execute(spec("NoGpu"), model, feeds(model))
        assert out.status == W.UNAVAILABLE and "needs a GPU" in out.error["message"]
        out = pool.execute(spec("Broken"), model, feeds(model))
        assert out.status == W.UNAVAILABLE and "cannot initialise" in out.error["message"]
        out = pool.execute(BackendSpec("no-such-backend"), model, feeds(model))
        assert out.status == W.UNAVAILABLE and "unknown backend" in out.error["message"]


def test_worker_is_reused_across_cases(model):
    with W.Worker(spec("Good")) as w:
        for _ in range(5):
            assert w.execute(model, feeds(model)).ok
        assert w.restarts == 0 and w._jobs == 5


def test_the_pool_reports_each_jobs_phase_as_the_worker_goes(model):
    """A worker start, the job sent ("compile"), and "run" only once the worker says the
    model compiled: a compiler that refuses the model never reaches "run"."""
    heard = []
    with W.Pool(on_phase=lambda label, stage: heard.append((label, stage))) as pool:
        assert pool.execute(spec("Good"), model, feeds(model)).ok
        assert pool.execute(spec("Good"), model, feeds(model)).ok  # the worker is kept: no second start
        assert pool.execute(spec("Declines"), model, feeds(model)).status == W.UNSUPPORTED
    good, declines = "tests.fake_backends:Good[cpu]", "tests.fake_backends:Declines[cpu]"
    assert heard == [(good, "start"), (good, "compile"), (good, "run"), (good, "compile"), (good, "run"),
                     (declines, "start"), (declines, "compile")]


# -- the fork server -------------------------------------------------------------------------------
def test_each_worker_runs_in_the_environment_of_its_own_start(model, monkeypatch):
    """Workers fork from a server started with the first worker; each still runs in the
    gate's environment as it is when that worker starts (a base build's env, a test's)."""
    ones = []
    for bug in ("0", "1"):
        monkeypatch.setenv("FAKE_BUG", bug)  # EnvBug adds one to its answers where FAKE_BUG is "1"
        with W.Worker(spec("EnvBug")) as w:
            out = w.execute(model, feeds(model))
            assert out.ok, out.error
            ones.append(out.outputs)
    assert any(np.issubdtype(o.dtype, np.floating) for o in ones[0])
    for clean, buggy in zip(*ones):
        if np.issubdtype(clean.dtype, np.floating):
            np.testing.assert_array_equal(buggy, clean + 1)


@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"), reason="no scheduler groups by session here (Linux autogroup)")
def test_a_worker_in_its_own_session_keeps_the_gates_niceness():
    """A worker runs in a session of its own (its process group is killed whole); where Linux
    schedules by session (autogroup), a process's nice value counts only inside its session,
    so a worker in a fresh one would compete at full weight with the machine's other work
    however ``nice`` the gate was started. The worker's session group takes the gate's
    niceness. Checked from a gate started with ``nice -n 7`` (a fresh interpreter: the test's
    own niceness cannot be lowered back), for a worker from the fork server and for one from
    a warm server (PyTorch)."""
    code = ("import numpy as np; from dlgate.backends.base import BackendSpec, Model; "
            "from dlgate.case import make_case; from dlgate.exec import worker as W; "
            "from dlgate.graph.generator import GenConfig, Generator; "
            "c = make_case(Generator(GenConfig(max_nodes=3, dtypes=('float32',))), 'w', 'w', 0); "
            "m = Model(c.model_bytes, c.graph); x = [np.zeros(c.graph.tensors[t].shape, c.graph.tensors[t].dtype) "
            "for t in c.graph.inputs]\n"
            "with W.Pool(timeout_s=120) as pool:\n"
            "    for name in ('Scheduling', 'SchedulingWarm'):\n"
            "        o = pool.execute(BackendSpec('tests.fake_backends:' + name), m, x)\n"
            "        assert o.ok, o.error\n"
            "        print(*o.outputs[0].tolist())\n")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    nice = 7
    out = subprocess.run(["nice", "-n", str(nice), sys.executable, "-c", code], cwd=repo, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    for line in out.stdout.splitlines():
        own, group, leader = map(int, line.split())
        assert (own, leader) == (min(19, nice + os.nice(0)), 1), line  # nice adds to the test's own, up to 19
        assert group == own, line  # its session's group, as nice as the gate
    assert len(out.stdout.splitlines()) == 2, out.stdout


def test_a_temporary_folder_too_deep_for_the_fork_servers_socket_starts_workers_afresh(tmp_path):
    """The fork server listens on a socket in TMPDIR, and a socket's path has at most ~104
    bytes: under a deeper TMPDIR (a CI runner's, pytest's under xdist) workers start as fresh
    interpreters instead, and run; under a short one they still fork from the server."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = (
        "import sys, numpy as np\n"
        "from dlgate.backends.base import BackendSpec, Model\n"
        "from dlgate.case import make_case\n"
        "from dlgate.exec import worker as W\n"
        "from dlgate.graph.generator import GenConfig, Generator\n"
        "case = make_case(Generator(GenConfig(max_nodes=3, dtypes=('float32',))), 'w', 'w', 0)\n"
        ""
        "with W.Worker(BackendSpec('tests.fake_backends:Good')) as w:\n"
        "    out = w.execute(Model(case.model_bytes, case.graph), [np.ones(case.graph.tensors[t].shape, dtype=case.graph.tensors[t].dtype) for t in case.graph.inputs])\n"
        "print(W._context().get_start_method(), out.status)\n")
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    answers = {}
    for name, folder in (("deep", deep), ("short", tmp_path)):
        env = dict(os.environ, TMPDIR=str(folder), PYTHONPATH=repo)
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        answers[name] = proc.stdout.split()
    assert answers["deep"] == ["spawn", "ok"]
    if "forkserver" in __import__("multiprocessing").get_all_start_methods() and len(str(tmp_path)) < 60:
        assert answers["short"] == ["forkserver", "ok"]


@pytest.mark.skipif(W._context().get_start_method() != "forkserver" or not os.path.exists("/proc/self/maps"),
                    reason="a platform without multiprocessing's fork server, or without /proc")
def test_the_fork_server_holds_no_thread_and_no_compiler_to_fork(model):
    """What a worker is forked from never imported PyTorch or TVM (their thread pools do not
    survive a fork) and runs one thread, also after workers that import both started. (The
    cold server; the warm servers per compiler: tests/test_warm_servers.py.)"""
    import multiprocessing.forkserver as FS

    with W.Worker(BackendSpec("tvm"), warm=False) as w:
        assert w.start(), w.unavailable
        server = FS._forkserver._forkserver_pid
        assert psutil.Process(w._proc.pid).ppid() == server
        with open(f"/proc/{w._proc.pid}/maps") as f:
            assert "libtorch_cpu" in f.read()  # the worker itself did import them
    with open(f"/proc/{server}/maps") as f:
        maps = f.read()
    assert "libtorch_cpu" not in maps and "libtvm" not in maps
    assert psutil.Process(server).num_threads() == 1


# -- the process tree, through psutil -----------------------------------------------------------
def opt_spec(name, **options):
    return BackendSpec(f"tests.fake_backends:{name}", options=tuple(sorted(options.items())))


def pids_in(path) -> list:
    """The pids a fake backend's helpers wrote to ``path``, waiting until there are some."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if os.path.exists(path) and open(path).read().endswith("\n"):
            return [int(p) for p in open(path).read().split()]
        time.sleep(0.05)
    raise AssertionError(f"no pids in {path}")


def ended(pid: int) -> bool:
    """Gone, or a zombie that holds nothing and waits only for its new parent to reap it."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture
def pidfile(tmp_path):
    path = str(tmp_path / "pids")
    yield path
    for pid in [int(p) for p in open(path).read().split()] if os.path.exists(path) else []:
        if not ended(pid):  # the test failed: leave nothing running
            psutil.Process(pid).kill()


class Owner:
    """A subprocess.Popen with the multiprocessing.Process methods end_tree uses."""

    def __init__(self, popen):
        self.popen, self.pid = popen, popen.pid

    def join(self, timeout=None):
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pass

    def is_alive(self):
        return self.popen.poll() is None

    def kill(self):
        self.popen.kill()


def test_tree_memory_counts_the_descendants_and_end_tree_ends_them(pidfile):
    child = (f"import os, time; held = b'x' * (300 * 2**20); open({pidfile!r}, 'a').write(f'{{os.getpid()}}\\n'); "
             "time.sleep(3600)")
    parent = subprocess.Popen([sys.executable, "-c", f"import subprocess, sys, time; "
                               f"subprocess.Popen([sys.executable, '-c', {child!r}]); time.sleep(3600)"])
    [kid] = pids_in(pidfile)
    tree = PT.ProcessTree(parent.pid)
    alone = tree.rss_mb()
    assert alone < 100  # before a refresh only the root is known
    tree.refresh()
    assert [p.pid for p in tree.descendants] == [kid] and tree.rss_mb() >= alone + 300
    assert PT.end_tree(Owner(parent), grace_s=2) == []
    assert parent.returncode == -signal.SIGTERM and ended(kid) and tree.rss_mb() is None


def test_memory_cap_counts_a_child_outside_the_process_group(model, pidfile):
    with W.Worker(opt_spec("TreeHog", mb=400, pids=pidfile), timeout_s=30) as w:
        assert w.start()
        base = PT.ProcessTree(w._proc.pid).rss_mb()
        w.memory_mb = int(base) + 150  # the worker alone stays under the cap, worker and child do not
        out = w.execute(model, feeds(model))
        assert out.status == W.OOM and out.error["message"] == f"resident memory exceeded the {w.memory_mb} MB cap"
        assert out.wall_s < 25 and all(ended(p) for p in pids_in(pidfile))


def test_a_timeout_ends_the_whole_tree_grandchildren_included(model, pidfile):
    with W.Worker(opt_spec("Spawner", pids=pidfile), timeout_s=4) as w:
        out = w.execute(model, feeds(model))
        assert out.status == W.TIMEOUT and out.error["message"] == "no answer within 4 s" and w.restarts == 1
        pids = pids_in(pidfile)
        assert len(pids) == 2 and all(ended(p) for p in pids)
        assert w.execute(model, feeds(model)).status == W.TIMEOUT  # replaced, and contained again
        assert all(ended(p) for p in pids_in(pidfile))
