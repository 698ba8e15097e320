"""``python -m dlgate``: the command line, left without the interpreter's teardown.

Once a command has returned, everything it wrote is on disk (dlgate writes its files
atomically and closes them) and its workers are stopped. What is left is the interpreter
freeing the modules it imported, which with PyTorch, onnx and TVM loaded takes more than a
second of CPU on every run (measured: 1.3 s of a 1-case run's 11 s on a 2-core machine), and
CI and the tests start dlgate hundreds of times. So the exit runs what must run at exit (the
``atexit`` handlers: workers, logging, multiprocessing's temporary folder), flushes the
standard streams, and ends the process without the teardown. Where another non-daemon
thread is still running, the ordinary exit waits for it, as Python's own would.
"""
import atexit
import os
import sys
import threading

from dlgate.cli import main


def _exit(status: int) -> None:
    if any(t is not threading.current_thread() and t.is_alive() and not t.daemon
           for t in threading.enumerate()):
        sys.exit(status)
    atexit._run_exitfuncs()  # what Python runs at exit before its teardown
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away: nothing left to tell it
            pass
    os._exit(status if isinstance(status, int) else 1)


if __name__ == "__main__":
    _exit(main())
