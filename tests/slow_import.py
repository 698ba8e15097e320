"""A module whose import takes half a minute (as a large compiler's may on a loaded machine):
a warm server still importing it must die with the gate (tests/test_warm_servers.py)."""
import time

time.sleep(30)
