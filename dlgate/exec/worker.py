"""Isolated, long-lived worker processes that host one backend each.

Every compile and run happens in a worker, never in the gate's own process. The worker
imports its backend once and serves case after case. The parent enforces a wall-clock
timeout and a memory cap (resident set size, polled), and classifies what kills a worker:
a signal (crash, with the signal's name), the timeout, or the memory cap (oom). A fresh
worker replaces a dead one on the next case, so a crashing compiler never stops a batch.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field

from dlgate.backends.base import BackendSpec, Model, Unavailable

#: Outcome statuses, in the order a case can reach them.
OK, UNSUPPORTED, COMPILE_ERROR, RUN_ERROR, CRASH, TIMEOUT, OOM, UNAVAILABLE = (
    "ok", "unsupported", "compile_error", "run_error", "crash", "timeout", "oom", "unavailable")

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass
class Outcome:
    status: str
    outputs: list | None = None
    error: dict | None = None  # type, message, stage, frames (innermost last), signal
    compile_s: float = 0.0
    run_s: float = 0.0
    wall_s: float = 0.0  # as seen by the parent, harness included
    backend: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == OK


def _frames(exc: BaseException, keep: int = 6) -> list:
    tb = traceback.extract_tb(exc.__traceback__)
    return [f"{os.path.basename(f.filename)}:{f.name}" for f in tb[-keep:]]


#: Clock stamps that loggers (dmlc/TVM's "[22:08:41] file.cc:12: ...") put in messages: they
#: make two runs of one failure differ and tell the reader nothing.
_STAMP = re.compile(r"^\[\d{2}:\d{2}:\d{2}(\.\d+)?\] ", re.M)


def _error(exc: BaseException, stage: str) -> dict:
    msg = _STAMP.sub("", str(exc))
    return {"type": type(exc).__name__, "message": msg[:4000], "stage": stage, "frames": _frames(exc)}


def _serve(spec: BackendSpec, conn, log_path: str) -> None:
    """The worker's main loop. What the backend prints (C++ warnings included) goes to a
    log file, not the gate's console; its tail is attached to failures."""
    os.setsid()  # its own process group, so a timeout kills what it spawned too
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    from dlgate.backends.registry import create

    try:
        backend = create(spec)
        conn.send(("ready", backend.describe()))
    except Unavailable as e:
        conn.send(("unavailable", str(e)))
        return
    except Exception as e:  # a backend that cannot even start is reported, not raised
        conn.send(("broken", _error(e, "init")))
        return
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg[0] == "stop":
            return
        _, job, onnx_bytes, graph, inputs = msg
        model = Model(onnx=onnx_bytes, graph=graph)
        res = {"compile_s": 0.0, "run_s": 0.0}
        t0 = time.perf_counter()
        try:
            compiled = backend.compile(model)
        except MemoryError as e:
            res.update(status=OOM, error=_error(e, "compile"), compile_s=time.perf_counter() - t0)
        except Exception as e:  # every compiler failure becomes a classified outcome
            res.update(status=UNSUPPORTED if backend.unsupported(e) else COMPILE_ERROR, error=_error(e, "compile"),
                       compile_s=time.perf_counter() - t0)
        else:
            t1 = time.perf_counter()
            res["compile_s"] = t1 - t0
            try:
                outs = backend.run(compiled, inputs)
                res.update(status=OK, outputs=[o for o in outs])
            except MemoryError as e:
                res.update(status=OOM, error=_error(e, "run"))
            except Exception as e:  # likewise for run-time failures
                res.update(status=UNSUPPORTED if backend.unsupported(e) else RUN_ERROR, error=_error(e, "run"))
            res["run_s"] = time.perf_counter() - t1
        try:
            conn.send(("done", job, res))
        except Exception as e:  # e.g. outputs that cannot be pickled
            conn.send(("done", job, {"status": RUN_ERROR, "error": _error(e, "result"), "compile_s": res["compile_s"],
                                     "run_s": res["run_s"]}))


class Worker:
    """One backend in one process, restarted on demand."""

    def __init__(self, spec: BackendSpec, timeout_s: float = 60.0, memory_mb: int = 4096,
                 start_timeout_s: float = 120.0, python: str | None = None, env: dict | None = None):
        self.spec = spec
        self.python = python  # another environment's interpreter (the base build), or None
        self.env = dict(env or {})
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.start_timeout_s = start_timeout_s
        self._ctx = mp.get_context("spawn")
        self._proc = None
        self._conn = None
        self._jobs = 0
        self.describe: dict = {}
        self.unavailable: str | None = None
        self.restarts = 0
        fd, self.log_path = tempfile.mkstemp(prefix="dlgate-worker-", suffix=".log")
        os.close(fd)
        self._log_pos = 0

    def log_tail(self, max_lines: int = 30) -> str:
        """What the worker printed since the current job started (last lines)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_pos)
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-max_lines:])

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> bool:
        """Start the process; False (with ``unavailable`` set) if the backend cannot run here."""
        if self._proc is not None and self._proc.is_alive():
            return True
        if self.unavailable is not None:
            return False
        self._log_pos = _size(self.log_path)
        if self.python:
            try:
                self._proc = _External(self.python, self.spec, self.log_path, self.env)
            except OSError as e:
                self.unavailable = f"{self.spec.label()}: cannot start {self.python}: {e.strerror or e}"
                return False
            parent = self._proc.conn
        else:
            parent, child = self._ctx.Pipe()
            proc = self._ctx.Process(target=_serve, args=(self.spec, child, self.log_path), daemon=True)
            try:
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
        except EOFError:
            code = self._proc.exitcode
            self._kill()
            self.unavailable = f"{self.spec.label()} died while starting ({_describe_exit(code)})"
            return False
        if kind == "ready":
            self.describe = payload
            return True
        self._kill()
        self.unavailable = payload if kind == "unavailable" else f"{payload['type']}: {payload['message']}"
        return False

    def close(self) -> None:
        self._stop()
        try:
            os.unlink(self.log_path)
        except OSError:
            pass

    def _stop(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(("stop",))
                self._proc.join(timeout=5)
            except (BrokenPipeError, OSError):
                pass
        self._kill()

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.is_alive():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                proc.kill()
        proc.join(timeout=10)
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- work -------------------------------------------------------------------------
    def execute(self, model: Model, inputs: list) -> Outcome:
        t0 = time.perf_counter()
        if not self.start():
            return Outcome(UNAVAILABLE, error={"type": "Unavailable", "message": self.unavailable, "stage": "init",
                                               "frames": []}, wall_s=time.perf_counter() - t0)
        self._jobs += 1
        job = self._jobs
        self._log_pos = _size(self.log_path)
        try:
            self._conn.send(("exec", job, model.onnx, model.graph, list(inputs)))
        except (BrokenPipeError, OSError):
            return self._died(t0, "send")
        deadline = time.monotonic() + self.timeout_s
        polls = 0
        while True:
            polls += 1
            if self._conn.poll(0.02):
                try:
                    kind, got, res = self._conn.recv()
                except EOFError:
                    return self._died(t0, "run")
                if got != job:
                    continue
                err = res.get("error")
                if err is not None:
                    err["log"] = self.log_tail()
                return Outcome(res["status"], res.get("outputs"), err, res["compile_s"], res["run_s"],
                               time.perf_counter() - t0, self.describe)
            if not self._proc.is_alive():
                if self._conn.poll(0):
                    continue
                return self._died(t0, "run")
            if time.monotonic() > deadline:
                log = self.log_tail()
                self._kill()
                self.restarts += 1
                return Outcome(TIMEOUT, error={"type": "Timeout", "message": f"no answer within {self.timeout_s:g} s",
                                               "stage": "run", "frames": [], "log": log},
                               wall_s=time.perf_counter() - t0, backend=self.describe)
            rss = _rss_mb(self._proc.pid, group=polls % 25 == 0) if polls % 5 == 0 else None
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
    compiler: ``PYTHON -m dlgate.exec.worker`` speaking the same protocol over a socket
    pair. (multiprocessing's spawn would hand the child this process's ``sys.path``, so
    it would import this environment's compiler.) Offers the ``multiprocessing.Process``
    methods the Worker uses."""

    def __init__(self, python: str, spec: BackendSpec, log_path: str, env: dict):
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        arg = json.dumps([spec.name, spec.device, spec.opt_level, [list(kv) for kv in spec.options]])
        full_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # not this environment's path
        full_env.update(env)
        try:
            self.popen = subprocess.Popen([python, "-m", "dlgate.exec.worker", arg, str(theirs.fileno()), log_path],
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


def _external_main(argv: list) -> None:
    from multiprocessing.connection import Connection

    name, device, level, options = json.loads(argv[0])
    spec = BackendSpec(name, device, level, tuple(tuple(kv) for kv in options))
    _serve(spec, Connection(int(argv[1])), argv[2])


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


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


def _rss_mb(pid: int, group: bool = False) -> float | None:
    """Resident memory of the worker, or (``group``) of its whole process group, since a
    backend may spawn compiler processes. Read from /proc; None where that is missing."""
    def rss(p) -> int:
        with open(f"/proc/{p}/statm") as f:
            return int(f.read().split()[1]) * _PAGE

    try:
        total = rss(pid)
    except (OSError, IndexError, ValueError):
        return None
    if group:
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == pid:
                continue
            try:
                with open(f"/proc/{name}/stat") as f:
                    pgid = int(f.read().rsplit(")", 1)[1].split()[2])
                if pgid == pid:
                    total += rss(name)
            except (OSError, IndexError, ValueError):
                continue
    return total / 2**20


class Pool:
    """Workers by backend spec, started lazily and kept for the batch."""

    def __init__(self, timeout_s: float = 60.0, memory_mb: int = 4096, python: str | None = None,
                 env: dict | None = None):
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.python = python
        self.env = env
        self.workers: dict = {}
        #: Time spent inside the backends (their own compile and run times, as the workers
        #: measure them) and starting workers (interpreter and backend imports).
        self.busy_s = 0.0
        self.start_s = 0.0

    def get(self, spec: BackendSpec) -> Worker:
        if spec not in self.workers:
            self.workers[spec] = Worker(spec, self.timeout_s, self.memory_mb, python=self.python, env=self.env)
        return self.workers[spec]

    def execute(self, spec: BackendSpec, model: Model, inputs: list) -> Outcome:
        w = self.get(spec)
        if w._proc is None or not w._proc.is_alive():
            t0 = time.perf_counter()
            w.start()
            self.start_s += time.perf_counter() - t0
        out = w.execute(model, inputs)
        self.busy_s += out.compile_s + out.run_s
        return out

    def close(self) -> None:
        for w in self.workers.values():
            w.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


if __name__ == "__main__":
    _external_main(sys.argv[1:])
