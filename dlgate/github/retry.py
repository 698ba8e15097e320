"""urllib3's retry policy set to GitHub's rules, mounted on the client's requests session.

One request, retried inside requests' ``HTTPAdapter``: reads (GET) on connection errors, timeouts and
500/502/503/504; every method on a rate limit (403/429 whose headers say so), since GitHub refused the
request rather than applied it; a write never after it may have reached GitHub (that is for the
client's write-once logic, which looks for the write first). See docs/internals-robustness.md.
"""
from __future__ import annotations

import time
from urllib.parse import urlsplit

import requests
from urllib3.exceptions import ConnectTimeoutError, InvalidHeader, MaxRetryError, ProtocolError, ReadTimeoutError
from urllib3.exceptions import ResponseError
from urllib3.util.retry import Retry

# GitHub's advice for a secondary rate limit that names no wait: pause at least a minute.
RATE_LIMIT_FALLBACK_S = 60.0
#: Server errors worth another try (GitHub's transient ones; a 501 or 505 will not change).
RETRY_STATUSES = frozenset({500, 502, 503, 504})
RATE_LIMIT_STATUSES = frozenset({403, 429})
#: Methods the adapter repeats after the request may have reached GitHub. POST is not one: a write is
#: repeated only by the write-once logic, after looking for it.
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS"})

class GitHubRetry(Retry):
    """urllib3's retry policy with GitHub's rules added: a rate limit (403/429 that says so in its headers)
    is retried for every method, since GitHub refused the request rather than applied it; the wait is the
    one GitHub asks for (:meth:`server_wait`), else ``backoff_s * 2**n`` capped at ``max_wait_s``; a wait
    longer than ``max_wait_s`` is not waited (the answer goes back to the client, which reports it); each
    wait goes through the client's ``sleep`` and ``log``. Everything else (counting, which errors are a
    connect or a read failure, which methods repeat) is urllib3's."""

    client = None  # the GitHub client whose timeout, limits, sleep and log apply

    def new(self, **kw) -> GitHubRetry:
        retry = super().new(**kw)
        retry.client = self.client
        return retry

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        # a 403 that is no rate limit is let through by increment()
        return status_code in RATE_LIMIT_STATUSES or super().is_retry(method, status_code, has_retry_after)

    def increment(self, method=None, url=None, response=None, error=None, _pool=None, _stacktrace=None):
        if response is not None and error is None:
            wait = self.server_wait(response.status, response.headers)
            if (response.status in RATE_LIMIT_STATUSES and wait is None) or (wait or 0.0) > self.client.max_wait_s:
                # not retried: with raise_on_status off, urllib3 hands this answer back as it is
                raise MaxRetryError(_pool, url, ResponseError(f"HTTP {response.status} is not retried"))
        return super().increment(method, url, response, error, _pool, _stacktrace)

    def server_wait(self, status: int, headers) -> float | None:
        """Seconds GitHub asks to wait before another try, or None when it does not say. As GitHub
        documents: ``Retry-After`` (seconds or a date); else, with no requests remaining, until
        ``X-RateLimit-Reset`` (plus a second for clock skew) or a minute; else a 429 waits a minute. A 403
        that says none of this is no rate limit (None)."""
        if headers.get("Retry-After"):
            try:
                return float(self.parse_retry_after(headers["Retry-After"]))
            except InvalidHeader:
                pass
        if status in RATE_LIMIT_STATUSES and headers.get("X-RateLimit-Remaining") == "0":
            reset = headers.get("X-RateLimit-Reset", "")
            return max(int(reset) - time.time(), 0.0) + 1.0 if reset.isdigit() else RATE_LIMIT_FALLBACK_S
        return RATE_LIMIT_FALLBACK_S if status == 429 else None

    def get_backoff_time(self) -> float:
        """``backoff_s * 2**n`` after the n-th consecutive failure (n from 0), at most ``max_wait_s``."""
        return min(self.backoff_factor * 2 ** (len(self.history) - 1), self.client.max_wait_s) if self.history else 0.0

    def sleep(self, response=None) -> None:
        wait = None if response is None else self.server_wait(response.status, response.headers)
        wait = self.get_backoff_time() if wait is None else wait
        last, client = self.history[-1], self.client
        if last.error is not None:
            reason = _describe(last.error, client.timeout)
        elif last.status in RATE_LIMIT_STATUSES:
            reason = f"rate limited (HTTP {last.status})"
        else:
            reason = f"HTTP {last.status}"
        client._pause(wait, f"{last.method} {urlsplit(last.url).path}: {reason}; retry {len(self.history)}/"
                            f"{client.max_retries} in {wait:g} s")


def _describe(error: BaseException | None, timeout: float) -> str:
    """A failed attempt in words, from urllib3's or requests' exception."""
    if isinstance(error, ConnectTimeoutError):  # NewConnectionError included: refused, unresolvable
        return "could not connect"
    if isinstance(error, (ReadTimeoutError, requests.ReadTimeout)):
        return f"no answer within {timeout:g} s"
    if isinstance(error, (ProtocolError, requests.ConnectionError)):
        return "connection lost before an answer"
    return f"{type(error).__name__} before an answer"


def classify_failure(exc: requests.RequestException, timeout: float, max_retries: int) -> tuple[str, bool, int]:
    """``(reason, sent, attempts)`` of a request that failed without an answer: ``sent`` unless the
    connection failed before the request went out (which makes even a write safe to repeat)."""
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):  # after urllib3 handed the answer over
        return "connection lost during the answer", True, 1
    inner = exc.args[0] if exc.args else None
    exhausted = isinstance(inner, MaxRetryError)
    cause = inner.reason if exhausted else inner if isinstance(inner, Exception) else exc
    counted = isinstance(cause, (ConnectTimeoutError, ReadTimeoutError, ProtocolError))  # urllib3 retries these
    tries = max_retries + 1 if exhausted and counted else 1
    return _describe(cause if counted else exc, timeout), not isinstance(cause, ConnectTimeoutError), tries


def attempts(n: int) -> str:
    return "1 attempt" if n == 1 else f"{n} attempts"
