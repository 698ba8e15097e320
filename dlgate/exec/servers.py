"""Warm fork servers: one per compiler kind, which has imported that compiler once, so that a
worker of that kind forks with it already imported instead of importing it after the fork.

A worker start used to cost its backend's imports every time (TVM ~4 s of CPU, PyTorch ~2 s),
and a gate starts a reference and a candidate worker per run, and one more per crash or
timeout. A warm server pays the import once per gate process. Forking a process that
imported a compiler is only safe when no thread of it runs at the fork (a forked lock held by
a thread that does not exist in the child never opens), so each server proves it before it
serves: after the import it forks a probe child and then counts its own threads, which must
be exactly one (``/proc/self/task`` and ``threading``). The probe fork matters: NumPy's
OpenBLAS starts a thread pool at import (the cold server has it too) but stops it in its own
``pthread_atfork`` handler and restarts it lazily on the next BLAS call, so it never lives
across a fork; a thread that is still there after a fork would be forked with every worker. A
server that fails the proof, cannot import its compiler, or does not answer in time, is
stopped, and that kind falls back to the cold server for as long as the gate's environment
stays the one it failed in, as far as an import may read it (:func:`cold_reason` says why).

Kinds are the backend's ``Backend.package`` (what ``Backend.start`` imports first), for the
packages in ``WARM_PACKAGES`` only: one server each, so a backend under test never carries
another compiler's libraries (no TVM in the PyTorch server; TVM's own import loads PyTorch
through ``tvm_ffi``, as it does in a cold TVM worker). The server imports in the gate's
environment of its start, secrets out, with what ``child.serve`` sets before a backend's import
(``TORCHINDUCTOR_COMPILE_THREADS``), under the gate's ``sys.path``; a change of a variable a
compiler may read at import (``IMPORT_ENV_PREFIXES``) retires it and starts another, which
would otherwise keep its old value. Linux only (the proof reads ``/proc``); elsewhere, and for
every other backend, workers fork from the cold server as before.
"""
from __future__ import annotations

import ctypes
import importlib
import io
import multiprocessing.context as mp_context
import os
import select
import signal
import socket
import sys
import threading
import time
from multiprocessing import connection, forkserver, popen_forkserver, resource_tracker, spawn, util
from multiprocessing.context import reduction, set_spawning_popen

import dlgate.exec.child  # noqa: F401 - the cold server's preload: a warm server has it under its compiler
from dlgate.backends.registry import load
from dlgate.exec.child import PR_SET_PDEATHSIG

#: The compilers with a warm server: their import was shown to start no thread that lives
#: across a fork (``tests/test_warm_servers.py`` checks each installed one).
WARM_PACKAGES = ("tvm", "torch", "torch._inductor")

#: The environment variables a compiler's import may read, by name prefix: the compilers' own
#: (TVM_, TORCH*, PYTORCH_, ATEN_, TRITON_), their thread and math libraries' (OMP_, KMP_, MKL_,
#: OPENBLAS_, GOTO, DNNL_, ONEDNN_), the GPU stack's (CUDA*, NVIDIA_), the loader's (LD_, DYLD_),
#: Python's, and the folders a cache or a temporary file goes to. A server imported with these
#: as they are now; when one of them changes, the next start retires it (``server_for``).
#: Others (a test's FAKE_BUG, DLGATE_CACHE, pytest's PYTEST_CURRENT_TEST, which changes every
#: test) are read by a worker after the fork, in the environment ``child.serve`` sets, as before.
IMPORT_ENV_PREFIXES = ("TVM_", "TORCH", "PYTORCH_", "ATEN_", "TRITON_", "OMP_", "KMP_", "MKL_", "OPENBLAS_",
                       "GOTO", "DNNL_", "ONEDNN_", "CUDA", "NVIDIA_", "LD_", "DYLD_", "PYTHON", "XDG_",
                       "HOME", "TMPDIR", "TEMP", "TMP", "PATH", "USER", "LANG", "LC_")

#: Set in the server before the import exactly as ``child.serve`` sets it before a backend's
#: (setdefault): Inductor reads it when ``torch._inductor.config`` is imported.
IMPORT_ENV = {"TORCHINDUCTOR_COMPILE_THREADS": "1"}

#: What every worker of a kind imports on its first job besides its compiler, imported by the
#: server after the compiler so that its workers fork with it: the backend's own module and,
#: where the worker builds the model from dlgate's graph (the reference, Inductor), the operator
#: catalogue (``module:function`` is called once: the registry's load), which each such worker
#: otherwise loaded again, about a second each. Only what every worker of the kind needs: a
#: server starts once per gate, and a preload its workers never use is a cost (TVM's importer
#: path needs its ONNX frontend, not the catalogue; the direct path loads it in its worker). A
#: preload that fails is left out: the worker meets the failure and reports it, as a cold one would.
PRELOADS = {
    "torch": ("dlgate.backends.torch_eager", "dlgate.ops.registry:all_specs"),
    "torch._inductor": ("dlgate.backends.inductor", "dlgate.ops.registry:all_specs"),
    "tvm": ("dlgate.backends.tvm", "tvm.relax.frontend.onnx"),
}

_SERVERS: dict = {}
_COLD: dict = {}
_RETIRED: list = []
_LOCK = threading.Lock()


def supported() -> bool:
    """Whether warm servers can be proven safe here: Linux's ``/proc/self/task``."""
    return sys.platform.startswith("linux") and os.path.isdir("/proc/self/task")


def kind_of(spec) -> str | None:
    """The warm kind of a backend spec (its class's ``package``, where warm), or None. The class is
    loaded here as the gate's configuration check loads it; a backend that does not load is cold
    (its worker says why, as before)."""
    try:
        package = load(spec.name).package
    except Exception:  # noqa: BLE001 - an unknown or broken backend: the worker reports it
        return None
    return package if package in WARM_PACKAGES else None


def cold_reason(kind: str) -> str | None:
    """Why ``kind`` fell back to the cold server in this process, or None."""
    return _COLD[kind][0] if kind in _COLD else None


def server_for(spec, timeout_s: float) -> "WarmServer | None":
    """The running warm server for ``spec``'s kind, started (and proven) on first use, or None
    when workers of this spec fork from the cold server. Call with the environment the worker
    is to start in (``worker._without_secrets``)."""
    if not supported():
        return None
    kind = kind_of(spec)
    if kind is None:
        return None
    env = _comparable(os.environ)
    if kind in _COLD and _COLD[kind][1] == env:  # decided in this environment: not tried again
        return None
    with _LOCK:
        _reap()
        server = _SERVERS.get(kind)
        if server is not None and server.env != env:
            server.retire()  # started in another environment: its import may have read it
            server = None
        if server is None:
            server = _SERVERS[kind] = WarmServer(kind, env)
        why = server.start(timeout_s)
        if why is not None:
            server.retire()
            del _SERVERS[kind]
            _COLD[kind] = (why, env)
            return None
        return server


def _comparable(env) -> dict:
    """The part of ``env`` a compiler's import may read (``IMPORT_ENV_PREFIXES``)."""
    return {k: v for k, v in env.items() if k.startswith(IMPORT_ENV_PREFIXES)}


def _reap() -> None:
    """Collect retired servers that have ended (each ends once its last worker has)."""
    for pid in list(_RETIRED):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _RETIRED.remove(pid)


class WarmServer(forkserver.ForkServer):
    """multiprocessing's fork server with an import and its proof before it serves. It reuses
    the standard server loop (``multiprocessing.forkserver.main``) and the standard request
    (``connect_to_new_process``); only the start differs: a status pipe on which the server says
    "ok", or why it must not serve, before it accepts its first request."""

    def __init__(self, kind: str, env: dict):
        super().__init__()
        self.kind = kind
        self.env = env
        self._ready = False
        self._why: str | None = None
        self._timeout_s = 300.0

    def start(self, timeout_s: float) -> str | None:
        """Start the server if it is not running and wait for its proof: None when it serves,
        else why not (the server is then left to be retired)."""
        self._timeout_s = timeout_s
        try:
            self.ensure_running()
        except OSError as e:
            return self._why or f"the {self.kind} server did not start: {e}"
        return self._why

    def ensure_running(self) -> None:
        with self._lock:
            resource_tracker.ensure_running()
            if self._forkserver_pid is not None:
                pid, _ = os.waitpid(self._forkserver_pid, os.WNOHANG)
                if not pid:
                    return
                # it died (killed from outside): prove a new one
                os.close(self._forkserver_alive_fd)
                self._forkserver_address = self._forkserver_alive_fd = self._forkserver_pid = None
                self._ready = False
            self._launch_server(self._timeout_s)
            if not self._ready:  # a request would find nobody listening
                raise OSError(self._why)

    def _launch_server(self, timeout_s: float) -> None:
        address = connection.arbitrary_address("AF_UNIX")
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(address)
            os.chmod(address, 0o600)
            listener.listen()
            alive_r, alive_w = os.pipe()
            status_r, status_w = os.pipe()
            try:
                # the kernel's signal at the parent's death follows the thread that started the
                # process: asked for only from the main thread, which lives as long as the gate
                pdeathsig = threading.current_thread() is threading.main_thread()
                cmd = (f"import sys; sys.path[:] = {list(sys.path)!r}; from dlgate.exec.servers import main; "
                       f"main({listener.fileno()}, {alive_r}, {status_w}, {self.kind!r}, {os.getpid() if pdeathsig else 0})")
                exe = spawn.get_executable()
                args = [exe, *util._args_from_interpreter_flags(), "-c", cmd]
                pid = util.spawnv_passfds(exe, args, [listener.fileno(), alive_r, status_w])
            except BaseException:
                os.close(alive_w)
                os.close(status_r)
                raise
            finally:
                os.close(alive_r)
                os.close(status_w)
        self._forkserver_address, self._forkserver_alive_fd, self._forkserver_pid = address, alive_w, pid
        try:
            said = _read_all(status_r, timeout_s)
        except BaseException:  # interrupted while it imports: it must not be taken for a proven one
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(alive_w)
            self._forkserver_address = self._forkserver_alive_fd = self._forkserver_pid = None
            raise
        finally:
            os.close(status_r)
        if said is None:
            self._why = f"the {self.kind} server did not prove itself within {timeout_s:.0f} s"
        elif said == "ok":
            self._ready, self._why = True, None
        else:
            self._why = said or f"the {self.kind} server ended before it served"

    def retire(self) -> None:
        """Stop taking requests: the server ends once its last worker has (they hold its pipe),
        and is collected then (``_reap``); nothing waits for it here."""
        with self._lock:
            pid, self._forkserver_pid = self._forkserver_pid, None
            if pid is None:
                return
            os.close(self._forkserver_alive_fd)
            self._forkserver_alive_fd = None
            if not self._ready:  # it never served: no worker holds it up
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                os.unlink(self._forkserver_address)
            except (OSError, TypeError):
                pass
            self._forkserver_address = None
            self._ready = False
            _RETIRED.append(pid)

    def Process(self, **kw) -> "WarmProcess":
        """A ``multiprocessing.Process`` that this server forks."""
        proc = WarmProcess(**kw)
        proc._kind = self.kind
        return proc


def _read_all(fd: int, timeout_s: float) -> str | None:
    """What the server writes on its status pipe until it closes it; None after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 4096)
        if not chunk:
            return data.decode(errors="replace").strip()
        data += chunk


class _WarmPopen(popen_forkserver.Popen):
    """multiprocessing's fork-server start, asking the warm server of the process's kind."""

    def _launch(self, process_obj):
        prep_data = spawn.get_preparation_data(process_obj._name)
        buf = io.BytesIO()
        set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            set_spawning_popen(None)
        # the server server_for just proved: both run under worker._ENV_LOCK, so no other
        # start retires it in between
        self.sentinel, w = _SERVERS[process_obj._kind].connect_to_new_process(self._fds)
        parent_w = os.dup(w)  # the child's sentinel of this process, as the standard start keeps
        self.finalizer = util.Finalize(self, util.close_fds, (parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class WarmProcess(mp_context.ForkServerProcess):
    """A worker process forked by the warm server of ``_kind`` (a plain string, so the process
    object pickles to the child as the standard one does)."""

    _kind = ""

    @staticmethod
    def _Popen(process_obj):
        return _WarmPopen(process_obj)


# -- the server's side -----------------------------------------------------------------------------
def threads_across_fork() -> list:
    """This process's threads that live across a fork, as ``name (tid)``, the calling thread
    left out: fork a child that exits at once, then list ``/proc/self/task`` and ``threading``'s
    threads. Empty when the process is safe to fork from."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    me = threading.get_native_id()
    found = {}
    for tid in sorted(int(t) for t in os.listdir("/proc/self/task")):
        if tid != me:
            try:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    found[tid] = f"{f.read().strip()} ({tid})"
            except OSError:  # it ended meanwhile
                pass
    for t in threading.enumerate():  # a Python thread is an OS thread too: named once
        if t is not threading.current_thread():
            found[t.native_id] = f"Python thread {t.name!r} ({t.native_id})"
    return [found[k] for k in sorted(found, key=lambda k: (k is None, k or 0))]


def warm_import(kind: str) -> str | None:
    """Import ``kind`` as a worker would, then prove no thread lives across a fork: None when
    safe, else why not (one line)."""
    for k, v in IMPORT_ENV.items():
        os.environ.setdefault(k, v)
    importlib.import_module(kind)
    preload(kind)
    extra = threads_across_fork()
    if extra:
        return f"importing {kind} started threads that live across a fork: {', '.join(extra)}"
    return None


def preload(kind: str) -> None:
    """Import ``PRELOADS[kind]`` (and call each ``module:function`` once). One that fails is
    skipped and leaves the server warm: its workers import it as before, and meet and report
    the failure themselves."""
    for name in PRELOADS.get(kind, ()):
        module, _, function = name.partition(":")
        try:
            mod = importlib.import_module(module)
            if function:
                getattr(mod, function)()
        except Exception:  # noqa: BLE001 - the worker meets and reports it itself
            continue


def main(listener_fd: int, alive_r: int, status_w: int, kind: str, gate: int = 0) -> None:
    """The warm server: import, prove, say so, then serve as multiprocessing's fork server does.
    What the import prints goes nowhere (a cold worker's import prints to its own log, which no
    result shows); Ctrl-C is ignored while it imports, as the standard server ignores it after.
    While it imports, it dies with the gate (pid ``gate``, when the gate asked for it: the
    kernel's parent-death signal, as a cold worker importing dies by its watchdog); once serving,
    it ends as the standard server does, when the gate and its workers have closed its pipe."""
    if gate:
        _pdeathsig(signal.SIGKILL)
        if os.getppid() != gate:  # the gate died before the signal was asked for
            os._exit(0)
    keep_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    try:
        why = warm_import(kind)
    except BaseException as e:  # noqa: BLE001 - any failure means: cold for this kind
        why = f"importing {kind} failed: {type(e).__name__}: {e}"
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
        signal.signal(signal.SIGINT, keep_int)
    try:
        os.write(status_w, ("ok" if why is None else why.replace("\n", " ")).encode())
        os.close(status_w)
    except OSError:  # the gate is gone
        os._exit(0)
    if why is not None:
        os._exit(0)
    if gate:
        _pdeathsig(0)
    forkserver.main(listener_fd, alive_r, [])


def _pdeathsig(sig: int) -> None:
    """Ask the kernel for ``sig`` when the parent dies (0: no signal). Linux only."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        pass
