"""Output enrichment: counts, findings and named signals read from a check's output.

Parsers never decide the verdict (the exit status does); they only add what a
person or a later gate wants to know without re-reading the output: how many
tests passed, which ones failed, which file and line a linter complained
about. They see the output line by line as it arrives, so a long run costs
bounded memory, and what they keep is capped.

The summary names the tool that actually spoke, read from the resolved command
(``python -m mypy``, ``cargo clippy``) and from lines that identify their tool
(a pytest summary, vitest's ``Test Files`` line, rustc's ``-->`` location,
mypy's ``error: … [code]``), never from the kind that was asked for: a project's
``npm test`` may run tsc, and ``make test`` may run mypy. A line is classified
only when its format says what it is; an error the parsers see but cannot
classify is signalled ``unclassified``, never given a guessed class.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ax_check.models import Finding, Kind, Signal, Summary
from libcommon.ansi import strip_ansi
from libcommon.redact import redact

MAX_SIGNALS = 50
MAX_FINDINGS = 100
MAX_DETAIL_CHARS = 300
MAX_LINE_BYTES = 8 * 1024
OUTPUT_HEAD_BYTES = 4 * 1024
OUTPUT_TAIL_BYTES = 12 * 1024
# mypy's --pretty wraps a long message: its [code] may come this many lines later.
MAX_WRAPPED_LINES = 3

UNKNOWN_TOOL = "unknown"
# Kinds whose output is a list of complaints: only there is a bare ``path:line: text``
# a finding (in test output the same shape is a traceback line).
FINDING_KINDS: frozenset[Kind] = frozenset(
    {"lint", "typecheck", "format", "static-analysis", "build"}
)
# Programs that run a project's own tasks: which tool spoke is read from the output.
TASK_RUNNERS = frozenset(
    {
        "make",
        "gmake",
        "just",
        "tox",
        "nox",
        "hatch",
        "pdm",
        "poetry",
        "uv",
        "npm",
        "pnpm",
        "yarn",
        "npx",
        "bun",
    }
)
_CARGO_SUBTOOLS = {"clippy": "clippy", "fmt": "rustfmt"}
_CARGO_TOOLS = frozenset({"cargo", *_CARGO_SUBTOOLS.values()})
_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)*)?$")

_PYTEST_SESSION = re.compile(r"^=+ test session starts =+$")
_PYTEST_SUMMARY = re.compile(r"^=*\s*(?:\d+ \w+(?:, )?)+.* in \d+(?:\.\d+)?s\b")
_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)\b")
_PYTEST_NAMES = {"error": "errors"}
# A node id (`path::name`, `README.md::README.md`) or a file that failed to collect.
_PYTEST_FAILED = re.compile(r"^(FAILED|ERROR) (\S+?::\S*|\S+\.py)(?=\s|$)")
_CARGO_RESULT = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")
_CARGO_FAILED = re.compile(r"^test (\S+) \.\.\. FAILED$")
# cargo's status words are right-aligned to column 12 ("   Compiling", "    Checking").
_CARGO_STATUS = re.compile(
    r"^( *)(Compiling|Checking|Updating|Downloading|Downloaded|Locking|Finished|Fresh"
    r"|Documenting|Running|Blocking|Adding|Packaging) \S"
)
_CARGO_STATUS_WIDTH = 12
_GO_FAIL = re.compile(r"^\s*--- FAIL: (\S+)")
_GO_PASS = re.compile(r"^\s*--- PASS: (\S+)")
_GO_PACKAGE_FAILED = re.compile(r"^FAIL\t(\S+)\t")
_TAP_COUNT = re.compile(r"^# (pass|fail|skipped|todo|tests) (\d+)$")
_TAP_NAMES = {"pass": "passed", "fail": "failed", "skipped": "skipped", "todo": "skipped"}
_TAP_NOT_OK = re.compile(r"^not ok \d+ - (.+)$")
# node --test's spec reporter (the default on a terminal, and everywhere from Node 23).
_NODE_SPEC_COUNT = re.compile(r"^ℹ (pass|fail|skipped|todo) (\d+)$")
_NODE_SPEC_FAILED = re.compile(r"^✖ (.+?) \(\d+(?:\.\d+)?ms\)$")
_JEST_TESTS = re.compile(r"^Tests:\s+(.*\d+ total)")
_JEST_COUNT = re.compile(r"(\d+) (passed|failed|skipped|todo)")
_VITEST_RUN = re.compile(r"^\s*RUN\s+v\d+\.\d+")
_VITEST_TESTS = re.compile(r"^\s*Tests {2,}(\d+ .*?)(?: \(\d+\))?$")
_VITEST_FILES = re.compile(r"^\s*Test Files {2,}\d+ ")
_VITEST_ERRORS = re.compile(r"^\s*Errors {2,}(\d+) errors?\b")
_VITEST_FAILED_SUITES = re.compile(r"^⎯+ Failed Suites (\d+) ⎯+$")
_VITEST_COUNT = re.compile(r"(\d+) (passed|failed|skipped|todo|expected fail)\b")
_VITEST_NAMES = {"todo": "skipped", "expected fail": "xfailed"}
_VITEST_FAIL = re.compile(r"^ FAIL  (\S.*?)(?: \[ .* \])?$")

_RUST_HEADER = re.compile(r"^(error|warning)(?:\[(\w+)\])?: (.+)$")
_RUST_LOCATION = re.compile(r"^\s*--> (.+?):(\d+):(\d+)$")
# Where rustc names the lint a diagnostic comes from, most specific first.
_RUST_LINT_ATTRIBUTE = re.compile(r"^\s*= note: `#\[(?:warn|deny|forbid|expect)\(([\w:]+)\)\]`")
_RUST_LINT_FLAG = re.compile(r"^\s*= note: .*?`-[DWF] ([\w:-]+)`")
_CLIPPY_LINT_URL = re.compile(
    r"^\s*= help: for further information visit \S+/rust-clippy/\S*#(\w+)$"
)
_RUST_LINT_LEVEL_HERE = "note: the lint level is defined here"
# The body of a rendered diagnostic (rustc's and ruff's full format): locations, the
# gutter, notes, suggestions as diffs, child notes. Any other line ends it.
_DIAGNOSTIC_BODY = re.compile(
    r"^\s+(?:-->|:::|\||= )|^\.\.\.$|^\s*\d+\s*(?:\||[-+~](?:\s|$))|^\s+[-+~](?:\s|$)"
    r"|^(?:help|note|suggestion):"
)
_RUST_SNIPPET = re.compile(r"^\s*\d+ \| (.*)$")
_RUST_CARETS = re.compile(r"^\s*\| (\s*)(\^+)")
# cargo's own closing lines, which repeat what the diagnostics above them said.
# (and just's, whose "error: Recipe `test` failed" closes a task that ran cargo).
_CARGO_CLOSING = re.compile(
    r"^(?:could not compile|aborting due to|build failed, waiting|test failed, to rerun pass"
    r"|could not document|\d+ targets? failed|Recipe `[^`]+` failed)"
    r"|^`[^`]+` \(.+\) generated \d+ warnings?"
)
_CARGO_DEPENDENCY = re.compile(
    r"^(?:failed to get `([^`]+)` as a dependency|no matching package named `([^`]+)` found)"
)
_RUSTFMT_DIFF = re.compile(r"^Diff in (.+?):(\d+):$")
_CARGO_NETWORK = re.compile(
    r"spurious network error|Could(?:n't| not) resolve host|failed to download"
    r"|network failure seems to have happened|failed to resolve address"
)

_MYPY = re.compile(
    r"^(?P<path>[^:\s][^:]*\.pyi?):(?P<line>\d+):(?:(?P<col>\d+):(?:\d+:\d+:)?)? "
    r"(?P<severity>error|warning|note): (?P<msg>.*?)(?:  \[(?P<code>[a-z][a-z0-9-]*)\])?$"
)
_MYPY_WRAPPED_CODE = re.compile(r"^(?P<msg>\S.*?)  \[(?P<code>[a-z][a-z0-9-]*)\]$")
_MYPY_SUMMARY = re.compile(
    r"^(?:Found \d+ errors? in \d+ files? \(checked \d+ source files?\)"
    r"|Success: no issues found in \d+ source files?)$"
)
_PYRIGHT = re.compile(
    r"^ {2}(?P<path>\S.*?):(?P<line>\d+):(?P<col>\d+) - "
    r"(?P<severity>error|warning|information): (?P<msg>.*)$"
)
# Continuation lines are indented deeper, with no-break spaces (U+00A0) among the spaces.
_PYRIGHT_MORE = re.compile(r"^ {2}\s+\S")
_PYRIGHT_RULE = re.compile(r"\s*\((?P<rule>report\w+)\)$")
_PYRIGHT_SUMMARY = re.compile(r"^\d+ errors?, \d+ warnings?, \d+ informations? ?$")
_TSC = re.compile(
    r"^(?P<path>[^(\s][^(]*)\((?P<line>\d+),(?P<col>\d+)\): error (?P<code>TS\d+): (?P<msg>.+)$"
)
_TSC_PRETTY = re.compile(
    r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+) - error (?P<code>TS\d+): (?P<msg>.+)$"
)
_TSC_BARE = re.compile(r"^error (?P<code>TS\d+): (?P<msg>.+)$")
_RUFF_HEADER = re.compile(
    r"^(?P<code>[A-Z]+\d+) (?:\[\*\] )?(?P<msg>.+)$|^(?P<unformatted>unformatted): (?P<what>.+)$"
)
_RUFF_SUMMARY = re.compile(
    r"^(?:Found \d+ errors?(?: \(\d+ fixed, \d+ remaining\))?\.|All checks passed!"
    r"|\d+ files? (?:would be reformatted|already formatted).*)$"
)
_BLACK_SUMMARY = re.compile(r"^(?:All done!|Oh no!) |would be left unchanged\.$")
_PATH_LINE = re.compile(
    r"^(?P<path>[^:\s][^:]*\.\w+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<msg>.+)$"
)
_LEADING_CODE = re.compile(r"^(?P<code>[A-Z]+\d+)\b\s*(?:\[\*\]\s*)?(?P<msg>.*)$")
_TRAILING_CODE = re.compile(r"^(?P<msg>.*?)\s+\[(?P<code>[a-z][a-z0-9-]*)\]$")


def _clip(text: str) -> str:
    text = redact(text.strip())
    return text if len(text) <= MAX_DETAIL_CHARS else text[: MAX_DETAIL_CHARS - 1] + "…"


def command_tool(argv: tuple[str, ...]) -> str | None:
    """The tool a resolved command runs itself, or None when it runs a project's task."""
    if not argv:
        return None
    program, args = os.path.basename(argv[0]), argv[1:]
    if _PYTHON.match(program) and len(args) >= 2 and args[0] == "-m":
        program, args = args[1], args[2:]
    if program in TASK_RUNNERS:
        return None
    if program == "cargo":
        subcommand = next((arg for arg in args if not arg.startswith(("-", "+"))), "")
        return _CARGO_SUBTOOLS.get(subcommand, "cargo")
    return program


@dataclass(frozen=True)
class Places:
    """Where the command ran, so finding paths can be said relative to the workspace root.

    Tools print paths relative to where they think the project is: tsc, ruff and
    mypy to their working folder (the unit), cargo to the Cargo workspace root,
    pyright and rustfmt as absolute paths. A finding's path is the workspace-relative path of the
    file the tool meant: the first reading that names an existing file inside the
    workspace, else the reading relative to the unit. A path that lies outside
    the workspace is kept absolute, so it is never mistaken for a workspace file.
    """

    workspace: Path
    unit: Path

    def normalise(self, printed: str, first_base: Path | None = None) -> str:
        if os.path.isabs(printed):
            readings = [os.path.normpath(printed)]
        else:
            bases = [self.unit, *self.unit.parents]
            if first_base is not None:
                bases.insert(0, first_base)
            readings = [os.path.normpath(os.path.join(base, printed)) for base in bases]
        fallback = readings[0]
        for reading in readings:
            relative = self._inside(reading)
            if relative is not None and os.path.exists(reading):
                return relative
        return self._inside(fallback) or fallback

    def _inside(self, path: str) -> str | None:
        relative = os.path.relpath(path, self.workspace)
        if relative == os.pardir or relative.startswith(os.pardir + os.sep):
            return None
        return Path(relative).as_posix()

    def cargo_root(self) -> Path:
        """The folder cargo prints paths relative to: the nearest ``[workspace]`` manifest."""
        from ax_check.units import load_toml

        for folder in (self.unit, *self.unit.parents):
            manifest = load_toml(folder / "Cargo.toml")
            if manifest is not None and "workspace" in manifest:
                return folder
            if folder == self.workspace:
                break
        return self.unit


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
class _Pending:
    """A diagnostic whose parts arrive on several lines; it is judged when it ends."""

    # Whose format: rust (rustc and clippy), ruff, mypy, pyright or tsc.
    tool: str
    severity: str
    message: str
    code: str | None = None
    path: str | None = None
    line: int | None = None
    column: int | None = None
    # rustc: the lint named in a note, in clippy's help link, or under the carets.
    lint: str | None = None
    lint_attribute: str | None = None
    lint_level_here: bool = False
    snippet: str | None = None
    # mypy --pretty: lines seen since the header while its [code] may still come.
    wrapped: list[str] = field(default_factory=list)


@dataclass
class Enrichment:
    """What the parsers read from one check's output so far."""

    kind: Kind
    # The resolved command line: when it runs a tool itself, that tool spoke.
    command: tuple[str, ...] = ()
    places: Places | None = None
    counts: dict[str, int] = field(default_factory=dict)
    tools: list[str] = field(default_factory=list)
    signals: list[Signal] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    _command_tool: str | None = None
    _test_tool: str | None = None
    _finding_tool: str | None = None
    _pending: _Pending | None = None
    _cargo_root: Path | None = None
    # cargo (or a tool it runs) spoke: its own error and network lines are read.
    _cargo: bool = False

    def __post_init__(self) -> None:
        self._command_tool = command_tool(self.command)
        if self._command_tool is not None:
            self.saw(self._command_tool)

    def saw(self, tool: str) -> None:
        if tool not in self.tools:
            self.tools.append(tool)
            self._cargo = self._cargo or tool in _CARGO_TOOLS

    def signal(self, name: str, detail: str) -> None:
        if len(self.signals) >= MAX_SIGNALS:
            return
        item = Signal(name=name, detail=_clip(detail))
        if item not in self.signals:
            self.signals.append(item)

    def _place(self, printed: str, rust: bool = False) -> str:
        if self.places is None:
            return printed
        first = None
        if rust:
            if self._cargo_root is None:
                self._cargo_root = self.places.cargo_root()
            first = self._cargo_root
        return self.places.normalise(printed, first)

    def finding(
        self,
        tool: str | None,
        path: str,
        line: int | None,
        col: int | None,
        code: str | None,
        msg: str,
        rust: bool = False,
    ) -> None:
        if tool is not None:
            self.saw(tool)
            self._finding_tool = self._finding_tool or tool
        if len(self.findings) < MAX_FINDINGS:
            self.findings.append(
                Finding(
                    path=_clip(self._place(path, rust)),
                    line=line,
                    column=col,
                    code=code,
                    message=_clip(msg),
                )
            )
        self.counts["findings"] = self.counts.get("findings", 0) + 1

    def add(self, tool: str, name: str, value: int) -> None:
        self.saw(tool)
        self._test_tool = self._test_tool or tool
        self.counts[name] = self.counts.get(name, 0) + value

    def _no_findings_yet(self, tool: str) -> None:
        """The tool said how many it found: a clean run is 0 findings, not silence."""
        self.saw(tool)
        self._finding_tool = self._finding_tool or tool
        self.counts.setdefault("findings", 0)

    def line(self, text: str) -> None:
        text = strip_ansi(text).rstrip("\r\n")
        if self._continued(text):
            return
        for parse in (self._rust_line, self._typecheck_line, self._test_line):
            if parse(text):
                return
        if self.kind in FINDING_KINDS or self._command_tool in ("ruff", "flake8", "black"):
            self._finding_line(text)

    def finish(self) -> None:
        """The output ended: judge the diagnostic still open."""
        self._close()

    # --- diagnostics spread over several lines ---------------------------------------

    def _continued(self, text: str) -> bool:
        """Feed ``text`` to the open diagnostic; True when it belongs there."""
        pending = self._pending
        if pending is None:
            return False
        if pending.tool in ("rust", "ruff"):
            return self._rust_part(pending, text)
        if pending.tool == "pyright":
            if _PYRIGHT_MORE.match(text):
                if rule := _PYRIGHT_RULE.search(text):
                    pending.code = rule["rule"]
                return True
            self._close()
            return False
        # mypy: a header without its code, maybe wrapped by --pretty.
        if wrapped := _MYPY_WRAPPED_CODE.match(text):
            pending.code = wrapped["code"]
            pending.message = " ".join((pending.message, *pending.wrapped, wrapped["msg"]))
            self._close()
            return True
        pending.wrapped.append(text)
        if len(pending.wrapped) >= MAX_WRAPPED_LINES or _MYPY.match(text) or not text:
            # Not wrapped after all: the message is its first line.
            pending.wrapped.clear()
            self._close()
        return False

    def _rust_part(self, pending: _Pending, text: str) -> bool:
        if not text or not _DIAGNOSTIC_BODY.match(text):
            self._close()
            return not text
        if (location := _RUST_LOCATION.match(text)) and pending.path is None:
            pending.path, pending.line, pending.column = (
                location.group(1),
                int(location.group(2)),
                int(location.group(3)),
            )
        elif text == _RUST_LINT_LEVEL_HERE:
            pending.lint_level_here = True
        elif match := _RUST_LINT_ATTRIBUTE.match(text) or _RUST_LINT_FLAG.match(text):
            pending.lint = pending.lint or match.group(1).replace("-", "_")
        elif match := _CLIPPY_LINT_URL.match(text):
            pending.lint = pending.lint or f"clippy::{match.group(1)}"
        elif pending.lint_level_here and (snippet := _RUST_SNIPPET.match(text)):
            pending.snippet = snippet.group(1)
        elif pending.snippet is not None and (carets := _RUST_CARETS.match(text)):
            # `#![deny(a, b)]` with the carets under the lint that applies.
            start = len(carets.group(1))
            named = pending.snippet[start : start + len(carets.group(2))]
            if re.fullmatch(r"[\w:]+", named):
                pending.lint_attribute = pending.lint_attribute or named
        return True

    def _open(self, pending: _Pending) -> None:
        self._close()
        self._pending = pending

    def _close(self) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            return
        if pending.tool == "rust":
            self._close_rust(pending)
        elif pending.path is None:
            # ruff's header whose `-->` place never came: nothing to point at.
            return
        elif pending.tool == "ruff":
            self.finding(
                "ruff", pending.path, pending.line, pending.column, pending.code, pending.message
            )
        else:
            message = pending.message
            if pending.tool == "mypy":
                message = f"{pending.severity}: {message}"
            self.finding(
                pending.tool, pending.path, pending.line, pending.column, pending.code, message
            )
            if pending.severity == "error" and len(self.signals) < MAX_SIGNALS:
                detail = f"{self._place(pending.path)}:{pending.line}"
                self.signal("type-error", f"{detail}: {pending.code}" if pending.code else detail)

    def _close_rust(self, pending: _Pending) -> None:
        lint = pending.lint or pending.lint_attribute
        is_lint = lint is not None or pending.lint_level_here
        in_rust_file = (pending.path or "").endswith(".rs")
        where = ""
        if pending.path is not None:
            if lint is not None and lint.startswith("clippy::"):
                tool: str | None = "clippy"
            else:
                tool = self._rust_tool() if in_rust_file else None
            self.finding(
                tool,
                pending.path,
                pending.line,
                pending.column,
                lint or pending.code,
                f"{pending.severity}: {pending.message}",
                rust=True,
            )
            if len(self.signals) < MAX_SIGNALS:
                where = f"{self._place(pending.path, rust=True)}:{pending.line}: "
        if is_lint:
            self.signal("lint", f"{where}{lint or pending.message}")
        elif pending.severity != "error":
            return
        elif pending.code is not None or in_rust_file:
            self.signal(
                "compile-error",
                f"{pending.code}: {pending.message}" if pending.code else pending.message,
            )
        elif self._cargo:
            self.signal("unclassified", pending.message)

    def _rust_tool(self) -> str:
        return "cargo" if self._cargo else "rustc"

    # --- one line each -----------------------------------------------------------------

    def _rust_line(self, text: str) -> bool:
        status = _CARGO_STATUS.match(text)
        if status and len(status.group(1)) + len(status.group(2)) == _CARGO_STATUS_WIDTH:
            self.saw("cargo")
            return True
        if diff := _RUSTFMT_DIFF.match(text):
            self.finding("rustfmt", diff.group(1), int(diff.group(2)), None, None, "would reformat")
            return True
        if self._cargo and _CARGO_NETWORK.search(text):
            self.signal("network-error", text)
        header = _RUST_HEADER.match(text)
        if header is None:
            return False
        severity, code, message = header.groups()
        if severity == "error" and (dependency := _CARGO_DEPENDENCY.match(message)):
            self.saw("cargo")
            self.signal("dependency-unavailable", dependency.group(1) or dependency.group(2))
            return True
        if _CARGO_CLOSING.match(message):
            return True
        if self._cargo and _CARGO_NETWORK.search(message):
            return True
        self._open(_Pending("rust", severity, message, code))
        return True

    def _typecheck_line(self, text: str) -> bool:
        # Substring tests first: most lines of a long run are none of these, and the
        # patterns cost far more than `in` to reject them.
        words = "error" in text or "note" in text or "warning" in text or "information" in text
        if words and (self._mypy_line(text) or self._pyright_line(text) or self._tsc_line(text)):
            return True
        if text.startswith(("Found ", "Success: ")) and _MYPY_SUMMARY.match(text):
            self._no_findings_yet("mypy")
            return True
        if text.endswith(("informations", "informations ")) and _PYRIGHT_SUMMARY.match(text):
            self._no_findings_yet("pyright")
            return True
        return False

    def _mypy_line(self, text: str) -> bool:
        if not (match := _MYPY.match(text)):
            return False
        self.saw("mypy")
        if match["severity"] != "note":
            column = int(match["col"]) if match["col"] else None
            where = (match["path"], int(match["line"]), column)
            self._open(_Pending("mypy", match["severity"], match["msg"], match["code"], *where))
            if match["code"]:
                self._close()
        return True

    def _pyright_line(self, text: str) -> bool:
        if not text.startswith("  ") or not (match := _PYRIGHT.match(text)):
            return False
        self.saw("pyright")
        if match["severity"] != "information":
            message = match["msg"]
            rule = _PYRIGHT_RULE.search(message)
            if rule:
                message = message[: rule.start()]
            where = (match["path"], int(match["line"]), int(match["col"]))
            code = rule["rule"] if rule else None
            self._open(_Pending("pyright", match["severity"], message, code, *where))
        return True

    def _tsc_line(self, text: str) -> bool:
        if "error TS" not in text:
            return False
        if match := _TSC.match(text) or _TSC_PRETTY.match(text):
            where = (match["path"], int(match["line"]), int(match["col"]))
            self._open(_Pending("tsc", "error", match["msg"], match["code"], *where))
            self._close()
            return True
        if match := _TSC_BARE.match(text):
            # tsc's own errors outside any file (a tsconfig problem, no inputs): not typing.
            self.saw("tsc")
            self.signal("unclassified", f"{match['code']}: {match['msg']}")
            return True
        return False

    def _test_line(self, text: str) -> bool:
        if _PYTEST_SESSION.match(text):
            self.saw("pytest")
        elif _PYTEST_SUMMARY.match(text) and not text.startswith(("#", "test result")):
            for number, word in _PYTEST_COUNT.findall(text):
                self.add("pytest", _PYTEST_NAMES.get(word, word), int(number))
        elif match := _PYTEST_FAILED.match(text):
            self.saw("pytest")
            name = "test-failed" if match.group(1) == "FAILED" else "test-error"
            self.signal(name, match.group(2))
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
            self.saw("go")
            self.signal("package-failed", match.group(1))
        elif match := _TAP_COUNT.match(text):
            counted = _TAP_NAMES.get(match.group(1))
            if counted is not None:
                self.add("node", counted, int(match.group(2)))
        elif match := _TAP_NOT_OK.match(text):
            self.signal("test-failed", match.group(1))
        elif match := _NODE_SPEC_COUNT.match(text):
            self.add("node", _TAP_NAMES[match.group(1)], int(match.group(2)))
        elif match := _NODE_SPEC_FAILED.match(text):
            self.signal("test-failed", match.group(1))
        elif match := _JEST_TESTS.match(text):
            for number, word in _JEST_COUNT.findall(match.group(1)):
                self.add("jest", "skipped" if word == "todo" else word, int(number))
        else:
            return self._vitest_line(text)
        return True

    def _vitest_line(self, text: str) -> bool:
        if _VITEST_RUN.match(text) or _VITEST_FILES.match(text):
            self.saw("vitest")
        elif match := _VITEST_TESTS.match(text):
            for number, word in _VITEST_COUNT.findall(match.group(1)):
                self.add("vitest", _VITEST_NAMES.get(word, word), int(number))
        elif match := _VITEST_ERRORS.match(text) or _VITEST_FAILED_SUITES.match(text):
            self.add("vitest", "errors", int(match.group(1)))
        elif (match := _VITEST_FAIL.match(text)) and "vitest" in self.tools:
            test = match.group(1)
            self.signal("test-failed" if " > " in test else "test-error", test)
        else:
            return False
        return True

    def _finding_line(self, text: str) -> None:
        if _RUFF_SUMMARY.match(text):
            self._no_findings_yet("ruff")
            return
        if _BLACK_SUMMARY.search(text):
            self.saw("black")
            return
        if header := _RUFF_HEADER.match(text):
            # ruff's full format: the code and message, then a `-->` line with the place.
            if header["unformatted"]:
                self._open(_Pending("ruff", "error", header["what"]))
            else:
                self._open(_Pending("ruff", "error", header["msg"], header["code"]))
            return
        match = _PATH_LINE.match(text)
        if not match:
            if text.startswith("would reformat "):
                what = text[len("would reformat ") :]
                self.finding("black", what, None, None, None, "would reformat")
            elif text.startswith("Would reformat: "):
                what = text[len("Would reformat: ") :]
                self.finding("ruff", what, None, None, None, "would reformat")
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
        self.finding(None, match["path"], int(match["line"]), column, code, message)

    def summary(self) -> Summary | None:
        """None when no tool was recognised and nothing was counted."""
        if not self.counts and not self.tools:
            return None
        tool = (
            self._test_tool
            or self._command_tool
            or self._finding_tool
            or (self.tools[0] if self.tools else UNKNOWN_TOOL)
        )
        return Summary(
            tool=tool,
            passed=self.counts.get("passed"),
            failed=self.counts.get("failed"),
            skipped=self.counts.get("skipped"),
            xfailed=self.counts.get("xfailed"),
            xpassed=self.counts.get("xpassed"),
            errors=self.counts.get("errors"),
            findings=self.counts.get("findings"),
            tools=list(self.tools),
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
        self.enrichment.finish()

    def _line(self, raw: bytes) -> None:
        text = raw[:MAX_LINE_BYTES].decode("utf-8", "replace")
        self.enrichment.line(text)
        for listener in self.listeners:
            listener(text)
