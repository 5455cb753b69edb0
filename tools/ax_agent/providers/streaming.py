"""What both network providers share: abort-aware streaming and connection-phase retries.

A request runs in a daemon thread that hands its stream events over a queue, so
the caller's thread can notice the abort event within ``ABORT_POLL_S`` even
while the socket read underneath is blocked, and ``on_text`` still runs in the
caller's thread.

Retries happen only before the first stream event arrives: after that, part of
an answer has been shown, and replaying the request would show it twice.
"""

from __future__ import annotations

import contextlib
import email.utils
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from .base import ProviderAborted, ProviderError

# Attempts at the connection phase, the first one included.
MAX_ATTEMPTS = 3
# Backoff between attempts when the server gives no Retry-After: base * 2^(n-1), capped.
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 8.0
# A server asking for a longer wait than this gets no retry: the error is returned at once.
RETRY_AFTER_CAP_S = 60.0
# How often the caller's thread looks at the abort event while waiting for the stream.
ABORT_POLL_S = 0.05
# Timeouts of one HTTP request. The read timeout is the longest silence tolerated
# between two stream chunks; a local server evaluating a long prompt can be slow.
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 300.0
WRITE_TIMEOUT_S = 60.0

T = TypeVar("T")

# start() opens the request and returns its events and a function that closes it.
Opener = Callable[[], tuple[Iterator[T], Callable[[], None]]]


@dataclass
class Failure:
    """A classified exception: the error to raise, and whether to try again."""

    error: ProviderError
    retry_after: float | None = None


# classify(exception, mid_stream) -> Failure. Mid-stream failures are never retried.
Classifier = Callable[[BaseException, bool], Failure]


class _Attempt(Generic[T]):
    """One HTTP request, consumed in a daemon thread."""

    def __init__(self, start: Opener[T]) -> None:
        self._start = start
        self._queue: queue.Queue[tuple[str, object]] = queue.Queue()
        self._cancelled = threading.Event()
        self._close: Callable[[], None] | None = None
        self._lock = threading.Lock()
        threading.Thread(target=self._run, name="ax-provider-stream", daemon=True).start()

    def _run(self) -> None:
        try:
            events, close = self._start()
            with self._lock:
                self._close = close
            if self._cancelled.is_set():
                return
            for event in events:
                if self._cancelled.is_set():
                    return
                self._queue.put(("event", event))
            self._queue.put(("done", None))
        except BaseException as exc:  # handed to the caller's thread, which decides
            if not self._cancelled.is_set():
                self._queue.put(("error", exc))
        finally:
            if self._cancelled.is_set():
                self._close_quietly()

    def next(self, abort: threading.Event | None) -> tuple[str, object]:
        """The next ("event", e), ("done", None) or ("error", exc); ProviderAborted on abort."""
        while True:
            if abort is not None and abort.is_set():
                self.cancel()
                raise ProviderAborted()
            try:
                return self._queue.get(timeout=ABORT_POLL_S)
            except queue.Empty:
                continue

    def cancel(self) -> None:
        """Stop consuming and close the response, which wakes a blocked read."""
        self._cancelled.set()
        self._close_quietly()

    def _close_quietly(self) -> None:
        with self._lock:
            close, self._close = self._close, None
        if close is not None:
            # Closing an abandoned stream: a failure has no one left to report to.
            with contextlib.suppress(Exception):
                close()


def closer(response: Any) -> Callable[[], None]:
    """A function that closes an httpx-style streaming response from another thread.

    Closing alone does not wake a thread blocked reading the socket, so the
    socket is shut down first (the connection is dropped, never reused).
    """

    def close() -> None:
        network_stream = getattr(response, "extensions", {}).get("network_stream")
        sock = network_stream.get_extra_info("socket") if network_stream is not None else None
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        response.close()

    return close


def retry_delay(attempt: int, retry_after: float | None) -> float | None:
    """Seconds to wait before attempt ``attempt + 1``; None when waiting is pointless."""
    if retry_after is not None:
        return retry_after if retry_after <= RETRY_AFTER_CAP_S else None
    return float(min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1)))


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Retry-After-Ms, else Retry-After as seconds or an HTTP date; None when absent."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def stream_events(
    start: Opener[T], classify: Classifier, abort: threading.Event | None
) -> Iterator[T]:
    """The events of one request, retried in the connection phase.

    Raises ProviderError (classified) or ProviderAborted. Closing the generator
    early closes the request.
    """
    attempt_number = 0
    while True:
        attempt_number += 1
        if abort is not None and abort.is_set():
            raise ProviderAborted()
        attempt = _Attempt(start)
        kind, value = attempt.next(abort)
        if kind != "error":
            break
        assert isinstance(value, BaseException)
        failure = classify(value, False)
        delay = retry_delay(attempt_number, failure.retry_after)
        if not failure.error.retryable or attempt_number >= MAX_ATTEMPTS or delay is None:
            error = failure.error
            if error.retryable and delay is None and failure.retry_after is not None:
                error.message += f" (the server asks to wait {failure.retry_after:.0f} s)"
            elif error.retryable and attempt_number > 1:
                error.message += f" (after {attempt_number} attempts)"
            error.args = (error.message,)
            raise error
        if abort is not None:
            if abort.wait(delay):
                raise ProviderAborted()
        else:
            time.sleep(delay)

    finished = False
    try:
        while kind == "event":
            yield cast(T, value)
            kind, value = attempt.next(abort)
        if kind == "error":
            assert isinstance(value, BaseException)
            raise classify(value, True).error
        finished = True
    finally:
        if not finished:
            attempt.cancel()
