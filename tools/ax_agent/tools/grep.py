"""grep: lines matching a regular expression, through ripgrep or a Python fallback.

Both backends give the same shape: ``path:line:text`` rows (or one path per
matching file), workspace-relative, in ripgrep's ``--sort path`` order, with
hidden entries below the searched folder skipped and symlinks not followed.
ripgrep also honours ``.ignore``/``.rgignore`` files, and ``.gitignore`` in a
git repository; the fallback does not read ignore files. The pattern dialect is
the backend's (Rust regex or Python ``re``); the common subset is the same.

The searched path is opened by walking it without following a link (a folder
swapped for one after the policy's decision is refused), and both backends
search what was opened, never the path again: ripgrep runs in the opened folder
(``/proc/self/fd/N`` as its working directory, searching ``.``) or reads the
opened file through ``/proc/self/fd/N``; the fallback walks from the opened
folder. Below it, neither follows a link.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from ax_policy import ToolFacts
from libcommon import jsonio

from .base import ModelTool, ToolContext, ToolResult
from .common import (
    FULL_OUTPUT_MAX_CHARS,
    Refused,
    ToolInput,
    clip_line,
    count,
    guarded,
    opened,
    resolve,
    shown,
)
from .walk import WalkState, glob_regex, open_entry, walk

GREP_MAX_ROWS = 200
# How many rows the saved full result holds when the shown one is cut.
GREP_COLLECT_MAX = 10_000
GREP_LINE_MAX_CHARS = 500
GREP_PATTERN_MAX_CHARS = 1_000
GREP_TIMEOUT_S = 30.0
# Files larger than this are not searched (ripgrep's --max-filesize, and the fallback's).
GREP_FILE_MAX_BYTES = 16 * 1024 * 1024
# The fallback skips a file with a NUL byte in its first bytes, as binary.
GREP_SNIFF_BYTES = 8_192
GREP_POLL_S = 0.05
RG = "rg"


class GrepInput(ToolInput):
    pattern: str = Field(
        min_length=1,
        max_length=GREP_PATTERN_MAX_CHARS,
        description="A regular expression, e.g. 'def \\w+_handler' or 'TODO|FIXME'.",
    )
    path: str = Field(
        default=".",
        min_length=1,
        description="The file or folder to search, relative to the workspace.",
    )
    glob: str = Field(
        default="",
        max_length=GREP_PATTERN_MAX_CHARS,
        description="Only search files matching this glob, e.g. '*.py' (a pattern without "
        "'/' matches file names at any depth). Empty: every file.",
    )
    ignore_case: bool = Field(default=False, description="Match case-insensitively.")
    files_only: bool = Field(
        default=False, description="List only the paths of matching files, not the lines."
    )


@dataclass(frozen=True)
class _Target:
    """What a search covers: the resolved path (for showing) and its open descriptor."""

    path: Path
    fd: int
    is_dir: bool

    @property
    def proc_path(self) -> str:
        # The opened file or folder itself, whatever its path now leads to.
        return f"/proc/self/fd/{self.fd}"


@dataclass
class Search:
    rows: list[str] = field(default_factory=list)
    seen_files: set[str] = field(default_factory=set)
    cut: bool = False
    stopped: str | None = None  # why the search ended early (timeout, abort, walk cap)

    def add(self, path: str, line: int, text: str, files_only: bool) -> bool:
        """Record one match; False once the collection is full."""
        if files_only:
            if path in self.seen_files:
                return True
            self.seen_files.add(path)
            row = path
        else:
            clipped = clip_line(text.rstrip("\r\n"), GREP_LINE_MAX_CHARS)
            row = f"{path}:{line}:{clipped}"
        if len(self.rows) >= GREP_COLLECT_MAX:
            self.cut = True
            return False
        self.rows.append(row)
        return True


@guarded
def run(request: GrepInput, ctx: ToolContext) -> ToolResult:
    root = resolve(request.path, ctx)
    where = shown(root, ctx)
    with opened(root, ctx) as fd:
        if fd is None:
            raise Refused(f"{where} does not exist")
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            raise Refused(f"{where} is not a file or a folder (a device, FIFO or socket)")
        target = _Target(root, fd, stat.S_ISDIR(mode))
        rg = ripgrep(ctx.environ)
        if rg is not None:
            search, backend = _ripgrep(rg, request, target, ctx), "ripgrep"
        else:
            search, backend = _fallback(request, target, ctx), "python"
    label = f"grep {request.pattern!r} in {where}"
    what = "file" if request.files_only else "matching line"
    stopped = f" (the search stopped early: {search.stopped})" if search.stopped else ""
    if not search.rows:
        return ToolResult(
            content=f"no match for {request.pattern!r} in {where}{stopped}",
            summary=f"{label}: no match [{backend}]",
        )
    summary = f"{label}: {count(len(search.rows), what)} [{backend}]"
    if len(search.rows) <= GREP_MAX_ROWS and not (search.cut or search.stopped):
        return ToolResult(content="\n".join(search.rows), summary=summary)
    total = f"{len(search.rows)}+" if search.cut or search.stopped else str(len(search.rows))
    shown_rows = min(len(search.rows), GREP_MAX_ROWS)
    note = (
        f"\n[showing {shown_rows} of {total} {what}s{stopped}; all of them: "
        f"recall_step(step={ctx.step}); or narrow the pattern, the path or the glob]"
    )
    return ToolResult(
        content="\n".join(search.rows[:GREP_MAX_ROWS]) + note,
        summary=summary + " (cut)",
        full_output="\n".join(search.rows)[:FULL_OUTPUT_MAX_CHARS],
    )


def ripgrep(environ: Mapping[str, str]) -> str | None:
    """The ripgrep executable on the PATH the call runs with, if there is one."""
    path = environ.get("PATH") if environ else os.environ.get("PATH")
    return shutil.which(RG, path=path)


# --- ripgrep ------------------------------------------------------------------------------


def _ripgrep(rg: str, request: GrepInput, target: _Target, ctx: ToolContext) -> Search:
    argv = [
        rg,
        "--json",
        "--no-config",
        # File errors (a permission denied) would fill stderr while stdout is read.
        "--no-messages",
        "--sort",
        "path",
        "--max-filesize",
        str(GREP_FILE_MAX_BYTES),
        "--regexp",
        request.pattern,
    ]
    if request.ignore_case:
        argv.append("--ignore-case")
    if request.files_only:
        argv += ["--max-count", "1"]
    if request.glob:
        argv += ["--glob", request.glob]
    # A folder is searched as the working directory (ripgrep walks it without following
    # links, and finds the ignore files above it from its real path); a file is read
    # through its descriptor, which the child keeps (pass_fds).
    argv += ["--", "." if target.is_dir else target.proc_path]
    search = Search()
    if ctx.abort.is_set():
        search.stopped = "aborted"
        return search
    env = {key: value for key, value in (ctx.environ or os.environ).items()}
    env.pop("RIPGREP_CONFIG_PATH", None)
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=target.proc_path if target.is_dir else None,
        pass_fds=(target.fd,),
        env=env,
    )
    assert process.stdout is not None and process.stderr is not None
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=(process, ctx.abort, done, search), daemon=True)
    watcher.start()
    try:
        for message in _messages(process.stdout):
            if message.get("type") != "match":
                continue
            data = message.get("data", {})
            path = _text(data.get("path"))
            if path is None:
                continue
            found = target.path / os.path.normpath(path) if target.is_dir else target.path
            text = _text(data.get("lines")) or ""
            if not search.add(
                shown(found, ctx), int(data.get("line_number") or 0), text, request.files_only
            ):
                break
    finally:
        done.set()
        if process.poll() is None:
            process.kill()
        stderr = process.stderr.read().decode("utf-8", "replace")
        process.wait()
        watcher.join()
    if process.returncode == 2 and not search.rows and not search.stopped:
        raise Refused(f"ripgrep refused the search: {stderr.strip() or 'exit status 2'}")
    return search


def _watch(
    process: subprocess.Popen[bytes],
    abort: threading.Event,
    done: threading.Event,
    search: Search,
) -> None:
    deadline = time.monotonic() + GREP_TIMEOUT_S
    while not done.wait(GREP_POLL_S):
        if abort.is_set():
            search.stopped = "aborted"
        elif time.monotonic() > deadline:
            search.stopped = f"timed out after {GREP_TIMEOUT_S:g}s"
        else:
            continue
        process.kill()
        return


def _messages(stream: Iterator[bytes]) -> Iterator[dict[str, Any]]:
    for line in stream:
        try:
            value = jsonio.loads(line)
        except jsonio.JSONDecodeError:
            continue
        if isinstance(value, dict):
            yield value


def _text(value: object) -> str | None:
    """ripgrep's ``{"text": ...}`` (UTF-8) or ``{"bytes": base64}`` (anything else)."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("text"), str):
        return str(value["text"])
    if isinstance(value.get("bytes"), str):
        return base64.b64decode(value["bytes"]).decode("utf-8", "replace")
    return None


# --- the Python fallback ------------------------------------------------------------------


def _fallback(request: GrepInput, target: _Target, ctx: ToolContext) -> Search:
    flags = re.IGNORECASE if request.ignore_case else 0
    try:
        regex = re.compile(request.pattern.encode("utf-8", "surrogateescape"), flags)
    except re.error as exc:
        raise Refused(f"the pattern is not a valid regular expression: {exc}") from None
    search = Search()
    if not target.is_dir:
        _search_file(target.path, target.fd, regex, request.files_only, search, ctx)
        return search
    deadline = time.monotonic() + GREP_TIMEOUT_S
    matcher = glob_regex(request.glob) if request.glob else None
    by_name = "/" not in request.glob.strip("/")
    for entry in walk(target.path, target.fd, WalkState()):
        if entry.is_dir or entry.is_link:
            continue
        if matcher is not None and not matcher.match(entry.path.name if by_name else entry.rel):
            continue
        if ctx.abort.is_set():
            search.stopped = "aborted"
            break
        if time.monotonic() > deadline:
            search.stopped = f"timed out after {GREP_TIMEOUT_S:g}s"
            break
        fd = open_entry(entry)
        if fd is None:
            continue
        try:
            more = _search_file(entry.path, fd, regex, request.files_only, search, ctx)
        finally:
            os.close(fd)
        if not more:
            break
    return search


def _search_file(
    path: Path,
    fd: int,
    regex: re.Pattern[bytes],
    files_only: bool,
    search: Search,
    ctx: ToolContext,
) -> bool:
    """Search the open file ``fd`` (shown as ``path``); False once the collection is full."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > GREP_FILE_MAX_BYTES:
            return True
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(GREP_FILE_MAX_BYTES + 1)
    except OSError:
        return True
    if b"\0" in data[:GREP_SNIFF_BYTES]:
        return True
    name = shown(path, ctx)
    for number, line in enumerate(data.splitlines(), start=1):
        if regex.search(line):
            if not search.add(name, number, line.decode("utf-8", "replace"), files_only):
                return False
            if files_only:
                return True
    return True


TOOL = ModelTool(
    name="grep",
    description=(
        "Search file contents for a regular expression (ripgrep when installed). Rows come "
        "as path:line:text, paths relative to the workspace, sorted by path; hidden files "
        "below the searched folder are skipped, and so are files ripgrep's ignore files "
        f"exclude. At most {GREP_MAX_ROWS} rows are shown, lines cut at "
        f"{GREP_LINE_MAX_CHARS} characters; use glob to limit the files searched."
    ),
    input_model=GrepInput,
    facts=ToolFacts(name="grep", reads=lambda request: [request.path]),
    run=run,
)
