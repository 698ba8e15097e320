"""The worker process's side of :mod:`dlgate.exec.worker`: what runs inside a worker, forked
from the fork server or started in another interpreter (a base build's environment). It
creates the backend, proves it runs (``Backend.start``), then serves compile-and-run jobs
over its connection until told to stop, classifying every failure into an outcome status
(:mod:`dlgate.exec.outcome`). Its own process group dies with the gate, however the gate
dies (:func:`die_with_parent`).

    python -m dlgate.exec.child SPEC FD LOG [pdeathsig]   (a worker in another interpreter)
"""
from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
import traceback

from dlgate.backends.base import PHASE, BackendSpec, Model, Unavailable
from dlgate.backends.registry import create
from dlgate.exec.outcome import COMPILE_ERROR, OK, OOM, RUN_ERROR, UNAVAILABLE, UNSUPPORTED


def frames(exc: BaseException, keep: int = 6) -> list:
    tb = traceback.extract_tb(exc.__traceback__)
    return [f"{os.path.basename(f.filename)}:{f.name}" for f in tb[-keep:]]


#: Clock stamps that loggers (dmlc/TVM's "[22:08:41] file.cc:12: ...") put in messages: they
#: make two runs of one failure differ and tell the reader nothing.
STAMP = re.compile(r"^\[\d{2}:\d{2}:\d{2}(\.\d+)?\] ", re.M)


def error_record(exc: BaseException, stage: str) -> dict:
    msg = STAMP.sub("", str(exc))
    out = {"type": type(exc).__name__, "message": msg[:4000], "stage": stage, "frames": frames(exc)}
    phase = getattr(exc, PHASE, None)
    if isinstance(phase, str):
        out["phase"] = phase
    return out


#: prctl(2) option: the signal this process gets when its parent (thread) exits.
PR_SET_PDEATHSIG = 1


def die_with_parent(conn, pdeathsig: bool) -> None:
    """Make this worker and its process group die with the gate, however the gate dies
    (SIGKILL included), even while a compile hangs. On Linux (``pdeathsig``) the kernel
    sends SIGKILL when the parent goes, which no hung compile can hold up. Everywhere, a
    watchdog thread kills the process group (what the backend started too) when the gate's
    end of ``conn`` closes (seen as a hang-up, without reading: the main thread owns the
    reads) or the parent changes; a gate that died before this point is noticed at once.
    ``pdeathsig`` only where the gate started the worker from its main thread: the kernel
    ties the signal to the thread that forked, and another thread may end first."""
    if pdeathsig and sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    import select

    parent = os.getppid()
    hangup = select.POLLHUP | getattr(select, "POLLRDHUP", 0)
    poller = select.poll()
    poller.register(conn.fileno(), hangup)

    def watch() -> None:
        while True:
            events = poller.poll(200)
            if any(ev & select.POLLNVAL for _, ev in events):
                return  # the worker closed its own end: it is on its way out
            if any(ev & hangup for _, ev in events) or os.getppid() != parent:
                os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="dlgate-parent-watchdog", daemon=True).start()


def run_job(backend, compiled, inputs) -> dict:
    """One run of a compiled model: status and outputs or error."""
    try:
        outs = backend.run(compiled, inputs)
        return {"status": OK, "outputs": [o for o in outs]}
    except Unavailable as e:  # the device went away (a provider lost mid-run): cannot run, not a finding
        return {"status": UNAVAILABLE, "error": error_record(e, "run")}
    except MemoryError as e:
        return {"status": OOM, "error": error_record(e, "run")}
    except Exception as e:  # every run-time failure becomes a classified outcome
        return {"status": UNSUPPORTED if backend.unsupported(e) else RUN_ERROR, "error": error_record(e, "run")}


#: Linux's scheduler group of a session (``CONFIG_SCHED_AUTOGROUP``): its niceness, writable by its members.
AUTOGROUP = "/proc/self/autogroup"


def keep_niceness() -> None:
    """Give this new session's scheduler group the process's own niceness. Where Linux groups
    processes by session for scheduling (autogroup, on by default on most desktops), the
    nice value of a process counts only against its own session's processes: a worker in a
    session of its own would compete at full weight with everything else on the machine,
    however ``nice`` the gate was started (``nice -n 19 dlgate run`` beside a test run or a
    build). Only a positive niceness is passed on (raising a group's niceness needs no
    privilege); elsewhere, or where the file cannot be written, nothing changes."""
    try:
        nice = os.nice(0)
        if nice > 0 and os.path.exists(AUTOGROUP):
            with open(AUTOGROUP, "w") as f:
                f.write(str(nice))
    except OSError:
        pass


def serve(spec: BackendSpec, conn, log_path: str, pdeathsig: bool = False, env: dict | None = None) -> None:
    """The worker's main loop. What the backend prints (C++ warnings included) goes to a
    log file, not the gate's console; its tail is attached to failures. ``env``: the
    environment the worker runs in (the gate's at this start, secrets out); a worker forked
    from the fork server would otherwise keep the server's, from the gate's first start."""
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    if hasattr(os, "setsid"):  # its own process group: a killed worker's group goes too, escapees included
        os.setsid()
        keep_niceness()
    die_with_parent(conn, pdeathsig)
    try:  # never created here: the gate removes the name once this process started
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    except FileNotFoundError:
        fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    try:
        backend = create(spec)
        backend.start()  # imports the compiler and proves it runs on its device (Backend.start)
        conn.send(("ready", backend.describe()))
    except Unavailable as e:
        conn.send(("unavailable", str(e)))
        return
    except Exception as e:  # a backend that cannot even start is reported, not raised
        conn.send(("broken", error_record(e, "init")))
        return
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg[0] == "stop":
            return
        _, job, onnx_bytes, graph, inputs, *rest = msg
        more_inputs = rest[0] if rest else []
        model = Model(onnx=onnx_bytes, graph=graph)
        res = {"compile_s": 0.0, "run_s": 0.0}
        t0 = time.perf_counter()
        try:
            compiled = backend.compile(model)
        except Unavailable as e:  # e.g. onnxruntime dropped the provider for this session
            res.update(status=UNAVAILABLE, error=error_record(e, "compile"), compile_s=time.perf_counter() - t0)
        except MemoryError as e:
            res.update(status=OOM, error=error_record(e, "compile"), compile_s=time.perf_counter() - t0)
        except Exception as e:  # every compiler failure becomes a classified outcome
            res.update(status=UNSUPPORTED if backend.unsupported(e) else COMPILE_ERROR, error=error_record(e, "compile"),
                       compile_s=time.perf_counter() - t0)
        else:
            t1 = time.perf_counter()
            res["compile_s"] = t1 - t0
            conn.send(("phase", job, "run"))  # compiled: the gate's heartbeat says "running" from here
            try:
                res["feedback"] = backend.feedback(compiled)
            except Exception as e:  # feedback never fails the case; the gate reads the error
                res["feedback"] = {"error": f"{type(e).__name__}: {e}"[:500]}
            try:
                res["rewrites"] = backend.rewrites(compiled)
            except Exception:  # naming what a compiler did never fails the case
                res["rewrites"] = None
            res.update(run_job(backend, compiled, inputs))
            res["run_s"] = time.perf_counter() - t1
            if res["status"] == OK and more_inputs:
                res["more"] = []
                for xs in more_inputs:  # compiled once, run at each further input set
                    t2 = time.perf_counter()
                    m = run_job(backend, compiled, xs)
                    m["run_s"] = time.perf_counter() - t2
                    res["more"].append(m)
        try:
            conn.send(("done", job, res))
        except Exception as e:  # e.g. outputs that cannot be pickled
            conn.send(("done", job, {"status": RUN_ERROR, "error": error_record(e, "result"), "compile_s": res["compile_s"],
                                     "run_s": res["run_s"]}))


def external_main(argv: list) -> None:
    from multiprocessing.connection import Connection

    name, device, level, options = json.loads(argv[0])
    spec = BackendSpec(name, device, level, tuple(tuple(kv) for kv in options))
    serve(spec, Connection(int(argv[1])), argv[2], pdeathsig=argv[3:4] == ["pdeathsig"])


if __name__ == "__main__":
    external_main(sys.argv[1:])
