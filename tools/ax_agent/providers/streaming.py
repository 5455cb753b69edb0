"""What every network provider shares: one SSE parser, abort-aware streaming, retries.

The SSE parser (the public interface other provider modules use):

- ``iter_sse(chunks)`` turns an iterable of raw body bytes, split anywhere, into
  ``SSEEvent(event, data, id)`` items, as the WHATWG EventSource rules say: lines
  end in CRLF, LF or CR (a CR at the end of one chunk and an LF at the start of
  the next are one line end); bytes are decoded as UTF-8 per whole line, so a
  character split across chunks is whole; ``:`` lines (keep-alive comments) and
  ``retry:`` are skipped; several ``data:`` lines join with newlines; ``event:``
  names the event (``message`` when absent); ``id:`` persists across events. An
  event is dispatched only at its blank line: one cut short by the end of the
  stream is never dispatched, so a truncated stream cannot end in half an event.
  An event over ``SSE_EVENT_MAX_BYTES`` is a ``protocol`` ProviderError.
- ``SSEParser`` is the same, incremental: ``feed(bytes) -> list[SSEEvent]``,
  ``end() -> list[SSEEvent]`` when the stream is over (a last line may end in a
  lone CR), and ``incomplete`` says whether the bytes so far end inside an event.
- ``DONE_DATA`` is the ``[DONE]`` sentinel OpenAI-style streams end with; the
  parser hands it over as an ordinary event and the caller decides.

A request runs in a daemon thread that hands its stream events over a queue, so
the caller's thread can notice the abort event within ``ABORT_POLL_S`` even
while the socket read underneath is blocked, and ``on_text`` still runs in the
caller's thread.

Retries happen only in the connection phase, before the first stream event is
handed to the caller: after that, part of an answer may have been shown, and
replaying the request would show it twice. The budget is ``MAX_ATTEMPTS``, or
``RATE_LIMIT_MAX_ATTEMPTS`` for a rate limit (a throttle is expected to clear);
a ``Retry-After`` (seconds or an HTTP date) is waited for when it is at most
``RETRY_AFTER_CAP_S``, and a longer one ends the retries at once.
"""

from __future__ import annotations

import contextlib
import email.utils
import queue
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from .base import ProviderAborted, ProviderError

# Attempts at the connection phase, the first one included; a rate limit gets more.
MAX_ATTEMPTS = 3
RATE_LIMIT_MAX_ATTEMPTS = 6
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
        budget = RATE_LIMIT_MAX_ATTEMPTS if failure.error.kind == "rate_limit" else MAX_ATTEMPTS
        if not failure.error.retryable or attempt_number >= budget or delay is None:
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


# --- server-sent events ------------------------------------------------------------------

DONE_DATA = "[DONE]"
# One event, its unfinished line included: more is not a model's stream.
SSE_EVENT_MAX_BYTES = 16 * 1024 * 1024
_LINE_END = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched server-sent event."""

    event: str
    data: str
    id: str | None = None


class SSEParser:
    """An incremental server-sent-events parser; see the module docstring for the rules."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._first_line = True
        self._event = ""
        self._data: list[str] = []
        # Bytes of the data lines of the event in progress.
        self._data_size = 0
        self._last_id: str | None = None
        self._fields_seen = False

    @property
    def incomplete(self) -> bool:
        """Whether the bytes fed so far end inside an event (a cut stream)."""
        return bool(self._buffer) or self._fields_seen

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """The events completed by ``chunk``."""
        return self._scan(chunk, final=False)

    def end(self) -> list[SSEEvent]:
        """The events completed by the end of the stream (a last line ended by a lone CR)."""
        return self._scan(b"", final=True)

    def _scan(self, chunk: bytes, *, final: bool) -> list[SSEEvent]:
        # What was buffered holds no line end but perhaps a last CR: search from there,
        # so a long line arriving in many chunks is not scanned again with each one.
        searched = max(0, len(self._buffer) - 1)
        self._buffer += chunk
        events: list[SSEEvent] = []
        position = 0
        while True:
            match = _LINE_END.search(self._buffer, searched)
            if match is None:
                break
            if match.group() == b"\r" and match.end() == len(self._buffer) and not final:
                # The LF of a CRLF may be in the next chunk: wait for it.
                break
            event = self._line(self._buffer[position : match.start()])
            if event is not None:
                events.append(event)
            position = searched = match.end()
        del self._buffer[:position]
        if len(self._buffer) + self._data_size > SSE_EVENT_MAX_BYTES:
            raise ProviderError(
                f"the server sent a stream event over {SSE_EVENT_MAX_BYTES} bytes",
                hint="is the base URL an endpoint of this provider's wire format?",
                kind="protocol",
            )
        return events

    def _line(self, raw: bytearray) -> SSEEvent | None:
        line = raw.decode("utf-8", "replace")
        if self._first_line:
            self._first_line = False
            line = line.removeprefix("\ufeff")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        self._fields_seen = True
        if name == "data":
            self._data.append(value)
            self._data_size += len(raw)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._last_id = value
        return None

    def _dispatch(self) -> SSEEvent | None:
        data, event = self._data, self._event
        self._data, self._event, self._fields_seen, self._data_size = [], "", False, 0
        if not data:
            return None
        return SSEEvent(event or "message", "\n".join(data), self._last_id)


def iter_sse(chunks: Iterable[bytes]) -> Iterator[SSEEvent]:
    """The events of a byte stream split anywhere; an event cut off by its end is dropped."""
    parser = SSEParser()
    for chunk in chunks:
        yield from parser.feed(chunk)
    yield from parser.end()
