"""A module whose import starts a thread that lives on (as a compiler's eager thread pool
would): the warm fork server's proof must refuse it (tests/test_warm_servers.py)."""
import threading
import time

#: The thread's name, which the refusal names.
NAME = "dlgate-test-pool"

threading.Thread(target=time.sleep, args=(3600,), name=NAME, daemon=True).start()
