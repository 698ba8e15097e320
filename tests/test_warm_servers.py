"""Warm fork servers (dlgate.exec.servers): one per compiler, proven to run one thread after its
import, its workers computing what cold workers compute, a crash, a hang and a memory hog in a
warm worker still contained and classified, and the fall back to the cold server when an
import starts a thread."""
from __future__ import annotations

import multiprocessing.forkserver as FS
import os
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest

from dlgate.backends.base import BackendSpec, Model
from dlgate.case import make_case
from dlgate.exec import servers as S
from dlgate.exec import worker as W
from dlgate.graph.generator import GenConfig, Generator

pytestmark = pytest.mark.skipif(W._context().get_start_method() != "forkserver" or not S.supported(),
                                reason="warm servers need multiprocessing's fork server and /proc")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def warm(name):
    return BackendSpec(f"tests.warm_backends:{name}")


def installed(package):
    import importlib.util

    return importlib.util.find_spec(package) is not None


@pytest.fixture(scope="module")
def models():
    gen = Generator(GenConfig(min_nodes=3, max_nodes=6, dtypes=("float32",)))
    return [make_case(gen, "warm", "warm", i) for i in range(4)]


def feeds(case):
    g = case.graph
    rng = np.random.default_rng(0)
    return [rng.standard_normal(g.tensors[t].shape).astype(g.tensors[t].dtype) for t in g.inputs]


def maps(pid) -> str:
    with open(f"/proc/{pid}/maps") as f:
        return f.read()


def tasks(pid) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def server_pid(kind) -> int:
    return S._SERVERS[kind]._forkserver_pid


@pytest.mark.parametrize("name,kind,lib,foreign", [("torch", "torch", "libtorch_cpu", "libtvm"),
                                                    ("tvm", "tvm", "libtvm", "onnxruntime_pybind11_state")])
def test_a_warm_server_runs_one_thread_and_holds_its_compiler_only(name, kind, lib, foreign):
    """The server of a kind has imported that compiler (its library is mapped), runs exactly one
    thread, and holds no other compiler: no TVM in the PyTorch server. Its worker is its child."""
    if not installed(kind):
        pytest.skip(f"{kind} is not installed")
    with W.Worker(BackendSpec(name)) as w:
        assert w.start(), w.unavailable
        server = server_pid(kind)
        assert psutil.Process(w._proc.pid).ppid() == server != FS._forkserver._forkserver_pid
        assert S.cold_reason(kind) is None
    text = maps(server)
    assert lib in text and foreign not in text
    assert tasks(server) == 1 and psutil.Process(server).num_threads() == 1


def test_the_proof_sees_no_thread_after_pytorchs_import_nor_after_it_counts_its_threads():
    """PyTorch's intra-op pool is made lazily: neither its import nor asking its size starts a
    thread that lives across a fork. NumPy's OpenBLAS pool exists before the probe fork and not
    after it (it stops itself at a fork), so the proof counts threads after one."""
    if not installed("torch"):
        pytest.skip("torch is not installed")
    script = ("import json, os, sys\n"
              "from dlgate.exec.servers import threads_across_fork\n"
              "import numpy\n"
              "before = len(os.listdir('/proc/self/task'))\n"
              "out = {'numpy_before_fork': before, 'numpy': threads_across_fork()}\n"
              "import torch\n"
              "out['torch'] = threads_across_fork()\n"
              "torch.get_num_threads()\n"
              "out['get_num_threads'] = threads_across_fork()\n"
              "import threading, time\n"
              "threading.Thread(target=time.sleep, args=(60,), name='late', daemon=True).start()\n"
              "out['late'] = threads_across_fork()\n"
              "print(json.dumps(out))\n")
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    import json

    out = json.loads(proc.stdout)
    assert out["numpy"] == [] and out["torch"] == [] and out["get_num_threads"] == []
    assert len(out["late"]) == 1 and "'late'" in out["late"][0]  # a live thread is seen, by name


@pytest.mark.parametrize("name", ["torch", "tvm"])
def test_a_warm_worker_computes_what_a_cold_one_does(models, name):
    """Same statuses, same output bytes, same libraries loaded, warm or cold, case after case."""
    if not installed(name):
        pytest.skip(f"{name} is not installed")
    answers, libs = {}, {}
    for is_warm in (False, True):
        with W.Worker(BackendSpec(name), warm=is_warm) as w:
            assert w.start(), w.unavailable
            forked_by = psutil.Process(w._proc.pid).ppid()
            assert (forked_by == server_pid(name)) if is_warm else (forked_by == FS._forkserver._forkserver_pid)
            got = []
            for case in models:
                out = w.execute(Model(case.model_bytes, case.graph), feeds(case))
                got.append((out.status, [(o.dtype.str, o.shape, o.tobytes()) for o in out.outputs or []]))
            text = maps(w._proc.pid)
            libs[is_warm] = {k for k in ("libtorch_cpu", "libtvm", "onnxruntime_pybind11_state") if k in text}
            answers[is_warm] = got
    assert any(status == W.OK for status, _ in answers[False])
    assert answers[True] == answers[False]
    assert libs[True] == libs[False]


def test_a_crash_a_hang_and_a_hog_in_warm_workers_are_contained_and_classified(models):
    case = models[0]
    model, inputs = Model(case.model_bytes, case.graph), feeds(case)
    with W.Pool(timeout_s=120, memory_mb=1200) as pool, W.Pool(timeout_s=3) as short:
        assert pool.execute(warm("TorchGood"), model, inputs).ok
        server = server_pid("torch")
        seg = pool.execute(warm("TorchSegfault"), model, inputs)
        assert seg.status == W.CRASH and seg.error["signal"] == "SIGSEGV"
        hang = short.execute(warm("TorchHang"), model, inputs)
        assert hang.status == W.TIMEOUT and hang.wall_s < 10
        hog = pool.execute(warm("TorchHog"), model, inputs)
        assert hog.status == W.OOM, hog.error
        again = pool.execute(warm("TorchSegfault"), model, inputs)  # replaced, from the same server
        assert again.status == W.CRASH and pool.get(warm("TorchSegfault")).restarts == 2
        assert pool.execute(warm("TorchGood"), model, inputs).ok
        assert server_pid("torch") == server and psutil.Process(server).is_running()
        assert tasks(server) == 1


def test_an_import_that_starts_a_thread_falls_back_to_the_cold_server(models, monkeypatch):
    """A compiler whose import leaves a thread running is never forked: its server says which
    thread, is stopped, and its workers fork from the cold server and still answer."""
    kind = "tests.thread_at_import"
    monkeypatch.setattr(S, "WARM_PACKAGES", S.WARM_PACKAGES + (kind,))
    monkeypatch.setattr(S, "_COLD", {})
    case = models[0]
    with W.Worker(warm("ThreadAtImport")) as w:
        out = w.execute(Model(case.model_bytes, case.graph), feeds(case))
        assert out.ok, out.error
        assert psutil.Process(w._proc.pid).ppid() == FS._forkserver._forkserver_pid
    why = S.cold_reason(kind)
    assert why is not None and "started threads" in why and "dlgate-test-pool" in why
    assert kind not in S._SERVERS
    deadline = time.monotonic() + 10  # the refused server was killed; it is collected at the next start
    while S._RETIRED and time.monotonic() < deadline:
        S._reap()
        time.sleep(0.05)
    assert not S._RETIRED
    decided = S._COLD[kind]
    with W.Worker(warm("ThreadAtImport")) as w:  # decided for this environment: no second try
        assert w.start() and psutil.Process(w._proc.pid).ppid() == FS._forkserver._forkserver_pid
    assert S._COLD[kind] is decided and kind not in S._SERVERS


def test_a_change_of_what_an_import_may_read_retires_the_server(models, monkeypatch):
    """A server imported its compiler in the environment of its start: when a variable a
    compiler may read at import changes, the next worker forks from a new server, and the old
    one ends once its workers have. Other variables (a test's FAKE_BUG) are the worker's own."""
    case = models[0]
    with W.Worker(warm("TorchGood")) as w:
        assert w.start(), w.unavailable
        first = server_pid("torch")
        monkeypatch.setenv("FAKE_BUG", "1")
        with W.Worker(warm("TorchGood")) as w2:
            assert w2.start() and server_pid("torch") == first
        monkeypatch.setenv("PYTORCH_DLGATE_TEST_ENV", "1")
        with W.Worker(warm("TorchGood")) as w2:
            assert w2.execute(Model(case.model_bytes, case.graph), feeds(case)).ok
            second = server_pid("torch")
            assert second != first and psutil.Process(w2._proc.pid).ppid() == second
        assert psutil.Process(first).is_running()  # its worker w still runs
    deadline = time.monotonic() + 20
    while first in S._RETIRED and time.monotonic() < deadline:
        S._reap()
        time.sleep(0.05)
    assert first not in S._RETIRED and not psutil.pid_exists(first)


def test_the_start_up_bench_prints_cold_against_warm_as_a_ratio(capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_exec", os.path.join(REPO, "bench", "exec.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.start_up(["tests.warm_backends:TorchGood", "tests.fake_backends:Good"], 2) == 0
    torch_line, good_line = capsys.readouterr().out.splitlines()
    cold, warm_s, ratio = (float(x) for x in
                           __import__("re").search(r"cold median ([\d.]+) s, warm median ([\d.]+) s: ([\d.]+)x",
                                                   torch_line).groups())
    assert ratio > 1 and ratio == pytest.approx(cold / warm_s, rel=0.1) and "the torch server" in torch_line
    assert "loaded: cold torch, warm torch" in torch_line  # the same compiler libraries either way
    assert "no warm server" in good_line


def test_a_warm_server_starts_without_the_gates_secrets(monkeypatch):
    """A server keeps the environment it started in for as long as it lives: it is started,
    as every worker is, with the secrets out of it."""
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_" + "w" * 36)
    monkeypatch.setenv("PYTORCH_DLGATE_TEST_RUN", "1")  # what an import may read changed: a new server
    with W.Worker(warm("TorchGood")) as w:
        assert w.start(), w.unavailable
        with open(f"/proc/{server_pid('torch')}/environ", "rb") as f:
            env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
    assert env.get(b"PYTORCH_DLGATE_TEST_RUN") == b"1" and b"GITHUB_TOKEN" not in env
    assert os.environ["GITHUB_TOKEN"].startswith("ghp_")


_GATE = """
import sys
sys.path.insert(0, {repo!r})
from dlgate.backends.base import BackendSpec
from dlgate.exec import servers as S
from dlgate.exec import worker as W

S.WARM_PACKAGES = S.WARM_PACKAGES + ("tests.slow_import",)
W.Worker(BackendSpec("tests.warm_backends:SlowImport")).start()
"""


def test_a_server_still_importing_dies_with_the_gate(tmp_path):
    """SIGKILL of the gate while its server imports: the server goes at once (the kernel's
    parent-death signal), not when its import is over."""
    gate = subprocess.Popen([sys.executable, "-c", _GATE.format(repo=REPO)], cwd=str(tmp_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = None
    try:
        deadline = time.monotonic() + 60
        while server is None and time.monotonic() < deadline:
            for p in psutil.Process(gate.pid).children():
                try:
                    if "tests.slow_import" in " ".join(p.cmdline()):
                        server = p
                except psutil.Error:
                    continue
            time.sleep(0.05)
        assert server is not None, "no warm server started"
        time.sleep(1.0)  # well into its import, which takes 30 s
        assert server.is_running()
        gate.kill()
        gate.wait(30)
        t0 = time.monotonic()
        gone, alive = psutil.wait_procs([server], timeout=10)
        assert not alive and time.monotonic() - t0 < 10
    finally:
        if gate.poll() is None:
            gate.kill()
            gate.wait(30)
        if server is not None and server.is_running():  # the test failed: leave nothing running
            server.kill()
