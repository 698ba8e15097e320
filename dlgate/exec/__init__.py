"""Isolation: each backend runs in its own long-lived worker process, with a timeout and a
memory cap over its whole process tree, so that a compiler that crashes, hangs or eats the
machine becomes a verdict (crash, timeout, out of memory) instead of taking the gate down.
Workers fork from a fork server (``worker``), or from a warm one that has imported their
compiler once and proven it safe to fork (``servers``)."""
