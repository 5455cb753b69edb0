"""Output enrichment: counts, findings and named signals read from a check's output.

Parsers never decide the verdict (the exit status does); they only add what a
person or a later gate wants to know without re-reading the output: how many
tests passed, which ones failed, which file and line a linter complained
about. They see the output line by line as it arrives, so a long run costs
bounded memory, and what they keep is capped.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ax_check.models import Finding, Kind, Signal, Summary
from libcommon.ansi import strip_ansi
from libcommon.redact import redact

MAX_SIGNALS = 50
MAX_FINDINGS = 100
MAX_DETAIL_CHARS = 300
MAX_LINE_BYTES = 8 * 1024
OUTPUT_HEAD_BYTES = 4 * 1024
OUTPUT_TAIL_BYTES = 12 * 1024

_PYTEST_SUMMARY = re.compile(r"^=*\s*(?:\d+ \w+(?:, )?)+.* in \d+(?:\.\d+)?s\b")
_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
_PYTEST_FAILED = re.compile(r"^FAILED (\S+)")
_PYTEST_ERROR = re.compile(r"^ERROR (\S+)")
_CARGO_RESULT = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")
_CARGO_FAILED = re.compile(r"^test (\S+) \.\.\. FAILED$")
_GO_FAIL = re.compile(r"^\s*--- FAIL: (\S+)")
_GO_PASS = re.compile(r"^\s*--- PASS: (\S+)")
_GO_PACKAGE_FAILED = re.compile(r"^FAIL\t(\S+)\t")
_TAP_COUNT = re.compile(r"^# (pass|fail|skipped|todo|tests) (\d+)$")
_TAP_NAMES = {"pass": "passed", "fail": "failed", "skipped": "skipped", "todo": "skipped"}
_TAP_NOT_OK = re.compile(r"^not ok \d+ - (.+)$")
_JEST_TESTS = re.compile(r"^Tests:\s+(.*\d+ total)")
_JEST_COUNT = re.compile(r"(\d+) (passed|failed|skipped|todo)")
_RUST_DIAGNOSTIC = re.compile(r"^(error|warning)(?:\[(\w+)\])?: (.+)$")
_RUFF_HEADER = re.compile(
    r"^(?P<code>[A-Z]+\d+) (?:\[\*\] )?(?P<msg>.+)$|^(?P<unformatted>unformatted): (?P<what>.+)$"
)
_RUST_LOCATION = re.compile(r"^\s*--> ([^:]+):(\d+):(\d+)$")
_TSC = re.compile(
    r"^(?P<path>[^(\s][^(]*)\((?P<line>\d+),(?P<col>\d+)\): error (?P<code>TS\d+): (?P<msg>.+)$"
)
_PATH_LINE = re.compile(
    r"^(?P<path>[^:\s][^:]*\.\w+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<msg>.+)$"
)
_LEADING_CODE = re.compile(r"^(?P<code>[A-Z]+\d+)\b\s*(?:\[\*\]\s*)?(?P<msg>.*)$")
_TRAILING_CODE = re.compile(r"^(?P<msg>.*?)\s+\[(?P<code>[a-z][a-z0-9-]*)\]$")


def _clip(text: str) -> str:
    text = redact(text.strip())
    return text if len(text) <= MAX_DETAIL_CHARS else text[: MAX_DETAIL_CHARS - 1] + "…"


@dataclass
class HeadTail:
    """The first and last bytes of the combined output, as it arrived."""

    total: int = 0
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = OUTPUT_HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * OUTPUT_TAIL_BYTES:
                del self.tail[: len(self.tail) - OUTPUT_TAIL_BYTES]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + min(len(self.tail), OUTPUT_TAIL_BYTES)

    def texts(self) -> tuple[str, str]:
        tail = bytes(self.tail[-OUTPUT_TAIL_BYTES:])
        if self.truncated:
            # Drop a partial first line so the tail starts on a line boundary.
            newline = tail.find(b"\n")
            if 0 <= newline < len(tail) - 1:
                tail = tail[newline + 1 :]
        return (
            redact(self.head.decode("utf-8", "replace")),
            redact(tail.decode("utf-8", "replace")),
        )


@dataclass
class Enrichment:
    """What the parsers of one kind read from the output so far."""

    kind: Kind
    counts: dict[str, int] = field(default_factory=dict)
    tool: str | None = None
    signals: list[Signal] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    _pending_diagnostic: tuple[str | None, str] | None = None

    def signal(self, name: str, detail: str) -> None:
        item = Signal(name=name, detail=_clip(detail))
        if len(self.signals) < MAX_SIGNALS and item not in self.signals:
            self.signals.append(item)

    def finding(
        self, path: str, line: int | None, col: int | None, code: str | None, msg: str
    ) -> None:
        if len(self.findings) < MAX_FINDINGS:
            self.findings.append(
                Finding(path=_clip(path), line=line, column=col, code=code, message=_clip(msg))
            )
        self.counts["findings"] = self.counts.get("findings", 0) + 1

    def add(self, tool: str, name: str, value: int) -> None:
        self.tool = self.tool or tool
        self.counts[name] = self.counts.get(name, 0) + value

    def line(self, text: str) -> None:
        text = strip_ansi(text).rstrip("\r\n")
        if self.kind in ("test", "test-targeted"):
            self._test_line(text)
        self._diagnostic_line(text)
        if self.kind in ("lint", "typecheck", "format", "static-analysis", "build"):
            self._finding_line(text)

    def _test_line(self, text: str) -> None:
        if _PYTEST_SUMMARY.match(text) and not text.startswith(("#", "test result")):
            for number, word in _PYTEST_COUNT.findall(text):
                name = {"error": "errors", "xpassed": "passed", "xfailed": "skipped"}.get(
                    word, word
                )
                self.add("pytest", name, int(number))
        elif match := _PYTEST_FAILED.match(text):
            self.signal("test-failed", match.group(1))
        elif match := _PYTEST_ERROR.match(text):
            self.signal("test-error", match.group(1))
        elif match := _CARGO_RESULT.match(text):
            for name, value in zip(("passed", "failed", "skipped"), match.groups(), strict=True):
                self.add("cargo", name, int(value))
        elif match := _CARGO_FAILED.match(text):
            self.signal("test-failed", match.group(1))
        elif match := _GO_FAIL.match(text):
            self.signal("test-failed", match.group(1))
            self.add("go", "failed", 1)
        elif _GO_PASS.match(text):
            self.add("go", "passed", 1)
        elif match := _GO_PACKAGE_FAILED.match(text):
            self.signal("package-failed", match.group(1))
        elif match := _TAP_COUNT.match(text):
            name = _TAP_NAMES.get(match.group(1))
            if name is not None:
                self.add("node", name, int(match.group(2)))
        elif match := _TAP_NOT_OK.match(text):
            self.signal("test-failed", match.group(1))
        elif match := _JEST_TESTS.match(text):
            for number, word in _JEST_COUNT.findall(match.group(1)):
                self.add("jest", "skipped" if word == "todo" else word, int(number))

    def _diagnostic_line(self, text: str) -> None:
        if match := _RUST_DIAGNOSTIC.match(text):
            severity, code, message = match.groups()
            if severity == "error" and not message.startswith(("could not compile", "aborting")):
                self.signal("compile-error", f"{code}: {message}" if code else message)
            self._pending_diagnostic = (code, f"{severity}: {message}")
        elif (match := _RUST_LOCATION.match(text)) and self._pending_diagnostic is not None:
            code, message = self._pending_diagnostic
            self._pending_diagnostic = None
            self.finding(match.group(1), int(match.group(2)), int(match.group(3)), code, message)
        elif match := _TSC.match(text):
            self.finding(
                match["path"], int(match["line"]), int(match["col"]), match["code"], match["msg"]
            )
            self.signal("type-error", f"{match['path']}:{match['line']}: {match['code']}")

    def _finding_line(self, text: str) -> None:
        if header := _RUFF_HEADER.match(text):
            # ruff's full format: the code and message, then a `-->` line with the place.
            if header["unformatted"]:
                self._pending_diagnostic = (None, header["what"])
            else:
                self._pending_diagnostic = (header["code"], header["msg"])
            return
        match = _PATH_LINE.match(text)
        if not match:
            if text.startswith("would reformat "):
                self.finding(text[len("would reformat ") :], None, None, None, "would reformat")
            elif text.startswith("Would reformat: "):
                self.finding(text[len("Would reformat: ") :], None, None, None, "would reformat")
            return
        message = match["msg"]
        code = None
        if leading := _LEADING_CODE.match(message):
            code, message = leading["code"], leading["msg"]
        elif trailing := _TRAILING_CODE.match(message):
            code, message = trailing["code"], trailing["msg"]
        if message.startswith("note:"):
            return
        column = int(match["col"]) if match["col"] else None
        self.finding(match["path"], int(match["line"]), column, code, message)

    def summary(self) -> Summary | None:
        if not self.counts:
            return None
        return Summary(
            tool=self.tool or "lint",
            passed=self.counts.get("passed"),
            failed=self.counts.get("failed"),
            skipped=self.counts.get("skipped"),
            errors=self.counts.get("errors"),
            findings=self.counts.get("findings"),
        )


@dataclass
class OutputWatcher:
    """Fed every chunk of both streams (ax-exec's on_output); splits lines per stream."""

    enrichment: Enrichment
    combined: HeadTail = field(default_factory=HeadTail)
    # Other readers of every line, e.g. the missing-program scanner (missing.py).
    listeners: list[Callable[[str], None]] = field(default_factory=list)
    _partial: dict[str, bytearray] = field(default_factory=dict)
    # Streams in the middle of an over-long line whose start was already parsed.
    _skipping: set[str] = field(default_factory=set)

    def feed(self, stream: str, chunk: bytes) -> None:
        self.combined.feed(chunk)
        buffer = self._partial.setdefault(stream, bytearray())
        buffer += chunk
        while (newline := buffer.find(b"\n")) >= 0:
            if stream in self._skipping:
                self._skipping.discard(stream)
            else:
                self._line(bytes(buffer[:newline]))
            del buffer[: newline + 1]
        if len(buffer) > MAX_LINE_BYTES:
            # A very long line: its start is parsed, the rest is only in the excerpt.
            if stream not in self._skipping:
                self._line(bytes(buffer[:MAX_LINE_BYTES]))
                self._skipping.add(stream)
            buffer.clear()

    def finish(self) -> None:
        for stream, buffer in self._partial.items():
            if buffer and stream not in self._skipping:
                self._line(bytes(buffer))
            buffer.clear()

    def _line(self, raw: bytes) -> None:
        text = raw[:MAX_LINE_BYTES].decode("utf-8", "replace")
        self.enrichment.line(text)
        for listener in self.listeners:
            listener(text)
