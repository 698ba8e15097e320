"""Isolated, long-lived worker processes that host one backend each.

Every compile and run happens in a worker, never in the gate's own process. The worker
imports its backend once and serves case after case. The parent enforces a timeout and a
memory cap (resident set size of the worker's whole process tree, polled
through psutil on every OS: :mod:`dlgate.exec.proctree`), and classifies what kills a worker:
a signal (crash, with the signal's name), the timeout, or the memory cap (oom). The timeout
counts the worker's own time: wall-clock time, less the time its main thread was runnable but
waited for a CPU that the machine gave to other work (Linux's run-queue wait,
``/proc/PID/schedstat``; elsewhere, wall-clock time). A compile that is slow because the
machine is busy (a ``nice -n 19`` campaign beside a build, a loaded CI runner) is then not
taken for a hang; a hang, spinning or blocked, still ends at the limit. A fresh
worker replaces a dead one on the next case, so a crashing compiler never stops a batch.
Workers are forked from a fork server that has imported the worker's own side only
(:mod:`dlgate.exec.child`; :func:`_context`), so a restart costs the backend's imports, not a
fresh interpreter's; a backend of a compiler with a warm server (TVM, PyTorch: one server per
compiler, proven single-threaded after its import, :mod:`dlgate.exec.servers`) forks with its
compiler already imported, so its restart costs neither.

A worker ends with every process it started (terminate, a grace, kill; and, where process
groups exist, its group). Workers never outlive the gate: a worker and its process group die when the gate dies,
however it dies (:func:`dlgate.exec.child.die_with_parent`), and every worker still running when the gate
exits or is interrupted is killed and its log file removed (:func:`close_all`).
"""
from __future__ import annotations

import atexit
import json
import multiprocessing as mp
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from multiprocessing import util as mp_util

from dlgate.backends.base import BackendSpec, Model
from dlgate.exec import servers
from dlgate.exec.child import serve
from dlgate.exec.devicecheck import recheck
from dlgate.exec.proctree import ProcessTree, end_tree
from dlgate.secrets import redact_obj, scrubbed_env

# The outcome statuses and Outcome are part of this module's interface (callers read W.OK,
# W.Outcome); they live in dlgate.exec.outcome, which the worker's own side imports too.
from dlgate.exec.outcome import (COMPILE_ERROR, CRASH, OK, OOM, RUN_ERROR, TIMEOUT,  # noqa: F401
                                 UNAVAILABLE, UNSUPPORTED, Outcome)


def queued_s(pid: int) -> float | None:
    """Seconds process ``pid``'s main thread has spent runnable but waiting for a CPU (the
    kernel's run-queue wait, ``/proc/PID/schedstat``), or None where the kernel does not say."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def _waited(before: float | None, now: float | None) -> float:
    return max(0.0, now - before) if before is not None and now is not None else 0.0


class Worker:
    """One backend in one process, restarted on demand."""

    def __init__(self, spec: BackendSpec, timeout_s: float = 60.0, memory_mb: int = 4096,
                 start_timeout_s: float = 120.0, python: str | None = None, env: dict | None = None,
                 warm: bool = True):
        self.spec = spec
        #: Fork from the warm server of the backend's compiler where there is one
        #: (:mod:`dlgate.exec.servers`); False: always from the cold server (``bench/exec.py``).
        self.warm = warm
        self.python = python  # another environment's interpreter (the base build), or None
        self.env = dict(env or {})
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.start_timeout_s = start_timeout_s
        self._ctx = _context()
        self._proc = None
        self._conn = None
        self._jobs = 0
        self.describe: dict = {}
        self.unavailable: str | None = None
        #: Why a worker that had started cannot run any more (its device lost mid-run), else None.
        self.lost: str | None = None
        self.restarts = 0
        #: A start or a job is in flight: the process cannot answer a polite stop.
        self._busy = False
        #: The current process's log, read through this descriptor: a temp file whose name
        #: exists only while the process starts (it opens the file by name), so no log is
        #: left on disk however the gate ends. None before the first start.
        self._log_fd: int | None = None
        self.log_path: str | None = None
        self._log_pos = 0
        _LIVE.add(self)

    def log_tail(self, max_lines: int = 30) -> str:
        """What the worker printed since the current job started (last lines)."""
        try:
            data = os.pread(self._log_fd, max(0, self._log_size() - self._log_pos), self._log_pos)
        except (OSError, TypeError):  # no log yet
            return ""
        return "\n".join(data.decode(errors="replace").splitlines()[-max_lines:])

    def _log_size(self) -> int:
        return os.fstat(self._log_fd).st_size if self._log_fd is not None else 0

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> bool:
        """Start the process; False (with ``unavailable`` set) if the backend cannot run here."""
        if self._proc is not None and self._proc.is_alive():
            return True
        if self.unavailable is not None:
            return False
        self._close_log()
        self._log_fd, self.log_path = tempfile.mkstemp(prefix="dlgate-worker-", suffix=".log")
        try:
            ok = self._start()
            if not ok and self.describe:  # it had started before: the device went away since
                self.lost = self.unavailable
            return ok
        finally:  # started, failed or killed: the process has opened its log, or never will
            self._unlink_log()

    def _start(self) -> bool:
        self._log_pos = 0
        pdeathsig = threading.current_thread() is threading.main_thread()
        self._busy = True
        if self.python:
            try:
                self._proc = _External(self.python, self.spec, self.log_path, self.env, pdeathsig)
            except OSError as e:
                self.unavailable = f"{self.spec.label()}: cannot start {self.python}: {e.strerror or e}"
                return False
            parent = self._proc.conn
        else:
            parent, child = self._ctx.Pipe()
            if self._ctx.get_start_method() == "forkserver":
                # forked by the server's only thread: the signal follows the server, which ends with the gate
                pdeathsig = True
            try:
                with _without_secrets():
                    server = None
                    if self.warm and self._ctx.get_start_method() == "forkserver":
                        server = servers.server_for(self.spec, self.start_timeout_s)
                    make = self._ctx.Process if server is None else server.Process
                    proc = make(target=serve, args=(self.spec, child, self.log_path, pdeathsig, dict(os.environ)),
                                daemon=True)
                    proc.start()
            finally:
                child.close()
            self._proc = proc
        self._conn = parent
        if not parent.poll(self.start_timeout_s):
            self._kill()
            self.unavailable = f"{self.spec.label()} did not start within {self.start_timeout_s:.0f} s"
            return False
        try:
            kind, payload = parent.recv()
            payload = redact_obj(payload)  # what a backend says about itself is its text, like its errors
        except EOFError:
            code = self._proc.exitcode
            self._kill()
            self.unavailable = f"{self.spec.label()} died while starting ({_describe_exit(code)})"
            return False
        if kind == "ready":
            self.describe = payload
            self._busy = False
            return True
        self._kill()
        self.unavailable = payload if kind == "unavailable" else f"{payload['type']}: {payload['message']}"
        return False

    def close(self) -> None:
        """Stop the process (and its process group) and drop the log."""
        self._stop()
        self._unlink_log()
        self._close_log()
        _LIVE.discard(self)

    def _unlink_log(self) -> None:
        path, self.log_path = self.log_path, None
        if path is not None:
            try:
                os.unlink(path)
            except OSError:
                pass

    def _close_log(self) -> None:
        fd, self._log_fd = self._log_fd, None
        if fd is not None:
            os.close(fd)

    def _stop(self) -> None:
        """Ask an idle worker to stop; kill a busy one (a hung compile never reads the
        request, and an interrupted gate must not wait for it)."""
        if self._proc is not None and not self._busy and self._proc.is_alive():
            try:
                self._conn.send(("stop",))
                self._proc.join(timeout=5)
            except (BrokenPipeError, OSError):
                pass
        self._kill()

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        self._busy = False
        if proc is None:
            return
        # the whole tree, and the group too: also when the worker itself is gone but left processes behind
        end_tree(proc, group=True)
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- work -------------------------------------------------------------------------
    def execute(self, model: Model, inputs: list, timeout_s: float | None = None,
                more: list | None = None, on_phase=None) -> Outcome:
        """Run one job; ``timeout_s`` shortens (never lengthens) the worker's timeout.
        ``more``: further input sets the compiled model also runs at (``Outcome.more``).
        ``on_phase(stage)``, when given, hears "compile" when the job is sent and "run" when
        the worker says the model compiled."""
        t0 = time.perf_counter()
        limit = self.timeout_s if timeout_s is None else min(self.timeout_s, timeout_s)
        if not self.start():
            return Outcome(UNAVAILABLE, error={"type": "Unavailable", "message": self.unavailable, "stage": "init",
                                               "frames": []}, wall_s=time.perf_counter() - t0)
        self._jobs += 1
        job = self._jobs
        self._log_pos = self._log_size()
        self._busy = True
        try:
            msg = ("exec", job, model.onnx, model.graph, list(inputs))
            self._conn.send(msg + (list(more),) if more else msg)
        except (BrokenPipeError, OSError):
            return self._died(t0, "send")
        if on_phase is not None:
            on_phase("compile")
        start = time.monotonic()
        deadline = start + limit
        polls = 0
        tree = ProcessTree(self._proc.pid)
        queued0 = queued_s(self._proc.pid)  # time the worker waits for a CPU is not its own
        while True:
            polls += 1
            if self._conn.poll(0.02):
                try:
                    kind, got, res = self._conn.recv()
                except EOFError:
                    return self._died(t0, "run")
                if got != job:
                    continue
                if kind == "phase":
                    if on_phase is not None:
                        on_phase(res)
                    continue
                self._busy = False
                if res["status"] == UNAVAILABLE:
                    # the backend lost its device mid-run: this case and every later one
                    # cannot run (the gate fails with exit status 4), none is a finding
                    self.unavailable = self.lost = redact_obj(f"{self.spec.label()}: {res['error']['message']}")
                    self._kill()
                err = res.get("error")
                if err is not None:
                    err["log"] = self.log_tail()
                    err = redact_obj(err)  # the worker's words: no secret crosses into dlgate's files
                extra = []
                for m in res.get("more") or []:
                    e = m.get("error")
                    if e is not None:
                        e["log"] = ""
                        e = redact_obj(e)
                    extra.append(Outcome(m["status"], m.get("outputs"), e, 0.0, m["run_s"], 0.0, self.describe))
                return Outcome(res["status"], res.get("outputs"), err, res["compile_s"], res["run_s"],
                               time.perf_counter() - t0, self.describe, extra, res.get("rewrites"),
                               res.get("feedback"))
            if not self._proc.is_alive():
                if self._conn.poll(0):
                    continue
                return self._died(t0, "run")
            if time.monotonic() > deadline:
                waited = _waited(queued0, queued_s(self._proc.pid))
                deadline = start + limit + waited  # starved, not slow: it gets that time back
                if deadline > time.monotonic():
                    continue
                log = self.log_tail()
                if waited >= 0.5:
                    log = f"[dlgate] besides its {limit:g} s, the worker waited {waited:.1f} s for a CPU\n{log}"
                self._kill()
                self.restarts += 1
                return Outcome(TIMEOUT, error={"type": "Timeout", "message": f"no answer within {limit:g} s",
                                               "stage": "run", "frames": [], "log": log},
                               wall_s=time.perf_counter() - t0, backend=self.describe)
            rss = None
            if polls % 5 == 0:  # every 0.1 s; new descendants are looked for every 0.5 s (a process-table scan)
                if polls % 25 == 5:
                    tree.refresh()
                rss = tree.rss_mb()
            if rss is not None and rss > self.memory_mb:
                log = self.log_tail()
                self._kill()
                self.restarts += 1
                # the measured size varies run to run: it goes with the log, not the message
                return Outcome(OOM, error={"type": "OutOfMemory",
                                           "message": f"resident memory exceeded the {self.memory_mb} MB cap",
                                           "stage": "run", "frames": [],
                                           "log": f"[dlgate] resident memory reached {rss:.0f} MB\n{log}"},
                               wall_s=time.perf_counter() - t0, backend=self.describe)

    def _died(self, t0: float, stage: str) -> Outcome:
        proc = self._proc
        if proc is not None:
            proc.join(timeout=5)
        code = proc.exitcode if proc is not None else None
        log = self.log_tail()
        self._kill()
        self.restarts += 1
        sig = _signal_name(code)
        status = OOM if sig == "SIGKILL" else CRASH  # the kernel's OOM killer sends SIGKILL
        return Outcome(status, error={"type": "Crash" if status == CRASH else "OutOfMemory",
                                      "message": f"worker died: {_describe_exit(code)}", "stage": stage,
                                      "frames": [], "signal": sig, "log": log},
                       wall_s=time.perf_counter() - t0, backend=self.describe)


class _External:
    """A worker in another interpreter, e.g. the environment holding the base build of the
    compiler: ``PYTHON -m dlgate.exec.child`` speaking the same protocol over a socket
    pair. (multiprocessing's spawn would hand the child this process's ``sys.path``, so
    it would import this environment's compiler.) Offers the ``multiprocessing.Process``
    methods the Worker uses."""

    def __init__(self, python: str, spec: BackendSpec, log_path: str, env: dict, pdeathsig: bool = False):
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        arg = json.dumps([spec.name, spec.device, spec.opt_level, [list(kv) for kv in spec.options]])
        full_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # not this environment's path
        full_env = scrubbed_env(dict(full_env, **env))  # base.env merged in, secrets out (dlgate.secrets)
        try:
            self.popen = subprocess.Popen([python, "-m", "dlgate.exec.child", arg, str(theirs.fileno()), log_path,
                                           "pdeathsig" if pdeathsig else "-"],
                                          pass_fds=(theirs.fileno(),), env=full_env, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.pid = self.popen.pid

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def exitcode(self):
        return self.popen.poll()  # negative signal number when killed, as multiprocessing's

    def kill(self) -> None:
        self.popen.kill()

    def join(self, timeout=None) -> None:
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pass


#: What the fork server imports once, before it forks any worker: the worker's own module
#: (NumPy, onnx and dlgate's graph types; ~0.7 s of every spawned start). Never a compiler,
#: nor PyTorch: a compiler is imported by its own warm server, once proven fork-safe
#: (:mod:`dlgate.exec.servers`), or else by each worker after the fork.
FORKSERVER_PRELOAD = ["dlgate.exec.child"]


def _context():
    """How workers start. Where the platform has it (Linux, macOS), from multiprocessing's
    fork server: a process that this gate starts with its first worker, that imports
    ``FORKSERVER_PRELOAD`` and nothing else, and forks each worker from itself, so a worker
    starts in ~50 ms plus its backend's imports, instead of a fresh interpreter's ~0.8 s;
    a crash reduction starts one per crashing candidate. The server is single-threaded,
    ends when the gate ends (SIGKILL included: its pipe from the gate closes), and its
    workers with it (``child.die_with_parent``). Elsewhere (Windows), spawn: a fresh interpreter."""
    if "forkserver" not in mp.get_all_start_methods() or not _socket_fits():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(FORKSERVER_PRELOAD)
    return ctx


#: The longest path an AF_UNIX socket may have (Linux: 108 bytes with the final NUL; macOS:
#: 104), and the name multiprocessing gives the fork server's socket, in its temporary folder.
SOCKET_PATH_MAX, _LISTENER = 103, "listener-xxxxxxxx"


def _socket_fits() -> bool:
    """Whether the fork server's socket fits in multiprocessing's temporary folder (under
    ``TMPDIR``). A deep ``TMPDIR`` (a CI runner's work folder, a test's) would make the
    server fail to start, "AF_UNIX path too long": workers then start as on Windows."""
    try:
        return len(os.path.join(mp_util.get_temp_dir(), _LISTENER).encode()) <= SOCKET_PATH_MAX
    except OSError:  # no writable temporary folder: spawn says so itself
        return False


#: Held while a spawned worker starts without the secrets in this process's environment.
_ENV_LOCK = threading.Lock()


@contextmanager
def _without_secrets():
    """This process's environment without its secrets (:func:`dlgate.secrets.scrubbed_env`)
    while a worker is spawned: multiprocessing's spawn hands the child this process's
    environment and takes no other, and the fork server (started with the first worker)
    keeps the one it started with, so the secrets leave ``os.environ`` for the start and
    come back after; the worker is handed the same environment (``child.serve``'s ``env``).
    Workers started in threads (``dlgate probe --jobs``) take turns."""
    with _ENV_LOCK:
        keep = scrubbed_env(os.environ)
        removed = {k: v for k, v in os.environ.items() if k not in keep}
        for k in removed:
            del os.environ[k]
        try:
            yield
        finally:
            for k, v in removed.items():
                os.environ.setdefault(k, v)


def _signal_name(code) -> str | None:
    if code is None or code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _describe_exit(code) -> str:
    sig = _signal_name(code)
    return f"killed by {sig}" if sig else f"exit code {code}"


class Pool:
    """Workers by backend spec, started lazily and kept for the batch."""

    def __init__(self, timeout_s: float = 60.0, memory_mb: int = 4096, python: str | None = None,
                 env: dict | None = None, on_phase=None):
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.python = python
        self.env = env
        self.workers: dict = {}
        #: Time spent inside the backends (their own compile and run times, as the workers
        #: measure them) and starting workers (interpreter and backend imports).
        self.busy_s = 0.0
        self.start_s = 0.0
        #: A time.monotonic() instant no job may run past (a reduction's time bound), or None.
        self.deadline: float | None = None
        #: Seconds no job may take (a hang's reduction probes with a shorter timeout), or None.
        self.job_limit: float | None = None
        #: ``on_phase(label, stage)``: told "start" when a worker starts, "compile" when a job
        #: is sent and "run" once it compiled (the run's heartbeat names the phase), or None.
        self.on_phase = on_phase

    def get(self, spec: BackendSpec) -> Worker:
        if spec not in self.workers:
            self.workers[spec] = Worker(spec, self.timeout_s, self.memory_mb, python=self.python, env=self.env)
        return self.workers[spec]

    def execute(self, spec: BackendSpec, model: Model, inputs: list, more: list | None = None) -> Outcome:
        w = self.get(spec)
        tell = None if self.on_phase is None else (lambda stage, label=spec.label(): self.on_phase(label, stage))
        if w._proc is None or not w._proc.is_alive():
            if tell is not None:
                tell("start")
            t0 = time.perf_counter()
            w.start()
            self.start_s += time.perf_counter() - t0
        left = None if self.deadline is None else max(1.0, self.deadline - time.monotonic())
        if self.job_limit is not None:
            left = self.job_limit if left is None else min(left, self.job_limit)
        t0 = time.perf_counter()
        out = w.execute(model, inputs, left, more, tell)
        t1 = time.perf_counter()
        out = recheck(w, out)  # a failure in the device's words: is the device still there?
        self.start_s += time.perf_counter() - t1
        # a job that timed out spent its time in the backend, though it could not say so
        self.busy_s += time.perf_counter() - t0 if out.status == TIMEOUT else \
            out.compile_s + out.run_s + sum(m.run_s for m in out.more)
        # Every reply crosses here (errors, frames, log tails, timeouts and crashes included):
        # secrets a backend got hold of are replaced by *** before anything is written or shown.
        out.error = redact_obj(out.error)
        for m in out.more:
            m.error = redact_obj(m.error)
        return out

    def close(self, kill: bool = False) -> None:
        """Stop every worker (``kill``: at once, not even an idle one asked) and remove the logs."""
        for w in self.workers.values():
            if kill:
                w._kill()
            w.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        # interrupted (Ctrl-C, or `dlgate run`'s SIGTERM/SIGINT): no time is spent on goodbyes
        self.close(kill=exc_type is not None and issubclass(exc_type, KeyboardInterrupt))


#: Workers not closed yet (their log file exists, their process may run): what close_all ends.
_LIVE: set = set()


def close_all() -> None:
    """Kill every worker of this process still running and remove every log file: when the
    gate is interrupted, and at exit, so that no worker and no log outlives the gate,
    whatever path it leaves by."""
    for w in list(_LIVE):
        w._kill()
        w.close()


atexit.register(close_all)
